"""``daskbench export`` / ``daskbench import``: carry history between stores as JSON lines.

Why: history must survive CI cache eviction and stores filled in parallel must merge
without hand work; see `daskbench.store.exchange` for the format.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from daskbench.cli.common import add_db_option, add_output_option, open_store, print_wrapped, say, since
from daskbench.errors import check_writable
from daskbench.store import exchange


def register(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export",
        help="write every run, case, measurement, baseline as JSON lines",
        description="Write the store's history as versioned JSON lines (one row per line), "
        "to merge into another store with daskbench import.",
        epilog="examples: daskbench export -o runs.jsonl | daskbench export --since 30d -o recent.jsonl",
    )
    add_output_option(export, "file to write (default: - for stdout)", metavar="PATH", default="-")
    export.add_argument(
        "--since",
        metavar="WHEN",
        type=since,
        help="only runs started since: a duration before now (30d, 12h, 10m, 90s, 2w) or an ISO date",
    )
    add_db_option(export)
    export.set_defaults(func=cmd_export)

    imp = subparsers.add_parser(
        "import",
        help="merge an export file into the store (idempotent)",
        description="Merge a daskbench export into the store: rows already present (same run id, "
        "fingerprint, repeat, ...) are skipped, so importing twice adds nothing.",
        epilog="example: daskbench import runs.jsonl --db postgresql://host/bench",
    )
    imp.add_argument("files", nargs="+", metavar="FILE", help="export file(s) written by daskbench export")
    add_db_option(imp)
    imp.set_defaults(func=cmd_import)


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


def cmd_import(args: argparse.Namespace) -> int:
    files = [(file, exchange.check_file(file)) for file in args.files]  # all checked before the store is opened
    store = open_store(args)
    for file, ordered in files:
        print_wrapped(f"{file}: {exchange.import_file(store, file, ordered=ordered).summary()}")
    return 0
