"""``daskbench export``: the store's history as versioned JSON lines, to merge into another store.

Why: history must survive CI cache eviction and stores filled in parallel must merge without hand work
(``daskbench import``); see `daskbench.store.exchange` for the format.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from daskbench.cli.common_args import add_db_option, add_output_option, open_store
from daskbench.cli.values import since
from daskbench.errors import check_writable
from daskbench.store import exchange
from daskbench.text import say

#: ``export``'s texts (add_parser's keywords).
TEXTS = {
    "help": "write every run, case, measurement, baseline as JSON lines",
    "description": "Write the store's history as versioned JSON lines (one row per line), "
    "to merge into another store with daskbench import.",
    "epilog": "examples: daskbench export -o runs.jsonl | daskbench export --since 30d -o recent.jsonl",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("export", **TEXTS)
    add_output_option(parser, "file to write (default: - for stdout)", metavar="PATH", default="-")
    parser.add_argument(
        "--since",
        metavar="WHEN",
        type=since,
        help="only runs started since: a duration before now (30d, 12h, 10m, 90s, 2w) or an ISO date",
    )
    add_db_option(parser)
    parser.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.output != "-":
        check_writable(Path(args.output), "-o")
    store = open_store(args)
    if args.output == "-":
        counts = exchange.write_export(store, sys.stdout, args.since)
    else:
        path = Path(args.output)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            counts = exchange.write_export(store, out, args.since)
    written = ", ".join(f"{counts.get(kind, 0)} {kind}s" for kind in exchange.KINDS)
    say(f"exported {written} to {args.output}")
    return 0
