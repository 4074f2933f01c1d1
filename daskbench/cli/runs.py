"""``daskbench runs``: the runs in the store, newest first."""

from __future__ import annotations

import argparse
from typing import Any

from daskbench.cli.common_args import add_db_option, add_format_option, open_store
from daskbench.cli.output import print_json, print_table
from daskbench.cli.values import whole_number
from daskbench.flat import RunSummary, probe_text
from daskbench.model import JSON_VERSION
from daskbench.store import runstatus
from daskbench.text import json_safe

#: The columns of the ``runs`` table (it fits 120 columns).
HEADERS = ["run", "started (UTC)", "status", "label", "n", "outcomes", "probe", "dask", "git"]


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


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store(args)
    runs = store.runs(limit=args.limit)
    ids = [run.run_id for run in runs]
    status, counts = runstatus.statuses(store, runs), store.outcome_counts(ids)
    # `machine.speed`, taken by the database (nothing decoded); for every run at once when every run is listed
    speeds = store.metric_medians(ids if args.limit is not None else None, "cpu_probe_s")
    summaries = [
        RunSummary(run, counts.get(run.run_id, {}), speeds.get(run.run_id), status[run.run_id]).to_json()
        for run in runs
    ]
    if args.format == "json":
        print_json(json_safe({"version": JSON_VERSION, "runs": summaries}))
    elif summaries:
        print_table(HEADERS, [_cells(s) for s in summaries])
    else:
        print(f"no runs in {store.display_url}; run: pytest -m benchmark")
    return 0


def _cells(s: dict[str, Any]) -> list[str]:
    """One row of the table: `RunSummary.to_json`'s fields, the start to the minute (UTC)."""
    return [
        s["run_id"][:8],
        s["started_at"][:16].replace("T", " "),
        s["status"],
        s["label"],
        str(s["measurements"]),
        ",".join(f"{k}={v}" for k, v in sorted(s["outcomes"].items())) or "-",
        probe_text(s["cpu_probe_s"]),
        s["versions"].get("dask", "?"),
        (s["git_sha"] or "-")[:10],
    ]
