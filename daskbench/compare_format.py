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

from daskbench import catalog, stats
from daskbench.model import JSON_VERSION, VERDICTS, Comparison, Run, Verdict
from daskbench.text import json_safe

_OUTCOME_LABELS = {"newly-failing": "newly failing", "fixed": "fixed", "new": "new case", "missing": "missing"}
_HEADERS = ["verdict", "case", "metric", "baseline", "candidate", "change", "note"]


def format_verdict(v: Verdict) -> str:
    """Effect and evidence in one phrase: ``1.31x slower (95% CI 1.22-1.40, floor 1.10)``."""
    if v.ratio is None or v.verdict in _OUTCOME_LABELS:
        label = _OUTCOME_LABELS.get(v.verdict, v.verdict)
        return f"{label}: {v.note}" if v.note else label
    return f"{catalog.get(v.metric).effect(v.ratio)} ({', '.join(_evidence(v))})"


def _evidence(v: Verdict) -> list[str]:
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
    """``shuffle[size=small] local 2w/1t sat=1.1``: a case as a person reads it."""
    args = ",".join(f"{key}={value}" for key, value in sorted(params.items()))
    spec = (
        f"{cluster.get('backend', '?')} {cluster.get('n_workers', '?')}w/{cluster.get('threads_per_worker', '?')}t "
        f"sat={cluster.get('worker_saturation', '?')}"
    )
    return f"{workload}[{args}] {spec}" if args else f"{workload} {spec}"


def format_value(metric: str, value: float) -> str:
    """A metric value with its unit: ``12.3s``, ``1.5 GiB``, ``$0.0123`` (`catalog.Metric.format`)."""
    return catalog.get(metric).format(value)


def format_table(comparison: Comparison) -> str:
    """The terminal report: who is compared, counts, one row per verdict, then what differs."""
    rows = [_row(v) for v in comparison.verdicts]
    lines = [*_header(comparison), "", *_render(_HEADERS, rows)]
    for title, found in (
        ("versions", comparison.version_diff),
        ("dask config", comparison.config_diff),
        ("host", comparison.host_diff),
    ):
        lines += ["", *_diff_section(title, found)]
    return "\n".join(lines)


def _header(c: Comparison) -> list[str]:
    mode = "A/B" if c.mode == "ab" else "history"
    base = ", ".join(_run_brief(run) for run in c.baseline_runs) if c.mode == "ab" else f"{len(c.baseline_runs)} runs"
    lines = [
        f"daskbench compare ({mode})",
        f"candidate: {_run_brief(c.candidate_run)}",
        f"baseline:  {c.baseline_label} ({base})" if base else f"baseline:  {c.baseline_label}",
    ]
    lines += [f"note: {note}" for note in c.notes]
    counts = {kind: sum(v.verdict == kind for v in c.verdicts) for kind in VERDICTS}
    lines.append("summary: " + (", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "no cases"))
    return lines


def _run_brief(run: Run) -> str:
    sha = f" git {run.git_sha[:10]}" if run.git_sha else ""
    return f"{run.run_id[:8]} {run.label} {run.started_at}{sha}"


def _row(v: Verdict) -> list[str]:
    return [
        v.verdict,
        case_label(v.workload, v.params, v.cluster),
        v.metric,
        _summary(v.metric, v.baseline_values),
        _summary(v.metric, v.candidate_values),
        format_verdict(v),
        v.note if v.ratio is not None and v.verdict not in _OUTCOME_LABELS else "",
    ]


def _summary(metric: str, values: Sequence[float]) -> str:
    return format_value(metric, stats.median(values)) if values else "-"


def _render(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(headers)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]


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
    """One line for a failing exit: how many regressions, and the first few."""
    found = comparison.regressions
    shown = "; ".join(
        f"{case_label(v.workload, v.params, v.cluster)} {v.metric} {format_verdict(v)}" for v in found[:3]
    )
    more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
    return f"daskbench: {len(found)} regression(s) against {comparison.baseline_label}: {shown}{more}"


def verdicts_to_json(comparison: Comparison) -> list[dict[str, Any]]:
    """One JSON-safe object per verdict, in the table's order."""
    return [_verdict_json(v) for v in comparison.verdicts]


def _verdict_json(v: Verdict) -> dict[str, Any]:
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
