"""``daskbench runs`` and ``daskbench show RUN``: what is in the store."""

from __future__ import annotations

import argparse
import math
from typing import Any

from daskbench.cli.common import add_db_option, add_format_option, open_store, print_json, print_table
from daskbench.model import Case, Measurement, Run


def register(subparsers: Any) -> None:
    runs = subparsers.add_parser(
        "runs", help="list runs, newest first", description="List runs in the store, newest first."
    )
    add_db_option(runs)
    add_format_option(runs)
    runs.add_argument("--limit", type=int, default=None, help="show at most this many runs")
    runs.set_defaults(func=cmd_runs)

    show = subparsers.add_parser("show", help="one row per measurement of a run",
                                 description="Show every measurement of one run (id or unique prefix).")  # fmt: skip
    show.add_argument("run_id", help="run id or a unique prefix of it (see daskbench runs)")
    add_db_option(show)
    add_format_option(show)
    show.set_defaults(func=cmd_show)


def run_summary(run: Run, measurements: list[Measurement]) -> dict[str, Any]:
    outcomes: dict[str, int] = {}
    for m in measurements:
        outcomes[m.outcome] = outcomes.get(m.outcome, 0) + 1
    return {
        "run_id": run.run_id,
        "label": run.label,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "git_sha": run.git_sha,
        "ci_url": run.ci_url,
        "measurements": len(measurements),
        "outcomes": outcomes,
        "versions": dict(run.versions),
        "host": dict(run.host),
    }


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store(args)
    runs = store.runs(limit=args.limit)
    summaries = [run_summary(run, store.measurements([run.run_id])) for run in runs]
    if args.format == "json":
        print_json(summaries)
        return 0
    rows = [
        [s["run_id"][:8], s["started_at"], s["label"], str(s["measurements"]), _outcomes(s["outcomes"]),
         s["versions"].get("dask", "?"), (s["git_sha"] or "-")[:10]]
        for s in summaries
    ]  # fmt: skip
    if not rows:
        print(f"no runs in {store.display_url}; run: pytest -m benchmark")
        return 0
    print_table(["run", "started", "label", "n", "outcomes", "dask", "git"], rows)
    return 0


def _outcomes(counts: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(counts.items())) or "-"


def measurement_row(m: Measurement, case: Case | None) -> dict[str, Any]:
    cluster = case.cluster if case else None
    return {
        "run_id": m.run_id,
        "fingerprint": m.fingerprint,
        "workload": case.workload if case else None,
        "params": dict(case.params) if case else {},
        "n_workers": cluster.n_workers if cluster else None,
        "threads_per_worker": cluster.threads_per_worker if cluster else None,
        "memory_per_worker": cluster.memory_per_worker if cluster else None,
        "worker_saturation": _saturation(cluster.worker_saturation) if cluster else None,
        "backend": cluster.backend if cluster else None,
        "repeat": m.repeat,
        "outcome": m.outcome,
        "message": m.message,
        "runtime_s": m.runtime_s,
        "phases": dict(m.phases),
        "peak_memory_bytes": m.peak_memory_bytes,
        "peak_worker_memory_bytes": m.peak_worker_memory_bytes,
        "peak_worker_memory_fraction": m.peak_worker_memory_fraction,
        "mean_memory_bytes": m.mean_memory_bytes,
        "spilled_bytes": m.spilled_bytes,
        "spill_count": m.spill_count,
        "task_count": m.task_count,
        "bytes_transferred": m.bytes_transferred,
        "worker_restarts": m.worker_restarts,
        "cost_usd": m.cost_usd,
        "rightsized_cost_usd": m.rightsized_cost_usd,
        "instance": m.extra.get("instance"),
        "rightsized_instance": m.extra.get("rightsized_instance"),
        "recorded_at": m.recorded_at,
    }


def cmd_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measurements})
    rows = [measurement_row(m, cases.get(m.fingerprint)) for m in measurements]
    if args.format == "json":
        print_json(rows)
        return 0
    print(f"run {run.run_id}  label={run.label}  started={run.started_at}  dask={run.versions.get('dask', '?')}")
    print_table(
        ["workload", "params", "sat", "workers", "rep", "outcome", "runtime_s", "peak_MiB", "worker_MiB", "frac",
         "spilled_MiB", "cost_usd"],
        [_show_cells(r) for r in rows],
    )  # fmt: skip
    return 0


def _show_cells(r: dict[str, Any]) -> list[str]:
    params = ",".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
    return [
        str(r["workload"]), params, str(r["worker_saturation"]), str(r["n_workers"]), str(r["repeat"]),
        r["outcome"], _num(r["runtime_s"], "{:.3f}"), _mib(r["peak_memory_bytes"]),
        _mib(r["peak_worker_memory_bytes"]), _num(r["peak_worker_memory_fraction"], "{:.2f}"),
        _mib(r["spilled_bytes"]), _num(r["cost_usd"], "{:.6f}"),
    ]  # fmt: skip


def _saturation(value: float) -> float | str:
    """JSON-safe: a number, or ``"inf"`` when queuing is off."""
    return "inf" if math.isinf(value) else value


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.0f}"
