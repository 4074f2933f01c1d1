"""The trade-off summary a report leads with: per workload, what each worker-saturation costs.

The suite exists to show the worker-saturation trade-off (queueing at a low saturation
keeps memory down; ``inf`` may run faster but hold far more), so the first thing on the
page states it as figures: per cluster size, each saturation's peak cluster memory,
per-worker peak, runtime and cost, and each as a ratio to a reference setting (``inf``,
else Dask's default 1.1, else the first one), with the best value per column marked.
Medians over the candidate's passing repeats only: a wrong result or a failure has none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from daskbench import catalog
from daskbench.judge import stats
from daskbench.report.content import CaseView, Section, metric_values
from daskbench.text import saturation_text

#: The columns of the summary, in order.
TRADEOFF_METRICS = ("peak_memory_bytes", "peak_worker_memory_bytes", "runtime_s", "cost_usd")
#: Reference saturations, by preference: no queueing at all, then Dask's default.
REFERENCES = (math.inf, 1.1)


@dataclass(frozen=True)
class Cell:
    """One metric of one setting: its median, and its ratio to the reference setting's."""

    metric: str
    value: float | None
    ratio: float | None
    best: bool

    @property
    def text(self) -> str:
        return catalog.get(self.metric).format(self.value)

    @property
    def ratio_text(self) -> str:
        return "" if self.ratio is None else f"{self.ratio:.2f}x"


@dataclass(frozen=True)
class Row:
    """One setting (a worker-saturation at one cluster size)."""

    fingerprint: str
    saturation: float
    reference: bool
    outcome: str  # "passed" or the first failed repeat's outcome (e.g. "wrong-result")
    cells: tuple[Cell, ...]

    @property
    def label(self) -> str:
        return f"sat {saturation_text(self.saturation)}"


@dataclass(frozen=True)
class Table:
    """The settings of one workload at one cluster size."""

    n_workers: int
    reference: str  # e.g. "sat inf"
    rows: tuple[Row, ...]


def tradeoff_tables(section: Section) -> list[Table]:
    """One table per cluster size the candidate ran this workload at."""
    tables = []
    for n in section.cluster_sizes:
        views = sorted((v for v in section.cases if v.n_workers == n and v.candidate), key=lambda v: v.saturation)
        if views:
            tables.append(_table(n, views))
    return tables


def _table(n_workers: int, views: Sequence[CaseView]) -> Table:
    medians = {v.fingerprint: {m: _median(v, m) for m in TRADEOFF_METRICS} for v in views}
    reference = _reference(views, medians)
    best = {m: min([x for d in medians.values() if (x := d[m]) is not None], default=None) for m in TRADEOFF_METRICS}
    rows = []
    for v in views:
        own, ref = medians[v.fingerprint], medians[reference.fingerprint]
        cells = tuple(
            Cell(m, own[m], _ratio(own[m], ref[m]), own[m] is not None and own[m] == best[m] and len(views) > 1)
            for m in TRADEOFF_METRICS
        )
        failed = next((m.outcome for m in v.candidate if not m.ok), "passed")
        rows.append(Row(v.fingerprint, v.saturation, v is reference, failed, cells))
    return Table(n_workers, f"sat {saturation_text(reference.saturation)}", tuple(rows))


def _median(view: CaseView, metric: str) -> float | None:
    values = metric_values(view.candidate, metric)
    return stats.median(values) if values else None


def _reference(views: Sequence[CaseView], medians: dict[str, dict[str, float | None]]) -> CaseView:
    """``inf``, else 1.1, else the first setting that has a runtime."""
    measured = [v for v in views if medians[v.fingerprint]["runtime_s"] is not None] or list(views)
    for wanted in REFERENCES:
        found = next((v for v in measured if v.saturation == wanted), None)
        if found is not None:
            return found
    return measured[0]


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference
