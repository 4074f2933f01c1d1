"""The report's text parts as plain rows: runs side by side, differences, the verdict table.

Everything here is a string or a number for the template; the template escapes every
string (Jinja2 autoescape), so nothing here needs to.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from daskbench import catalog
from daskbench.judge import stats
from daskbench.judge.compare import OUTCOME_METHOD, effect_size
from daskbench.judge.format import format_value, format_verdict, outside_line, outside_selection, slots_suffix
from daskbench.model import Run
from daskbench.report.content import ReportData, Section
from daskbench.report.style import percent
from daskbench.text import compact_bytes, config_key_short, format_bytes, plural, saturation_text
from daskbench.verdicts import VERDICTS, Comparison, Verdict

#: Versions always shown in the runs table; others only when they differ (all are under "all versions").
KEY_PACKAGES = ("dask", "distributed", "python")
#: Interval strips in the verdict table span ratios 1/CI_SPAN .. CI_SPAN on a log scale.
CI_SPAN = 2.0
VERDICT_LABELS = {kind: kind.replace("-", " ") for kind in VERDICTS}


@dataclass(frozen=True)
class Strip:
    """Positions (percent of the strip width) of a ratio, its interval and the floor band."""

    point: float
    low: float
    high: float
    floor_low: float
    floor_high: float


@dataclass(frozen=True)
class Row:
    """One line of the verdict table."""

    metric: str
    verdict: str
    workload: str
    section: str
    params: str
    cluster: str
    change: str
    phrase: str
    baseline: str
    candidate: str
    note: str
    effect: float
    strip: Strip | None
    case_level: bool
    note_id: int = 0  # 1-based into `table_notes` of this metric; 0 when the row has no note

    @property
    def verdict_label(self) -> str:
        return VERDICT_LABELS[self.verdict]

    @property
    def effect_attr(self) -> str:
        return "inf" if math.isinf(self.effect) else f"{self.effect:.6f}"


def params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in sorted(params.items())) or "-"


def cluster_text(cluster: Mapping[str, Any]) -> str:
    """``2w x 1t · 4GiB · sat 1.1 (2 slots) · memory.target=0.6``: what a verdict row ran on."""
    workers = cluster.get("n_workers", "?")
    threads = cluster.get("threads_per_worker", "?")
    memory = cluster.get("memory_per_worker")
    text = f"{workers}w × {threads}t" + (f" · {compact_bytes(memory)}" if memory else "")
    text += f" · sat {cluster.get('worker_saturation', '?')}{slots_suffix(cluster)}"
    return text + "".join(
        f" · {config_key_short(k)}={v}" for k, v in sorted((cluster.get("scheduler_config") or {}).items())
    )


def verdict_rows(data: ReportData) -> dict[str, list[Row]]:
    """Per metric, its rows in the comparison's order (biggest effect first).

    A case-level row (new, missing, newly failing, fixed, failing on both sides) is about
    the whole case, so it appears under every metric.
    """
    slugs = {view.fingerprint: section.slug for section in data.sections for view in section.cases}
    rows: dict[str, list[Row]] = {metric: [] for metric in catalog.compared()}
    shown, _ = outside_selection(data.comparison)  # unselected cases: one line above the table
    for v in shown:
        case_level = v.method == OUTCOME_METHOD
        for metric in catalog.compared() if case_level else (v.metric,):
            rows[metric].append(_row(v, metric, slugs.get(v.fingerprint, ""), case_level))
    return {metric: _numbered_notes(found) for metric, found in rows.items()}


#: The unchanged and inconclusive rows a metric's table shows at most: a report of 10,000 cases would otherwise
#: hold 60,000 rows, most of them saying nothing moved (issue 45); every verdict stays in the page's JSON.
QUIET_ROWS = 1000


def capped(rows: Mapping[str, list[Row]], limit: int = QUIET_ROWS) -> tuple[dict[str, list[Row]], dict[str, int]]:
    """Per metric, every row whose verdict says something moved and its first ``limit`` unchanged or inconclusive
    ones (the table's order kept); and per metric how many of those were left out."""
    kept: dict[str, list[Row]] = {}
    left: dict[str, int] = {}
    for metric, found in rows.items():
        quiet = 0
        kept[metric] = []
        for row in found:
            quiet += row.verdict in ("unchanged", "inconclusive")
            if quiet <= limit or row.verdict not in ("unchanged", "inconclusive"):
                kept[metric].append(row)
        left[metric] = len(found) - len(kept[metric])
    return kept, left


def _numbered_notes(rows: list[Row]) -> list[Row]:
    """Each row's note as a number into `table_notes`: a note shared by 12 rows is printed once."""
    notes = table_notes(rows)
    return [replace(row, note_id=notes.index(row.note) + 1) if row.note else row for row in rows]


def confirmation_lines(verdicts: Sequence[Verdict]) -> list[tuple[str, str, str]]:
    """A side-by-side confirmation's verdicts as (verdict, case and metric, effect and evidence): the runtime
    ones and every regression, the per-round ratios in the evidence."""
    shown = [v for v in verdicts if v.metric == "runtime_s" or v.is_regression]
    return [
        (
            v.verdict,
            f"{v.workload} {params_text(v.params)} {catalog.get(v.metric).title}",
            format_verdict(v) + (f"; {v.note}" if v.note else ""),
        )
        for v in shown
    ]


def confirmation_summary(verdicts: Sequence[Verdict]) -> str:
    """``1 regressed, 1 unchanged`` of a confirmation's runtime verdicts."""
    counts: dict[str, int] = {}
    for v in verdicts:
        if v.metric == "runtime_s":
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
    return ", ".join(f"{n} {VERDICT_LABELS[kind]}" for kind, n in sorted(counts.items())) or "no runtime verdict"


def outside_note(data: ReportData) -> str:
    """One line for the cases a ``-k``/``-m`` run never selected (empty when none)."""
    _, outside = outside_selection(data.comparison)
    return outside_line(data.comparison.candidate_run, outside) if outside else ""


def table_notes(rows: Sequence[Row]) -> list[str]:
    """The distinct notes of these rows, in order of first use."""
    return list(dict.fromkeys(row.note for row in rows if row.note))


def _row(v: Verdict, metric: str, slug: str, case_level: bool) -> Row:
    change = ""
    if not case_level and (pct := percent(v.ratio)) is not None:
        change = f"{pct:+.1f}%"
    own = metric == v.metric  # a case-level row carries runtime values; under other metrics it shows none
    return Row(
        metric=metric,
        verdict=v.verdict,
        workload=v.workload,
        section=slug,
        params=params_text(v.params),
        cluster=cluster_text(v.cluster),
        change=change,
        phrase=format_verdict(v),
        baseline=_summary(v.metric, v.baseline_values) if own else "-",
        candidate=_summary(v.metric, v.candidate_values) if own else "-",
        note="" if case_level else v.note,
        effect=effect_size(v),
        strip=None if case_level else _strip(v),
        case_level=case_level,
    )


def _summary(metric: str, values: Sequence[float]) -> str:
    if not values:
        return "-"
    text = format_value(metric, stats.median(values))
    return f"{text} (n={len(values)})" if len(values) > 1 else text


def _strip(v: Verdict) -> Strip | None:
    if v.ratio is None or not v.ratio > 0:
        return None
    floor = v.floor or stats.default_floor(v.metric)
    low = v.ci_low if v.ci_low and v.ci_low > 0 else v.ratio
    high = v.ci_high if v.ci_high and v.ci_high > 0 else v.ratio
    return Strip(*(_position(r) for r in (v.ratio, low, high, 1.0 / floor, floor)))


def _position(ratio: float) -> float:
    """Where ``ratio`` sits on a log strip from 1/CI_SPAN (0) to CI_SPAN (100), clipped."""
    fraction = (math.log(ratio) + math.log(CI_SPAN)) / (2 * math.log(CI_SPAN))
    return round(min(max(fraction, 0.0), 1.0) * 100.0, 2)


def summary_counts(rows: Mapping[str, list[Row]]) -> dict[str, list[tuple[str, int]]]:
    """Per metric, (verdict, count) in the order of `VERDICTS`, zero counts left out."""
    found = {}
    for metric, metric_rows in rows.items():
        counts = {kind: sum(row.verdict == kind for row in metric_rows) for kind in VERDICTS}
        found[metric] = [(kind, n) for kind, n in counts.items() if n]
    return found


# -- runs side by side ------------------------------------------------------------------


@dataclass(frozen=True)
class RunColumn:
    """One side of the comparison, as the runs table shows it."""

    title: str
    label: str
    run_ids: str
    started: str
    git_sha: str
    ci_url: str | None
    ci_text: str
    versions: Mapping[str, str]
    host: str
    cluster: str


def run_columns(data: ReportData) -> list[RunColumn]:
    c = data.comparison
    baseline = _newest(c.baseline_runs)
    columns = []
    if baseline is not None:
        title = f"Baseline: {c.baseline_label}" if c.baseline_label else "Baseline"
        columns.append(_column(title, baseline, c.baseline_runs, _sections_cluster(data.sections, "baseline")))
    newest = _newest(c.candidates) or c.candidate_run
    columns.append(_column("Candidate", newest, c.candidates, _sections_cluster(data.sections, "candidate")))
    return columns


def _newest(runs: Sequence[Run]) -> Run | None:
    return max(runs, key=lambda run: run.started_at, default=None)


def _column(title: str, run: Run, runs: Sequence[Run], cluster: str) -> RunColumn:
    ids = run.run_id if len(runs) == 1 else f"{len(runs)} runs, newest {run.run_id}"
    first = min(r.started_at for r in runs)
    started = when_text(run.started_at) if len(runs) == 1 else f"{when_text(first)} … {when_text(run.started_at)}"
    return RunColumn(
        title=title,
        label=run.label,
        run_ids=ids,
        started=started,
        git_sha=run.git_sha or "-",
        ci_url=run.ci_url if _is_web_url(run.ci_url) else None,
        ci_text=run.ci_url or "-",
        versions={str(k): str(v) for k, v in sorted(run.versions.items())},
        host=_host_text(run.host),
        cluster=cluster,
    )


def when_text(started_at: str) -> str:
    """``2025-06-13T10:15:00+00:00`` -> ``2025-06-13 10:15 UTC``; unparseable text is kept as is."""
    try:
        when = datetime.fromisoformat(started_at)
    except ValueError:
        return started_at
    zone = "" if when.tzinfo is None else " UTC" if when.utcoffset() == timedelta(0) else when.strftime(" %z")
    return when.strftime("%Y-%m-%d %H:%M") + zone


def _is_web_url(url: str | None) -> bool:
    """Only http(s) links become clickable: a ``javascript:`` URL from the store stays text."""
    return bool(url) and urlparse(url or "").scheme in ("http", "https")


def _host_text(host: Mapping[str, Any]) -> str:
    memory = host.get("memory_bytes")
    parts = [str(host.get("cpu_model", "?")), f"{host.get('cores', '?')} cores"]
    if isinstance(memory, (int, float)):
        parts.append(format_bytes(memory))
    return ", ".join(parts)


def _sections_cluster(sections: Iterable[Section], side: str) -> str:
    specs = [
        view.case.cluster
        for s in sections
        for view in s.cases
        if (view.candidate if side == "candidate" else view.baseline)
    ]
    if not specs:
        return "-"
    backends = ", ".join(sorted({spec.backend for spec in specs}))
    workers = "/".join(str(n) for n in sorted({spec.n_workers for spec in specs}))
    threads = "/".join(str(n) for n in sorted({spec.threads_per_worker for spec in specs}))
    memory = "/".join(sorted({format_bytes(spec.memory_per_worker, "no limit") for spec in specs}))
    saturations = ", ".join(saturation_text(s) for s in sorted({spec.worker_saturation for spec in specs}))
    return f"{backends}: {workers} workers × {threads} threads, {memory} per worker; worker-saturation {saturations}"


def key_versions(columns: Sequence[RunColumn]) -> list[tuple[str, list[str]]]:
    """(package, version per column): the key packages, then any other package that differs."""
    differing = [row for row in all_versions(columns) if len(set(row[1])) > 1 and row[0] not in KEY_PACKAGES]
    key = [(name, [column.versions.get(name, "-") for column in columns]) for name in KEY_PACKAGES]
    return [row for row in key if any(value != "-" for value in row[1])] + differing


def all_versions(columns: Sequence[RunColumn]) -> list[tuple[str, list[str]]]:
    names = sorted({name for column in columns for name in column.versions})
    return [(name, [column.versions.get(name, "-") for column in columns]) for name in names]


def headline(rows: Mapping[str, list[Row]]) -> list[str]:
    """What got worse, e.g. ``["1 case newly failing", "runtime: 6 regressed"]``."""
    first = next(iter(rows.values()), [])
    failing = sum(row.case_level and row.verdict == "newly-failing" for row in first)
    found = [f"{plural(failing, 'case')} newly failing"] if failing else []
    for metric, title in metric_titles():
        regressed = sum(not row.case_level and row.verdict == "regressed" for row in rows.get(metric, []))
        if regressed:
            found.append(f"{title.lower()}: {regressed} regressed")
    return found


def alone(comparison: Comparison) -> bool:
    """Whether the candidate has no other run to be compared with (the store's first run): nothing is judged and
    nothing differs, so the page says neither "nothing got worse" nor "same on both sides"."""
    return not comparison.baseline_runs and not comparison.verdicts


def nothing_judged(comparison: Comparison) -> bool:
    """Whether a baseline was there but shared no case with the candidate (other sizes): every row new or
    missing, which is not "nothing got worse"."""
    return bool(comparison.baseline_runs and comparison.verdicts) and all(
        v.verdict in ("new", "missing") for v in comparison.verdicts
    )


def diff_rows(comparison: Comparison) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(title, [(key, baseline, candidate)]) for versions, dask config and host."""
    sections = (
        ("Versions", comparison.version_diff),
        ("Dask config", comparison.config_diff),
        ("Host", comparison.host_diff),
    )
    return [(title, [(key, _shown(a), _shown(b)) for key, (a, b) in found.items()]) for title, found in sections]


def _shown(value: Any) -> str:
    return "(absent)" if value is None else str(value)


def metric_titles() -> list[tuple[str, str]]:
    """(metric, switch label) of the compared metrics in declaration order, the order of the history tabs."""
    return [(name, catalog.get(name).short.capitalize()) for name in catalog.compared()]
