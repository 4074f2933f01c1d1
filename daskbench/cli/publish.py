"""``daskbench publish``: the store's history as a static site (GitHub Pages), see `daskbench.site`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daskbench.cli.common_args import add_db_option, add_old_spellings, add_output_option, open_store
from daskbench.cli.output import check_report_bokeh
from daskbench.cli.values import whole_number
from daskbench.errors import check_writable


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "publish",
        help="write a static history site: an index and a page per workload (opens offline)",
        description="Write a static site of the store's history: index.html (workloads, recent runs) and one "
        "page per workload (trend of each case over runs, baseline band, failed runs marked), linking to "
        "the reports of the most recent runs. Every page opens from disk with no network.",
        epilog="example: daskbench publish -o site/ --trend-runs 60 --reports 10",
    )
    add_output_option(parser, "folder (default: results/site)", metavar="DIR", default="results/site")
    parser.add_argument(
        "--trend-runs",
        metavar="N",
        type=whole_number(1, 100_000, "runs per trend", "--trend-runs 60"),
        default=30,
        help="runs per trend (default: 30)",
    )
    add_old_spellings(parser, "--trend-runs", "--history")
    parser.add_argument(
        "--reports",
        metavar="N",
        type=whole_number(0, 100_000, "a number of reports", "--reports 5"),
        default=5,
        help="write the reports of the N newest runs (default: 5)",
    )
    add_db_option(parser)
    parser.set_defaults(func=cmd_publish)


def cmd_publish(args: argparse.Namespace) -> int:
    check_writable(Path(args.output), "-o", folder=True)
    check_report_bokeh("publish")
    store = open_store(args)
    store.latest_run()  # an empty store is a one-line error before anything is written
    print(f"publishing {store.display_url} to {args.output}")
    from daskbench.site import publish  # bokeh and jinja: only when a site is written

    index = publish(store, args.output, history=args.trend_runs, reports=args.reports)
    print(f"wrote {index}")
    return 0
