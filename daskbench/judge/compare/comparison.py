"""What a mode starts from and what it returns: the `Candidate` it judges, what that is judged `Against`,
and the `Comparison` assembled from the verdicts (`finish`), in the order a maintainer reads them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import matching
from daskbench.model import Measurement, Run
from daskbench.text import flatten
from daskbench.verdicts import Comparison, Verdict, versions_and_commits

#: Tie-break of equal effects: the verdicts a maintainer must act on first.
_ORDER = {
    kind: index
    for index, kind in enumerate(
        ("newly-failing", "regressed", "fixed", "improved", "inconclusive", "unchanged", "new", "missing")
    )
}


@dataclass(frozen=True)
class Candidate:
    """The run a comparison judges, its measurements (at least one), and the notes on it so far."""

    run: Run
    measurements: tuple[Measurement, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.measurements:
            raise DaskbenchError(f"run {self.run.run_id[:8]} has no measurements; nothing to compare")

    def noted(self, *notes: str) -> Candidate:
        """The same candidate with ``notes`` added."""
        return replace(self, notes=(*self.notes, *notes))


@dataclass(frozen=True)
class Against:
    """What the candidate is judged against: those ``runs``, named ``label``, and the runs whose versions,
    Dask config and host the comparison lists as differing from the candidate's (``diffed``)."""

    runs: tuple[Run, ...]
    label: str
    diffed: Sequence[Run] = ()


def finish(
    mode: Literal["ab", "history"],
    against: Against,
    cand: Run,
    verdicts: list[Verdict],
    notes: Sequence[str],
    cands: Sequence[Run] = (),
) -> Comparison:
    """The `Comparison`: the verdicts sorted (`effect_size` first) and what differs beside them; ``cands``: every
    run of the candidate side when it has several, ``cand`` (the one compared for versions) among them."""
    diffed = against.diffed
    return Comparison(
        mode=mode,
        baseline_runs=against.runs,
        candidate_run=cand,
        verdicts=tuple(sorted(verdicts, key=_sort_key)),
        version_diff=matching.diff([versions_and_commits(run) for run in diffed], versions_and_commits(cand)),
        config_diff=matching.diff([flatten(run.dask_config) for run in diffed], flatten(cand.dask_config)),
        host_diff=matching.diff([run.host for run in diffed], cand.host),
        baseline_label=against.label,
        notes=tuple(notes),
        candidate_runs=tuple(cands) if len(cands) > 1 else (),
    )


#: Decimals of |log ratio| that order verdicts: a metric derived from another (cost is runtime times a price,
#: `daskbench.metrics.cost`) ties with it, and the last bits of a float must not decide which one a comment
#: names first.
EFFECT_DECIMALS = 9


def effect_size(v: Verdict) -> float:
    """How big a change is, for sorting: outcome changes first, then |log ratio| (equal ones in the catalog's
    order of metrics: runtime before the cost derived from it)."""
    if v.verdict in ("newly-failing", "fixed"):
        return math.inf
    if v.ratio is None or not v.ratio > 0:
        return -1.0
    return round(abs(math.log(v.ratio)), EFFECT_DECIMALS)


def _sort_key(v: Verdict) -> tuple[float, int, str, str, int]:
    order = catalog.names()
    return (-effect_size(v), _ORDER[v.verdict], v.workload, v.fingerprint, order.index(v.metric))
