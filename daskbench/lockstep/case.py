"""One case's rounds in a lockstep comparison so far (`CaseResult`), and the line each round says (`round_line`).

The engine (`daskbench.lockstep.engine`) appends a round's values, the calls its sides made and the cores other
work used meanwhile; the case's parts (each a pair of sessions), which of them ran on a busy machine, and its verdict
(`daskbench.judge.repeat`) are read from here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from daskbench.judge import repeat, sequential
from daskbench.judge.repeat import Judged
from daskbench.judge.stats import Decision
from daskbench.lockstep import turns
from daskbench.lockstep.cost import RoundCost
from daskbench.model import calibration_set_aside


@dataclass
class CaseResult:
    """One case's rounds so far (this part's and earlier parts'): the pairs of values of the question's
    metric, the round each later part began at (``starts``), why it stopped, its last verdict (``judged``:
    `daskbench.judge.repeat`), and what its rounds cost."""

    key: str
    name: str = ""  # what a person calls the case (its pytest name, as side A sent it)
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0  # wall time of its rounds, all parts
    cost: RoundCost = field(default_factory=RoundCost)
    starts: list[int] = field(default_factory=list)
    judged: Judged | None = None
    failed: bool = False  # a side could not measure it: no more rounds
    loops: int = 1  # the calls each side makes per measurement from its next round on (`daskbench.lockstep.loops`)
    calls: int = 1  # the calls each side made per measurement in its last round (fewer than asked: it cannot loop)
    timed: list[tuple[int, float]] = field(default_factory=list)  # per round: its calls and its seconds (both turns)
    others: list[float | None] = field(default_factory=list)  # per round: the cores other work used (its sides' mean)
    set_aside: int = 0  # rounds measured but not judged: its loops' calibration round (`model.calibration_set_aside`)

    @property
    def rounds(self) -> int:
        """Its rounds judged (a calibration round set aside is not one of them)."""
        return len(self.a)

    @property
    def measured(self) -> int:
        """Its rounds measured, a calibration round set aside included (the sessions count these)."""
        return len(self.a) + self.set_aside

    def set_aside_calibration(self) -> bool:
        """Set its first round aside when it was its loops' calibration (one call each side, its next round more:
        `daskbench.model.calibration_set_aside`), so that it is not judged; whether it did just now."""
        if self.set_aside or self.rounds != 2 or not calibration_set_aside([calls for calls, _ in self.timed]):
            return False
        for values in (self.a, self.b, self.others):
            del values[0]
        self.starts = [start - 1 for start in self.starts if start > 1]
        self.set_aside = 1
        return True

    @property
    def shown(self) -> str:
        return self.name or turns.shown_name(self.key)

    @property
    def decision(self) -> Decision | None:
        return self.judged.decision if self.judged is not None else None

    @property
    def decided(self) -> bool:
        """Whether its verdict is a decision (regressed, unchanged, improved)."""
        return self.decision is not None and sequential.is_decided(self.decision)

    @property
    def settled(self) -> bool:
        """Whether it needs no more rounds: decided, or its pairs of sessions disagreed."""
        return self.judged is not None and self.judged.settled

    @property
    def repeating(self) -> bool:
        """Whether it waits for (or is in) the repeat of a change verdict in a fresh pair of sessions."""
        return self.judged is not None and self.judged.repeating and not self.judged.settled

    @property
    def per_round(self) -> float:
        """The seconds one more round is expected to take: the mean of its rounds made at the calls it now asks
        (a first round of one call is cheaper than the looped ones after it), else of all its rounds."""
        same = [seconds for calls, seconds in self.timed if calls == self.loops]
        return sum(same) / len(same) if same else self.seconds / max(self.rounds, 1)

    @property
    def plan_rounds(self) -> int:
        """The rounds of its current sequential plan: the repeat's when repeating, else all."""
        return self.rounds - self.judged.first if self.repeating and self.judged is not None else self.rounds

    def parts(self) -> list[tuple[list[float], list[float]]]:
        """Its rounds part by part (each part one pair of sessions)."""
        return [(self.a[i:j], self.b[i:j]) for i, j in self._spans()]

    def busy_parts(self) -> list[bool]:
        """Per part of `parts`, whether the machine was busy with other work then (`daskbench.judge.repeat.busy`)."""
        return [repeat.busy(self.others[i:j]) for i, j in self._spans()]

    def _spans(self) -> list[tuple[int, int]]:
        edges = [0, *self.starts, self.rounds]
        return [(i, j) for i, j in itertools.pairwise(edges) if j > i]

    def carried(self) -> CaseResult:
        """A copy to carry into the next part (its reason to stop cleared, the part's first round noted)."""
        starts = [*self.starts, self.rounds] if self.rounds and self.rounds not in self.starts else list(self.starts)
        return replace(
            self,
            a=list(self.a),
            b=list(self.b),
            starts=starts,
            stopped="",
            cost=self.cost + RoundCost(),
            timed=list(self.timed),
            others=list(self.others),
        )


def round_line(result: CaseResult, decision: Decision) -> str:
    """``ab: <case> round 7: B/A 1.043 (0.98-1.11), 1m02s`` and, at the end, why it stopped; a round of several
    calls per measurement says so (``round 7 x8 calls``)."""
    shown = f"{decision.ratio:.3f}" if decision.ratio is not None else "-"
    interval = f" ({decision.ci_low:.2f}-{decision.ci_high:.2f})" if decision.ci_low and decision.ci_high else ""
    minutes, seconds = divmod(int(result.seconds), 60)
    judged, verdict = result.judged, str(decision.verdict)
    if judged is not None and judged.repeating and result.rounds == judged.first and judged.first_verdict:
        verdict = f"{judged.first_verdict} here"  # a first reading, not a verdict yet
    tail = f": {verdict}, {result.stopped}" if result.stopped else ""
    repeats = result.rounds - judged.first if judged is not None and judged.repeating else 0
    again = f" (repeat {repeats})" if repeats > 0 else ""
    again += f" x{result.calls} calls" if result.calls > 1 else ""
    head = f"ab: {result.shown[:60]} round {len(result.a)}{again}: B/A {shown}{interval}, {minutes}m{seconds:02d}s"
    return (head + tail)[:120]
