"""How a comparison reads: the effect-and-evidence phrase, the terminal table, and JSON.

`format_verdict` always states the effect and the evidence behind it, e.g.
``1.31x slower (95% CI 1.22-1.40, floor 1.10)`` in A/B mode and
``1.31x slower (z 6.2 vs 20 runs, floor 1.10)`` in history mode, so the terminal table,
the pytest summary and the HTML report say the same thing. JSON never holds NaN or
infinity: those become ``null`` or the strings ``"inf"``/``"-inf"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from daskbench import catalog
from daskbench.model import JSON_VERSION, SELECT_K, SELECT_M, SHARD, ClusterSpec, Run
from daskbench.text import (
    WIDTH,
    compact_bytes,
    config_key_short,
    first_few,
    fit_items,
    json_safe,
    plural,
    slots_count,
    terminal_safe,
    wrap_line,
)
from daskbench.verdicts import VERDICTS, Comparison, Verdict

_OUTCOME_LABELS = {"newly-failing": "newly failing", "fixed": "fixed", "new": "new case", "missing": "missing"}
#: The terminal table fits `WIDTH` columns: rows are grouped under a line naming their case, a
#: line too wide wraps between whole items, and notes are printed once below, referenced as ``[n]``.
_HEADERS = ["verdict", "metric", "baseline", "candidate", "change"]
#: What the table says of the rows it leaves out (``every_row`` lists them).
EVERY_ROW_HINT = "daskbench compare --all shows every row"


#: An undecided interval reaching past these (0.5x to 2x) tells a reader nothing: "too noisy to tell".
NOISY_BOUNDS = (0.5, 2.0)


def format_verdict(v: Verdict) -> str:
    """Effect and evidence in one phrase: ``1.31x slower (95% CI 1.22-1.40, floor 1.10)``; an undecided
    interval wider than `NOISY_BOUNDS` is ``too noisy to tell (4 rounds)`` (its interval: `noisy_detail`)."""
    if v.ratio is None or v.verdict in _OUTCOME_LABELS:
        label = _OUTCOME_LABELS.get(v.verdict, v.verdict)
        return f"{label}: {v.note}" if v.note else label
    if too_noisy(v):
        return f"too noisy to tell ({_measured(v)})"
    return f"{catalog.get(v.metric).effect(v.ratio)} ({', '.join(_evidence(v))})"


def too_noisy(v: Verdict) -> bool:
    """An inconclusive verdict whose interval reaches below 0.5x or above 2x."""
    if v.verdict != "inconclusive" or v.ci_low is None or v.ci_high is None:
        return False
    return v.ci_low < NOISY_BOUNDS[0] or v.ci_high > NOISY_BOUNDS[1]


def noisy_detail(v: Verdict) -> str:
    """What a too-noisy verdict measured: its middle and its interval, and what narrows it."""
    middle = catalog.get(v.metric).effect(v.ratio) if v.ratio is not None else "no ratio"
    low, high = NOISY_BOUNDS
    return (
        f"{catalog.get(v.metric).short}: {middle} in the middle, {', '.join(_evidence(v))}: wider than "
        f"{low:g}x-{high:g}x after {_measured(v)}; {_narrower(v)} or a quieter machine narrow it"
    )


#: What measures more of a too-noisy verdict, with the flag that asks for it: rounds of the command that ran
#: the A/B group (``compare`` only reads them), or repeats of the pytest sessions of two runs.
MORE_ROUNDS = "more rounds (--max-rounds of the ab, pr, confirm or bisect that measured them)"
MORE_REPEATS = "more repeats (pytest -m benchmark --repeat N)"


def _narrower(v: Verdict) -> str:
    return MORE_ROUNDS if v.method.startswith("sequential") else MORE_REPEATS


def _measured(v: Verdict) -> str:
    """``4 rounds`` of a side-by-side comparison, ``3 vs 3 repeats`` of two runs."""
    if v.method.startswith("sequential"):
        return plural(len(v.candidate_values), "round")
    return f"{len(v.baseline_values)} vs {len(v.candidate_values)} repeats"


def _evidence(v: Verdict) -> list[str]:
    from daskbench.judge import stats  # numpy: only for verdicts, not imported by ``daskbench runs``

    if v.score is not None:
        parts = [f"z {v.score:.1f} vs {len(v.baseline_values)} runs"]
    elif v.ci_low is not None and v.ci_high is not None and v.ratio is not None:
        low, high = (v.ci_low, v.ci_high) if v.ratio >= 1 else (1 / v.ci_high, 1 / v.ci_low)
        parts = [f"{stats.CONFIDENCE:.0%} CI {low:.2f}-{high:.2f}"]
    elif v.method.startswith("history"):
        parts = [f"{len(v.baseline_values)} runs of history"]
    else:
        parts = [f"{len(v.baseline_values)} vs {len(v.candidate_values)} repeats, no interval"]
    return parts + ([f"floor {v.floor:.2f}"] if v.floor is not None else [])


def case_label(workload: str, params: Mapping[str, Any], cluster: Mapping[str, Any]) -> str:
    """``shuffle[size=small] local 2w/1t 4GiB sat=1.1 (2 slots) memory.target=0.6``: a case as a person reads it,
    control characters in its names and values escaped (`terminal_safe`), whatever a benchmark put there."""
    args = ",".join(f"{key}={value}" for key, value in sorted(params.items()))
    memory = cluster.get("memory_per_worker")
    spec = (
        f"{cluster.get('backend', '?')} {cluster.get('n_workers', '?')}w/{cluster.get('threads_per_worker', '?')}t"
        f"{f' {compact_bytes(memory)}' if memory else ''} sat={cluster.get('worker_saturation', '?')}{slots_suffix(cluster)}"
    )
    spec += "".join(
        f" {config_key_short(k)}={v}" for k, v in sorted(dict(cluster.get("scheduler_config") or {}).items())
    )
    return terminal_safe(f"{workload}[{args}] {spec}" if args else f"{workload} {spec}")


def slots_suffix(cluster: Mapping[str, Any]) -> str:
    """`` (2 slots)``: the task slots per worker the saturation gives at this thread count."""
    try:
        spec = ClusterSpec.from_json({"backend": "?", "n_workers": 1, **cluster})
    except (KeyError, TypeError, ValueError):
        return ""
    return f" ({slots_count(spec.task_slots)})"


def format_value(metric: str, value: float) -> str:
    """A metric value with its unit: ``12.3s``, ``1.5 GiB``, ``$0.012`` (`catalog.Metric.format`)."""
    return catalog.get(metric).format(value)


def format_table(comparison: Comparison, every_row: bool = False) -> str:
    """The terminal report: who is compared, counts, a row per verdict that is not ``unchanged``
    (with ``every_row``, a row per verdict), the unchanged as one count line, then what differs."""
    if not comparison.verdicts and not comparison.baseline_runs:  # nothing to compare yet: say why, once
        said = [part for note in comparison.notes for part in wrap_line(f"daskbench compare: {note}")]
        return "\n".join(terminal_safe(line) for line in said) or "daskbench compare: no cases"
    listed, outside = outside_selection(comparison)
    shown = listed if every_row else [v for v in listed if v.verdict != "unchanged"]
    notes: list[str] = []
    lines = [*_header(comparison), "", *(_grouped_rows(shown, notes) if shown else [])]
    if len(shown) < len(listed):
        lines += [f"{len(listed) - len(shown)} unchanged ({EVERY_ROW_HINT})"]
    if outside:
        lines += ["", *wrap_line(outside_line(comparison.candidate_run, outside))]
    if notes:
        lines += ["", *(wrapped for n, note in enumerate(notes, 1) for wrapped in wrap_line(f"[{n}] {note}"))]
    for title, found in (
        ("versions", comparison.version_diff),
        ("dask config", comparison.config_diff),
        ("host", comparison.host_diff),
    ):
        lines += ["", *_diff_section(title, found)]
    return "\n".join(terminal_safe(line) for line in lines)  # notes and labels hold users' text


def _header(c: Comparison) -> list[str]:
    mode = "A/B" if c.mode == "ab" else "history"
    counts = {kind: sum(v.verdict == kind for v in c.verdicts) for kind in VERDICTS}
    lines = [
        f"daskbench compare ({mode})",
        f"candidate: {_run_brief(c.candidate_run)}",
        f"baseline:  {c.baseline_label}{_baseline_runs(c)}",
        *(f"note: {note}" for note in c.notes),
        "summary: " + (", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "no cases"),
    ]
    return [wrapped for line in lines for wrapped in wrap_line(line)]


def _baseline_runs(c: Comparison) -> str:
    """`` (run000-a nightly 2026-01-01T00:00:00+00:00)`` for one baseline run, several by a few ids
    and a count (``--format json`` lists them all), a history by its count."""
    runs = c.baseline_runs
    if not runs:
        return ""
    if c.mode != "ab":
        return f" ({plural(len(runs), 'run')})"
    if len(runs) == 1:
        return f" ({_run_brief(runs[0])})"
    return f" ({plural(len(runs), 'run')}: {first_few([run.run_id[:8] for run in runs])}; all: --format json)"


def _run_brief(run: Run) -> str:
    sha = f" git {run.git_sha[:10]}" if run.git_sha else ""
    return f"{run.run_id[:8]} {run.label} {run.started_at}{sha}"


def _grouped_rows(verdicts: Sequence[Verdict], notes: list[str]) -> list[str]:
    """One line per case (in the order of its biggest effect), its verdicts indented below it;
    a line wider than `WIDTH` wraps between whole items."""
    by_case: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_case.setdefault(v.fingerprint, []).append(v)
    table = [["", *_HEADERS]]
    for group in by_case.values():
        first = group[0]
        table.append([case_label(first.workload, first.params, first.cluster)])
        table += [["", *_row(v, notes)] for v in group]
    return _render(table)


def _row(v: Verdict, notes: list[str]) -> list[str]:
    """verdict, metric, baseline, candidate, change; a note becomes a reference to the list below."""
    if v.verdict in ("newly-failing", "fixed"):  # the note is this case's own failure: inline
        change = format_verdict(v)
    elif v.ratio is None or v.verdict in _OUTCOME_LABELS:
        change = _OUTCOME_LABELS.get(v.verdict, v.verdict)
    else:
        change = format_verdict(v)
    note = "; ".join(part for part in (noisy_detail(v) if too_noisy(v) else "", v.note) if part)
    if note and v.verdict not in ("newly-failing", "fixed"):
        if note not in notes:
            notes.append(note)
        change += f" [{notes.index(note) + 1}]"
    metric = "case" if v.verdict in _OUTCOME_LABELS else catalog.get(v.metric).short
    return [v.verdict, metric, _summary(v.metric, v.baseline_values), _summary(v.metric, v.candidate_values), change]


def outside_selection(c: Comparison) -> tuple[list[Verdict], list[Verdict]]:
    """The verdicts to list, and the ``missing`` ones a run with a ``-k``/``-m`` selection (or one shard of it,
    ``--shard K/N``) never selected."""
    if not ({SELECT_K, SELECT_M, SHARD} & set(c.candidate_run.tags)):
        return list(c.verdicts), []
    outside = [v for v in c.verdicts if v.verdict == "missing"]
    return [v for v in c.verdicts if v.verdict != "missing"], outside


def outside_line(run: Run, outside: Sequence[Verdict]) -> str:
    given = (("-k", SELECT_K), ("-m", SELECT_M), ("--shard", SHARD))
    selection = " ".join(f"{flag} {run.tags[key]!r}" for flag, key in given if key in run.tags)
    names = ", ".join(dict.fromkeys(v.workload for v in outside))
    return f"missing: {plural(len(outside), 'case')} outside this run's selection ({selection}), not compared: {names}"


def _summary(metric: str, values: Sequence[float]) -> str:
    from daskbench.judge import stats  # numpy: only for verdicts

    return format_value(metric, stats.median(values)) if values else "-"


def _render(rows: list[list[str]]) -> list[str]:
    """Aligned columns; a one-cell row (a case's line) spans the table and sets no width. A row
    too wide wraps its last cell below itself; a case's line wraps indented."""
    full = [row for row in rows if len(row) > 1]
    widths = [max(len(row[i]) for row in full) for i in range(len(full[0]))] if full else []
    last = " " * (sum(widths[:-1]) + 2 * (len(widths) - 1))
    return [line for row in rows for line in (wrap_line(row[0]) if len(row) == 1 else _aligned(row, widths, last))]


def _aligned(row: list[str], widths: list[int], indent: str) -> list[str]:
    """One row's cells padded to ``widths``; too wide, its last cell wraps to lines indented under it."""
    return wrap_line(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), indent=indent
    )


def _diff_section(title: str, found: Mapping[str, tuple[Any, Any]]) -> list[str]:
    if not found:
        return [f"{title}: same on both sides"]
    width = max(len(key) for key in found)
    return [f"{title} (baseline -> candidate):"] + [
        f"  {key.ljust(width)}  {_shown(base)} -> {_shown(cand)}" for key, (base, cand) in found.items()
    ]


def _shown(value: Any) -> str:
    return "(absent)" if value is None else str(value)


def regression_summary(comparison: Comparison) -> str:
    """One line (<= `WIDTH`) for a failing exit: how many regressions, and the biggest, cut
    between whole items when it is too wide; the output above has every one."""
    found = comparison.regressions
    if not found:
        return f"daskbench: no regression against {comparison.baseline_label}"
    first = found[0]
    effect = catalog.get(first.metric).effect(first.ratio) if first.ratio is not None else first.verdict
    head = f"daskbench: {plural(len(found), 'regression')} against {comparison.baseline_label}"
    head += " (every one is in the output above); the biggest:" if len(found) > 1 else ":"
    return fit_items([head, f"{effect}:", *case_label(first.workload, first.params, first.cluster).split(" ")], WIDTH)


def verdicts_to_json(comparison: Comparison) -> list[dict[str, Any]]:
    """One JSON-safe object per verdict, in the table's order."""
    return [_verdict_json(v) for v in comparison.verdicts]


def _verdict_json(v: Verdict) -> dict[str, Any]:
    from daskbench.judge import stats  # numpy: only for verdicts

    return json_safe(
        {
            "fingerprint": v.fingerprint,
            "workload": v.workload,
            "params": dict(v.params),
            "cluster": dict(v.cluster),
            "metric": v.metric,
            "verdict": v.verdict,
            "regression": v.is_regression,
            "change": format_verdict(v),
            "ratio": v.ratio,
            "ci_low": v.ci_low,
            "ci_high": v.ci_high,
            "confidence": stats.CONFIDENCE if v.ci_low is not None else None,
            "floor": v.floor,
            "score": v.score,
            "method": v.method,
            "note": v.note,
            "baseline_median": stats.median(v.baseline_values) if v.baseline_values else None,
            "candidate_median": stats.median(v.candidate_values) if v.candidate_values else None,
            "baseline_values": list(v.baseline_values),
            "candidate_values": list(v.candidate_values),
        }
    )


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    """The whole comparison, versioned: runs, notes, counts, differences and verdicts."""
    c = comparison
    return json_safe(
        {
            "version": JSON_VERSION,
            "mode": c.mode,
            "baseline": c.baseline_label,
            "candidate_run": _run_json(c.candidate_run),
            "baseline_runs": [_run_json(run) for run in c.baseline_runs],
            "notes": list(c.notes),
            "regressed": bool(c.regressions),
            "summary": {kind: sum(v.verdict == kind for v in c.verdicts) for kind in VERDICTS},
            "version_diff": {key: list(pair) for key, pair in c.version_diff.items()},
            "config_diff": {key: list(pair) for key, pair in c.config_diff.items()},
            "host_diff": {key: list(pair) for key, pair in c.host_diff.items()},
            "verdicts": verdicts_to_json(c),
        }
    )


def _run_json(run: Run) -> dict[str, Any]:
    return {"run_id": run.run_id, "label": run.label, "started_at": run.started_at, "git_sha": run.git_sha}
