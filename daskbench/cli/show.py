"""``daskbench show RUN``: every measurement of one run; ``--tasks``: its per-task peak memory instead."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from daskbench import catalog
from daskbench.cli.common_args import add_db_option, add_format_option, open_store
from daskbench.cli.output import print_grouped, print_json, print_table, print_wrapped
from daskbench.flat import RunSummary, measurement_row, probe_text, task_rows
from daskbench.judge import machine
from daskbench.judge.format import case_label
from daskbench.model import JSON_VERSION, Case, Measurement, Run, recorded_commits
from daskbench.store import Store, runstatus
from daskbench.text import format_bytes, json_safe, plural, wrap_items

#: What ``show --tasks`` prints for a run measured without ``--task-memory``.
NO_TASK_MEMORY = "no per-task memory in run {run}; measure it with: pytest -m benchmark --task-memory"
#: A task prefix is cut to this width, so a row of ``show --tasks`` fits in 120 columns.
_PREFIX_WIDTH = 60


def register(subparsers: Any) -> None:
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


def _show_or_tasks(args: argparse.Namespace) -> int:
    """``show RUN`` or, with ``--tasks``, ``show RUN --tasks``."""
    return cmd_show_tasks(args) if getattr(args, "tasks", False) else cmd_show(args)


def _summary(store: Store, run: Run, measurements: Sequence[Measurement]) -> RunSummary:
    """The run as ``runs`` lists it, of its measurements read already (its probe: `machine.speed`)."""
    outcomes = Counter[str](m.outcome for m in measurements)
    return RunSummary(run, outcomes, machine.speed(measurements), runstatus.statuses(store, [run])[run.run_id])


def cmd_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measurements})
    rows = [measurement_row(m, cases.get(m.fingerprint)) for m in measurements]
    if args.format == "json":
        summary = _summary(store, run, measurements).to_json()
        print_json(json_safe({"version": JSON_VERSION, "run": summary, "measurements": rows}))
        return 0
    head = [
        f"run {run.run_id}",
        f"label={run.label}",
        f"started={run.started_at}",
        f"dask={run.versions.get('dask', '?')}",
        f"cpu probe={probe_text(machine.speed(measurements))}",
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
    """Per case (as `case_label` reads it: params and every cluster axis), the cells of its measurements (a
    measurement of several calls says so beside its repeat: its figures are per call)."""
    groups: dict[str, list[list[str]]] = {}
    columns = catalog.shown()
    for m, r in zip(measurements, rows, strict=True):
        case = cases.get(m.fingerprint)
        label = case_label(case.workload, case.params, case.cluster.identity()) if case else f"case {m.fingerprint}"
        groups.setdefault(label, []).append(
            [repeat_cell(r["repeat"], r["loops"]), r["outcome"], *(metric.format(r[metric.name]) for metric in columns)]
        )
    return list(groups.items())


def repeat_cell(repeat: int, loops: int) -> str:
    """``r3``, or ``r3 x8 calls`` for a measurement that made several calls (`Measurement.loops`)."""
    return f"r{repeat} x{loops} calls" if loops > 1 else f"r{repeat}"


# -- show --tasks: per-task peak memory (--task-memory) ----------------------------------


def cmd_show_tasks(args: argparse.Namespace) -> int:
    """Per-task peak memory of a run: one row per measurement (case, repeat) and task prefix."""
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measurements})
    rows = [row for m in measurements for row in task_rows(m, cases.get(m.fingerprint))]
    if args.format == "json":
        summary = _summary(store, run, measurements).to_json()
        print_json(json_safe({"version": JSON_VERSION, "run": summary, "tasks": rows}))
    elif rows:
        _print_tasks(run, cases, rows)
    else:
        print(NO_TASK_MEMORY.format(run=run.run_id[:8]))
    return 0


def _print_tasks(run: Run, cases: dict[str, Case], rows: list[dict[str, Any]]) -> None:
    """A table of `task_rows` per case."""
    print(f"run {run.run_id}  label={run.label}  started={run.started_at}  per-task peak memory (--task-memory)")
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


def _task_cells(r: dict[str, Any]) -> list[str]:
    prefix = r["prefix"] if len(r["prefix"]) <= _PREFIX_WIDTH else r["prefix"][: _PREFIX_WIDTH - 3] + "..."
    sizes = [format_bytes(r[name]) for name in ("peak_bytes", "p95_bytes", "input_bytes")]
    return [f"  r{r['repeat']}", prefix, str(r["tasks"]), *sizes, str(r["concurrency"])]
