"""``daskbench import``: merge ``daskbench export`` files into the store; importing twice adds nothing.

(The module is ``import_``: ``import`` is Python's keyword.) See `daskbench.store.exchange` for the format.
"""

from __future__ import annotations

import argparse
from typing import Any

from daskbench.cli.common_args import add_db_option, open_store
from daskbench.cli.output import print_wrapped
from daskbench.store import exchange

#: ``import``'s texts (add_parser's keywords).
TEXTS = {
    "help": "merge an export file into the store (idempotent)",
    "description": "Merge a daskbench export into the store: rows already present (same run id, "
    "fingerprint, repeat, ...) are skipped, so importing twice adds nothing.",
    "epilog": "example: daskbench import runs.jsonl --db postgresql://host/bench",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("import", **TEXTS)
    parser.add_argument("files", nargs="+", metavar="FILE", help="export file(s) written by daskbench export")
    add_db_option(parser)
    parser.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    files = [(file, exchange.check_file(file)) for file in args.files]  # all checked before the store is opened
    store = open_store(args)
    for file, ordered in files:
        print_wrapped(f"{file}: {exchange.import_file(store, file, ordered=ordered).summary()}")
    return 0
