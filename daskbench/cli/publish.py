"""``daskbench publish``: the store's history as a static site (GitHub Pages), see `daskbench.site`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daskbench.cli.common import add_db_option, history_runs, open_store
from daskbench.errors import check_writable


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "publish",
        help="write a static history site: an index and a page per workload (opens offline)",
        description="Write a static site of the store's history: index.html (workloads, recent runs) and one "
        "page per workload (trend of each case over runs, baseline band, failed runs marked), linking to "
        "the reports of the most recent runs. Every page opens from disk with no network.",
        epilog="example: daskbench publish -o site/ --history 60 --reports 10",
    )
    parser.add_argument("-o", "--output", metavar="DIR", default="results/site", help="folder (default: results/site)")
    parser.add_argument("--history", metavar="N", type=history_runs, default=30, help="runs per trend (default: 30)")
    parser.add_argument(
        "--reports", metavar="N", type=int, default=5, help="write the reports of the N newest runs (default: 5)"
    )
    add_db_option(parser)
    parser.set_defaults(func=cmd_publish)


def cmd_publish(args: argparse.Namespace) -> int:
    check_writable(Path(args.output), "-o", folder=True)
    store = open_store(args)
    store.latest_run()  # an empty store is a one-line error before anything is written
    print(f"publishing {store.display_url} to {args.output}")
    from daskbench.site import publish  # bokeh and jinja: only when a site is written

    index = publish(store, args.output, history=args.history, reports=max(args.reports, 0))
    print(f"wrote {index}")
    return 0
