"""``daskbench runs`` and ``daskbench show RUN``: what is in the store."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from daskbench import catalog
from daskbench.cli.common import (
    add_db_option,
    add_format_option,
    open_store,
    print_grouped,
    print_json,
    print_table,
    print_wrapped,
    whole_number,
)
from daskbench.judge import machine
from daskbench.judge.format import case_label
from daskbench.model import JSON_VERSION, Case, Measurement, Run, recorded_commits
from daskbench.store import runstatus
from daskbench.text import format_bytes, inf_or_number, json_safe, plural, wrap_items


def register(subparsers: Any) -> None:
    runs = subparsers.add_parser(
        "runs", help="list runs, newest first", description="List runs in the store, newest first."
    )
    add_db_option(runs)
    add_format_option(runs)
    runs.add_argument(
        "--limit",
        type=whole_number(1, 10**9, "a number of runs", "--limit 20"),
        default=None,
        metavar="N",
        help="show at most N runs",
    )
    runs.set_defaults(func=cmd_runs)

    show = subparsers.add_parser(
        "show",
        help="one row per measurement of a run",
        description="Show every measurement of one run (id or unique prefix).",
    )
    show.add_argument("run_id", help="run id or a unique prefix of it (see daskbench runs)")
    add_db_option(show)
    add_format_option(show)
    show.add_argument(
        "--tasks",
        action="store_true",
        help="per-task peak memory per task prefix instead (measured with pytest -m benchmark --task-memory)",
    )
    show.set_defaults(func=_show_or_tasks)


def run_summary(run: Run, outcomes: Mapping[str, int], probe: float | None, status: str = "unknown") -> dict[str, Any]:
    """A run's facts for ``runs``/``show``: its measurements counted by outcome, its speed (the median CPU
    probe: how fast the machine was) and ``status`` as `daskbench.store.runstatus` derives it."""
    return {
        "run_id": run.run_id,
        "label": run.label,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "status": status,
        "git_sha": run.git_sha,
        "ci_url": run.ci_url,
        "measurements": sum(outcomes.values()),
        "outcomes": dict(sorted(outcomes.items())),
        "versions": dict(run.versions),
        "host": dict(run.host),
        "tags": dict(run.tags),
        "cpu_probe_s": probe,
        **{key: run.tags.get(key) for key in ("ab_group", "ab_side", "ab_round")},
    }


def measured_summary(run: Run, measurements: Sequence[Measurement], status: str) -> dict[str, Any]:
    """`run_summary` of a run whose measurements are read already (``show``)."""
    return run_summary(run, Counter(m.outcome for m in measurements), machine.speed(measurements), status)


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store(args)
    runs = store.runs(limit=args.limit)
    ids = [run.run_id for run in runs]
    status, counts = runstatus.statuses(store, runs), store.outcome_counts(ids)
    # `machine.speed`, taken by the database (nothing decoded); for every run at once when every run is listed
    speeds = store.metric_medians(ids if args.limit is not None else None, "cpu_probe_s")
    summaries = [
        run_summary(run, counts.get(run.run_id, {}), speeds.get(run.run_id), status[run.run_id]) for run in runs
    ]
    if args.format == "json":
        print_json(json_safe({"version": JSON_VERSION, "runs": summaries}))
        return 0
    rows = [
        [
            s["run_id"][:8],
            s["started_at"][:16].replace("T", " "),  # to the minute, UTC: the table fits 120 columns
            s["status"],
            s["label"],
            str(s["measurements"]),
            _outcomes(s["outcomes"]),
            _probe(s["cpu_probe_s"]),
            s["versions"].get("dask", "?"),
            (s["git_sha"] or "-")[:10],
        ]
        for s in summaries
    ]
    if not rows:
        print(f"no runs in {store.display_url}; run: pytest -m benchmark")
        return 0
    print_table(["run", "started (UTC)", "status", "label", "n", "outcomes", "probe", "dask", "git"], rows)
    return 0


def _probe(seconds: float | None) -> str:
    """The run's median CPU probe in milliseconds (lower: a faster machine), or ``-``."""
    return f"{seconds * 1e3:.1f}ms" if seconds else "-"


def _outcomes(counts: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(counts.items())) or "-"


def measurement_row(m: Measurement, case: Case | None) -> dict[str, Any]:
    """One measurement as a flat JSON-safe row: its case, outcome, phases and every declared metric."""
    cluster = case.cluster if case else None
    return {
        "run_id": m.run_id,
        "fingerprint": m.fingerprint,
        "workload": case.workload if case else None,
        "params": dict(case.params) if case else {},
        "n_workers": cluster.n_workers if cluster else None,
        "threads_per_worker": cluster.threads_per_worker if cluster else None,
        "memory_per_worker": cluster.memory_per_worker if cluster else None,
        "worker_saturation": inf_or_number(cluster.worker_saturation) if cluster else None,
        "task_slots": (cluster.task_slots if cluster.task_slots is not None else "unlimited") if cluster else None,
        "config": cluster.config if cluster else {},
        "backend": cluster.backend if cluster else None,
        "repeat": m.repeat,
        "outcome": m.outcome,
        "message": m.message,
        "phases": dict(m.phases),
        **{name: m.metrics.get(name) for name in catalog.names()},
        "instance": m.extra.get("instance"),
        "rightsized_instance": m.extra.get("rightsized_instance"),
        "time_breakdown": m.extra.get("time_breakdown"),
        "thread_seconds": m.extra.get("thread_seconds"),
        "evidence": m.extra.get("evidence"),
        "recorded_at": m.recorded_at,
    }


def cmd_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measurements})
    rows = [measurement_row(m, cases.get(m.fingerprint)) for m in measurements]
    if args.format == "json":
        summary = measured_summary(run, measurements, runstatus.statuses(store, [run])[run.run_id])
        print_json(json_safe({"version": JSON_VERSION, "run": summary, "measurements": rows}))
        return 0
    head = [
        f"run {run.run_id}",
        f"label={run.label}",
        f"started={run.started_at}",
        f"dask={run.versions.get('dask', '?')}",
        f"cpu probe={_probe(machine.speed(measurements))}",
    ]
    print("\n".join(wrap_items(head, sep="  ")))
    if commits := recorded_commits(run.tags):  # packages installed from git: their commits (PEP 610)
        shown = (
            f"{c.package} {run.versions.get(c.package, '?')} at {c.short()} {c.url}".rstrip() for c in commits.values()
        )
        print_wrapped(f"from git: {'; '.join(shown)}")
    columns = catalog.shown()
    print_grouped(["rep", "outcome", *(metric.short for metric in columns)], _show_groups(measurements, cases, rows))
    kept = [r for r in rows if r["evidence"]]
    if kept:
        folders = sorted({str(Path(path).parent) for r in kept for path in r["evidence"].values()})
        print_wrapped(f"evidence (--evidence) of {plural(len(kept), 'measurement')} in {', '.join(folders)}")
    return 0


def _show_groups(
    measurements: list[Measurement], cases: dict[str, Case], rows: list[dict[str, Any]]
) -> list[tuple[str, list[list[str]]]]:
    """Per case (as `case_label` reads it: params and every cluster axis), the cells of its measurements."""
    groups: dict[str, list[list[str]]] = {}
    for m, r in zip(measurements, rows, strict=True):
        case = cases.get(m.fingerprint)
        label = case_label(case.workload, case.params, case.cluster.identity()) if case else f"case {m.fingerprint}"
        groups.setdefault(label, []).append(
            [f"r{r['repeat']}", r["outcome"], *(metric.format(r[metric.name]) for metric in catalog.shown())]
        )
    return list(groups.items())


# -- show --tasks: per-task peak memory (--task-memory) ----------------------------------

#: What ``show --tasks`` prints for a run measured without ``--task-memory``.
NO_TASK_MEMORY = "no per-task memory in run {run}; measure it with: pytest -m benchmark --task-memory"


def _show_or_tasks(args: argparse.Namespace) -> int:
    """``show RUN`` or, with ``--tasks``, ``show RUN --tasks``."""
    return cmd_show_tasks(args) if getattr(args, "tasks", False) else cmd_show(args)


def task_rows(measurements: list[Measurement], cases: dict[str, Case]) -> list[dict[str, Any]]:
    """One JSON-safe row per (measurement, task prefix): the case, the repeat and the prefix's figures."""
    rows: list[dict[str, Any]] = []
    for m in measurements:
        case = cases.get(m.fingerprint)
        cluster = case.cluster if case else None
        head = {
            "fingerprint": m.fingerprint,
            "workload": case.workload if case else None,
            "params": dict(case.params) if case else {},
            "n_workers": cluster.n_workers if cluster else None,
            "threads_per_worker": cluster.threads_per_worker if cluster else None,
            "memory_per_worker": cluster.memory_per_worker if cluster else None,
            "worker_saturation": inf_or_number(cluster.worker_saturation) if cluster else None,
            "config": cluster.config if cluster else {},
            "repeat": m.repeat,
            "outcome": m.outcome,
        }
        rows.extend({**head, **task.to_dict()} for task in m.tasks)
    return rows


def cmd_show_tasks(args: argparse.Namespace) -> int:
    """Per-task peak memory of a run: one row per measurement (case, repeat) and task prefix."""
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    rows = task_rows(measurements, store.cases({m.fingerprint for m in measurements}))
    if args.format == "json":
        summary = measured_summary(run, measurements, runstatus.statuses(store, [run])[run.run_id])
        print_json(json_safe({"version": JSON_VERSION, "run": summary, "tasks": rows}))
        return 0
    if not rows:
        print(NO_TASK_MEMORY.format(run=run.run_id[:8]))
        return 0
    print(f"run {run.run_id}  label={run.label}  started={run.started_at}  per-task peak memory (--task-memory)")
    cases = store.cases({m.fingerprint for m in measurements})
    for fingerprint in dict.fromkeys(r["fingerprint"] for r in rows):
        case = cases[fingerprint]
        print()
        print_wrapped(case_label(case.workload, case.params, case.cluster.identity()))
        print_table(
            ["  rep", "prefix", "tasks", "peak", "p95", "input", "concurrency"],
            [_task_cells(r) for r in rows if r["fingerprint"] == fingerprint],
        )
    if any(r["concurrency"] > 1 for r in rows):
        print("\nconcurrency > 1: tasks ran at once in one worker; each is charged their shared growth (upper bound)")
    return 0


#: A task prefix is cut to this width, so a row of ``show --tasks`` fits in 120 columns.
_PREFIX_WIDTH = 60


def _task_cells(r: dict[str, Any]) -> list[str]:
    prefix = r["prefix"] if len(r["prefix"]) <= _PREFIX_WIDTH else r["prefix"][: _PREFIX_WIDTH - 3] + "..."
    sizes = [format_bytes(r[name]) for name in ("peak_bytes", "p95_bytes", "input_bytes")]
    return [f"  r{r['repeat']}", prefix, str(r["tasks"]), *sizes, str(r["concurrency"])]
