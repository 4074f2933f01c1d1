"""What the report shows, gathered from the store into plain records (no HTML, no Bokeh).

A report has one section per workload and parameter set (the same computation); a
section holds one `CaseView` per cluster spec (worker-saturation x cluster size), with
the candidate's and the baseline's measurements, the verdict per metric, and one
`RunPoint` per earlier run for the history charts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import confirmed, stats
from daskbench.judge.bisected import Culprit, culprits
from daskbench.judge.compare import OUTCOME_METHOD, compare_group
from daskbench.judge.matching import same_host
from daskbench.model import Case, Measurement, Run, group_measurements
from daskbench.store import Store
from daskbench.text import compact_bytes, config_key_short, plural, saturation_text, slots_count
from daskbench.verdicts import Comparison, Verdict

#: How many runs of each case the history charts show when the comparison does not say.
DEFAULT_HISTORY_WINDOW = 30
#: The baseline band is the median widened by this many (normal-scaled) MADs of the logs, or
#: by the metric's floor, whichever is wider: inside the band, a change does not count.
BAND_MADS = 3.0
#: Key of a case-level verdict (new, missing, newly failing, fixed) in `CaseView.verdicts`.
CASE_VERDICT = "case"
#: The ``Verdict.method`` daskbench.judge.compare gives verdicts about a whole case rather than a metric.


@dataclass(frozen=True)
class RunPoint:
    """One run of one case in a history chart: medians over its passing repeats."""

    run_id: str
    label: str
    started_at: str
    role: str  # "history", "baseline" or "candidate"
    outcome: str  # "passed", or the first failed repeat's outcome
    message: str
    values: Mapping[str, float | None]


@dataclass(frozen=True)
class Band:
    """Where a metric's value counts as unchanged: ``low <= value <= high`` around ``median``."""

    low: float
    median: float
    high: float


@dataclass(frozen=True)
class CaseView:
    """One cluster spec of a section: measurements on both sides, verdicts and history."""

    fingerprint: str
    case: Case
    candidate: tuple[Measurement, ...]
    baseline: tuple[Measurement, ...]
    verdicts: Mapping[str, Verdict]  # metric -> verdict; CASE_VERDICT -> an outcome verdict
    history: tuple[RunPoint, ...] = ()
    bands: Mapping[str, Band] = field(default_factory=dict)

    @property
    def saturation(self) -> float:
        return self.case.cluster.worker_saturation

    @property
    def n_workers(self) -> int:
        return self.case.cluster.n_workers

    @property
    def label(self) -> str:
        spec = self.case.cluster
        parts = [plural(self.n_workers, "worker")]
        parts += [f"{spec.threads_per_worker} threads"] if spec.threads_per_worker > 1 else []
        parts += [compact_bytes(spec.memory_per_worker)] if spec.memory_per_worker else []
        parts.append(f"sat {saturation_text(self.saturation)} ({slots_count(spec.task_slots)})")
        parts += [f"{config_key_short(k)}={v}" for k, v in sorted(spec.config.items())]
        parts += [f"x{self.calls} calls"] if self.calls > 1 else []
        return " · ".join(parts)

    @property
    def calls(self) -> int:
        """The most calls one of its measurements made (`Measurement.loops`; its figures are per call)."""
        return max((m.loops for m in (*self.candidate, *self.baseline)), default=1)


@dataclass(frozen=True)
class Section:
    """One workload with one parameter set, across cluster specs."""

    slug: str
    workload: str
    params: Mapping[str, object]
    cases: tuple[CaseView, ...]

    @property
    def cluster_sizes(self) -> tuple[int, ...]:
        return tuple(sorted({view.n_workers for view in self.cases}))


@dataclass(frozen=True)
class ConfirmationView:
    """The report's view of a side-by-side confirmation of the candidate (``daskbench confirm``): its lockstep
    A/B group, the good run whose environment was side A, the two version sets and the group's verdicts
    (what an alert says of how it was confirmed is `daskbench.alerts.Confirmation`)."""

    group: str
    good: str
    versions: str
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True)
class ReportData:
    comparison: Comparison
    sections: tuple[Section, ...]
    saturations: tuple[float, ...]  # every value in the report, sorted: one colour each
    history_window: int
    confirmations: tuple[ConfirmationView, ...] = ()
    culprits: tuple[Culprit, ...] = ()


#: Verdicts that say nothing moved (or nothing could be told): a section holding only these is drawn last.
QUIET_VERDICTS = ("unchanged", "inconclusive")


def drawn_first(sections: Sequence[Section], limit: int) -> tuple[Section, ...]:
    """The sections whose charts a page draws when it cannot draw them all: those with a verdict that says
    something moved (regressed, newly failing, improved, new, missing, fixed) first, then the rest, each in its
    order, while their cases add up to at most ``limit`` (the first always). 10,000 cases' charts took minutes, a
    gigabyte and a 163 MiB page (issue 45); every case keeps its rows in the tables."""
    moved = [any(v.verdict not in QUIET_VERDICTS for c in s.cases for v in c.verdicts.values()) for s in sections]
    ordered = [s for s, m in zip(sections, moved, strict=True) if m] + [
        s for s, m in zip(sections, moved, strict=True) if not m
    ]
    chosen: list[Section] = []
    count = 0
    for section in ordered:
        if chosen and count + len(section.cases) > limit:
            break
        chosen.append(section)
        count += len(section.cases)
    return tuple(chosen)


def gather(store: Store, comparison: Comparison, *, history_window: int | None = None) -> ReportData:
    """Everything the report draws for ``comparison``, read from ``store``."""
    window = history_window or DEFAULT_HISTORY_WINDOW
    candidate = group_measurements(store.measurements([run.run_id for run in comparison.candidates]), "fingerprint")
    fingerprints = sorted(candidate)  # sections only for what the candidate ran (missing cases: the table)
    cases = store.cases(fingerprints)
    runs, per_case = _recent_measurements(store, comparison, window, fingerprints)
    roles = _roles(comparison)
    baseline = _baseline_measurements(store, comparison, per_case, roles)
    verdicts = _verdicts_by_case(comparison.verdicts)
    views = [
        _case_view(
            fp,
            cases[fp],
            candidate.get(fp, []),
            baseline.get(fp, []),
            verdicts.get(fp, {}),
            _history(per_case.get(fp, {}), runs, roles),
        )
        for fp in fingerprints
        if fp in cases
    ]
    saturations = tuple(sorted({view.saturation for view in views}))
    candidate_id = comparison.candidate_run.run_id
    return ReportData(
        comparison,
        _sections(views),
        saturations,
        window,
        confirmations(store, candidate_id),
        culprits(store, candidate_id),
    )


def confirmations(store: Store, candidate: str) -> tuple[ConfirmationView, ...]:
    """The side-by-side confirmations of run ``candidate``, oldest first (a group with no complete round
    is left out)."""
    found = []
    for stored in confirmed.of_candidate(store, candidate):
        try:
            ab = compare_group(store, stored.group, floors=stored.floors)
        except (DaskbenchError, ValueError):
            continue
        found.append(ConfirmationView(stored.group, stored.good, stored.versions(), ab.verdicts))
    return tuple(found)


def _baseline_measurements(
    store: Store,
    comparison: Comparison,
    per_case: Mapping[str, Mapping[str, list[Measurement]]],
    roles: Mapping[str, str],
) -> dict[str, list[Measurement]]:
    """A/B: the baseline runs' measurements; history: each case's newest earlier run stands for it."""
    if comparison.mode == "ab":
        return group_measurements(store.measurements([run.run_id for run in comparison.baseline_runs]), "fingerprint")
    return {fp: _latest_baseline(per_run, roles) for fp, per_run in per_case.items()}


def _history(
    per_run: Mapping[str, list[Measurement]], runs: Mapping[str, Run], roles: Mapping[str, str]
) -> tuple[RunPoint, ...]:
    return tuple(_run_point(runs[run_id], ms, roles.get(run_id, "history")) for run_id, ms in per_run.items())


def _case_view(
    fp: str,
    case: Case,
    candidate: list[Measurement],
    baseline: list[Measurement],
    verdicts: Mapping[str, Verdict],
    history: tuple[RunPoint, ...],
) -> CaseView:
    bands = {}
    for metric in catalog.compared():
        band = _band(_baseline_values(metric, verdicts, baseline, history), _floor(verdicts.get(metric), metric))
        if band is not None:
            bands[metric] = band
    return CaseView(fp, case, tuple(candidate), tuple(baseline), verdicts, history, bands)


def _baseline_values(
    metric: str, verdicts: Mapping[str, Verdict], baseline: list[Measurement], history: tuple[RunPoint, ...]
) -> list[float]:
    """The values the verdict judged against; without one, the baseline side's own values."""
    verdict = verdicts.get(metric)
    if verdict is not None and verdict.baseline_values:
        return list(verdict.baseline_values)
    if baseline:
        return metric_values(baseline, metric)
    return [v for p in history if p.role == "baseline" and (v := p.values.get(metric)) is not None]


def _floor(verdict: Verdict | None, metric: str) -> float:
    return verdict.floor if verdict is not None and verdict.floor else stats.default_floor(metric)


def _band(values: Sequence[float], floor: float) -> Band | None:
    """Median of ``values``, widened (in log space) by max(BAND_MADS x MAD, log floor)."""
    positive = [v for v in values if v > 0]
    if not positive:
        return None
    logs = [math.log(v) for v in positive]
    half = max(BAND_MADS * stats.mad_scale(logs), math.log(floor))
    middle = stats.median(logs)
    return Band(math.exp(middle - half), math.exp(middle), math.exp(middle + half))


def metric_values(measurements: Iterable[Measurement], metric: str) -> list[float]:
    """The metric's values over the passing repeats."""
    return [float(value) for m in measurements if m.ok and (value := getattr(m, metric)) is not None]


def _verdicts_by_case(verdicts: Iterable[Verdict]) -> dict[str, dict[str, Verdict]]:
    found: dict[str, dict[str, Verdict]] = {}
    for v in verdicts:
        key = CASE_VERDICT if v.method == OUTCOME_METHOD else v.metric
        found.setdefault(v.fingerprint, {})[key] = v
    return found


# -- history ----------------------------------------------------------------------------


def _recent_measurements(
    store: Store, comparison: Comparison, window: int, fingerprints: Sequence[str]
) -> tuple[dict[str, Run], dict[str, dict[str, list[Measurement]]]]:
    """Runs up to the candidate from like hosts, and per case of ``fingerprints`` its last ``window`` of them,
    oldest first. The runs are chosen newest first from their outcomes alone (`Store.outcomes`, a batch of
    runs at a time, at most three windows back), then only the chosen measurements are decoded: the cost
    follows the window and the cases, not the history's length."""
    cand = comparison.candidate_run
    recent = [run for run in store.runs() if run.started_at <= cand.started_at and same_host(run, cand)]
    ordered = [cand, *(run for run in recent if run.run_id != cand.run_id)][: window * 3 + 1]  # newest first
    runs = {run.run_id: run for run in ordered}
    chosen: dict[str, list[str]] = {fp: [] for fp in fingerprints}  # newest first
    ids: list[int] = []
    wanted, start, batch = set(fingerprints), 0, window + 1
    while wanted and start < len(ordered):
        run_ids = [run.run_id for run in ordered[start : start + batch]]
        start, batch = start + batch, 2 * batch
        found: dict[tuple[str, str], list[int]] = {}
        for row in store.outcomes(run_ids, wanted):
            found.setdefault((row.fingerprint, row.run_id), []).append(row.id)
        for run_id in run_ids:
            for fp in wanted:
                if (fp, run_id) in found and len(chosen[fp]) < window:
                    chosen[fp].append(run_id)
                    ids += found[(fp, run_id)]
        wanted = {fp for fp in wanted if len(chosen[fp]) < window}
    per_case: dict[str, dict[str, list[Measurement]]] = {
        fp: {run_id: [] for run_id in reversed(chosen[fp])} for fp in chosen
    }
    for m in store.measurements(ids=ids):
        per_case[m.fingerprint][m.run_id].append(m)
    return runs, {fp: per_run for fp, per_run in per_case.items() if per_run}


def _roles(comparison: Comparison) -> dict[str, str]:
    roles = {run.run_id: "baseline" for run in comparison.baseline_runs}
    return roles | {run.run_id: "candidate" for run in comparison.candidates}


def _latest_baseline(per_run: Mapping[str, list[Measurement]], roles: Mapping[str, str]) -> list[Measurement]:
    found = [ms for run_id, ms in per_run.items() if roles.get(run_id) == "baseline"]
    return found[-1] if found else []


def _run_point(run: Run, measurements: list[Measurement], role: str) -> RunPoint:
    failed = [m for m in measurements if not m.ok]
    values = {metric: _median_or_none(metric_values(measurements, metric)) for metric in catalog.compared()}
    return RunPoint(
        run_id=run.run_id,
        label=run.label,
        started_at=run.started_at,
        role=role,
        outcome=failed[0].outcome if failed else "passed",
        message=failed[0].message if failed else "",
        values=values,
    )


def _median_or_none(values: Sequence[float]) -> float | None:
    return stats.median(values) if values else None


# -- sections ---------------------------------------------------------------------------


def _sections(views: Iterable[CaseView]) -> tuple[Section, ...]:
    grouped: dict[str, list[CaseView]] = {}
    for view in views:
        key = json.dumps([view.case.workload, dict(view.case.params)], sort_keys=True)
        grouped.setdefault(key, []).append(view)
    sections = []
    for index, (key, members) in enumerate(sorted(grouped.items())):
        workload, params = json.loads(key)
        ordered = tuple(sorted(members, key=lambda v: (v.n_workers, v.saturation, v.fingerprint)))
        sections.append(Section(_slug(workload, index), workload, params, ordered))
    return tuple(sections)


def _slug(workload: str, index: int) -> str:
    """An HTML id from a workload name: letters, digits and dashes only, unique by index."""
    return f"wl-{index}-" + (re.sub(r"[^a-z0-9]+", "-", workload.lower()).strip("-") or "workload")
