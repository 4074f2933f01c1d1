"""``daskbench compare``: verdicts of a run against a baseline, its history, or an A/B group's rounds.

With no ``--baseline`` and no ``--history`` it compares the latest run with the baseline named ``main``;
when there is no such baseline it falls back to history mode (each case against its last 20 good runs)
and says so in its output, so a nightly job works before anyone has named a baseline. Exit codes: 0
nothing regressed, 1 a regression (or a newly failing case), 2 the comparison could not run.
"""

from __future__ import annotations

import argparse
from typing import Any

from daskbench.cli.common_args import add_db_option, add_format_option, add_selection_options, open_store, selection
from daskbench.cli.output import print_comparison
from daskbench.judge.compare import compare

#: ``compare``'s texts (add_parser's keywords).
TEXTS = {
    "help": "verdicts: what got slower, fatter or dearer than the baseline",
    "description": "Compare a run (default: the latest) with a baseline (default: the baseline named main; "
    "without one, each case's last 20 good runs). A row per case and metric that changed (or is "
    "inconclusive), biggest change first, and the count of the unchanged; --all lists every row.",
    "epilog": "exit codes: 0 nothing regressed, 1 something regressed or newly fails, 2 could not run",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("compare", **TEXTS)
    add_selection_options(parser)
    parser.add_argument(
        "--all",
        dest="every_row",
        action="store_true",
        help="list every verdict, the unchanged ones too (--format json always has every one)",
    )
    add_format_option(parser)
    add_db_option(parser)
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    return print_comparison(compare(open_store(args), selection(args)), args.format, every_row=args.every_row)
