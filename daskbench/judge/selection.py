"""Which runs a comparison judges, and by which rules: one value built once from flags or settings.

``daskbench compare``, ``report``, ``alert``, ``publish`` and ``pytest --compare`` each build a
`Selection` and hand it to `daskbench.judge.compare.compare`, the one place that dispatches
to a mode:

- **A/B group** (``ab_group``): an interleaved group from ``daskbench ab``, by its rounds;
- **history** (``history``): each case of the candidate against its last N good runs;
- **baseline** (``baseline``, or neither: the baseline named ``main`` if there is one, else
  history): the candidate's repeats against the baseline run(s).

The checks that mix modes are here, once; a new verdict rule is a field here and a branch in
`compare`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from daskbench.errors import DaskbenchError
from daskbench.judge import stats

#: The longest run id, baseline name or A/B group name a selection takes (run ids are 36 characters).
MAX_NAME = 200


@dataclass(frozen=True)
class Selection:
    """Which runs are compared how. Checks itself: a mix of modes is one `DaskbenchError` line."""

    candidate: str | None = None  # run id or prefix; None: the newest finished run
    baseline: str | None = None  # baseline name or run id; None: ``main``, else history
    history: int | None = None  # judge each case against its last N good runs
    ab_group: str | None = None  # judge an interleaved A/B group by its rounds
    floors: Mapping[str, float] = field(default_factory=dict)  # metric or workload:metric -> floor
    allow_mixed: bool = False  # pair runs of different hosts or cluster specs
    include_worker_loss: bool = False  # judge a measurement that lost a worker as the workload's failure
    z_threshold: float = stats.Z_THRESHOLD
    min_history: int = stats.MIN_HISTORY

    def __post_init__(self) -> None:
        if self.ab_group is not None and (self.candidate or self.baseline or self.history):
            raise DaskbenchError(
                "--group judges an A/B group by its own rounds; give it without --candidate, --baseline or --history"
            )
        if self.baseline is not None and self.history is not None:
            raise DaskbenchError("give either --baseline or --history, not both")
        if self.history is not None and self.history < 1:
            raise DaskbenchError(f"--history needs a number of runs >= 1, got {self.history}")
        for flag, value in (("--candidate", self.candidate), ("--baseline", self.baseline), ("--group", self.ab_group)):
            if value is not None and len(value) > MAX_NAME:
                raise DaskbenchError(
                    f"{flag} {value[:12]!r}... is {len(value)} characters long; run ids and names "
                    f"have at most {MAX_NAME} (see: daskbench runs)"
                )

    @property
    def mode(self) -> str:
        """``ab``, ``history``, or ``baseline`` (which may still fall back to history: see `compare`)."""
        return "ab" if self.ab_group is not None else "history" if self.history is not None else "baseline"

    def with_candidate(self, candidate: str | None) -> Selection:
        """The same rules for another candidate run (``alert --confirm`` judges a second run)."""
        return replace(self, candidate=candidate)
