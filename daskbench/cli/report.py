"""``daskbench report``: the comparison as one self-contained HTML file.

The same selection as ``daskbench compare`` (latest run against baseline ``main`` by
default, ``--baseline``/``--candidate`` for any two, ``--history N`` for trends); the
report never sets the exit code on a regression (``daskbench compare`` gates CI).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daskbench.cli.common import add_db_option, add_floor_option, floors, open_store
from daskbench.cli.compare import history_runs
from daskbench.errors import DaskbenchError
from daskbench.report import write_report
from daskbench.text import format_bytes

DEFAULT_OUTPUT = "results/report.html"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write the HTML comparison report (opens from disk, no network)",
        description="Write one self-contained HTML file comparing a run (default: the latest) with a baseline "
        "(default: the baseline named main; without one, each case's recent history): the verdict table with "
        "a metric switch, and per workload memory over time, change per case, history, scaling and trade-offs.",
        epilog="examples: daskbench report | daskbench report --baseline main --candidate 3f2a -o review.html | "
        "daskbench report --history 30",
    )
    parser.add_argument("--baseline", metavar="NAME_OR_RUN", help="baseline name or run id (default: main)")
    parser.add_argument("--candidate", metavar="RUN", help="run id or prefix to report on (default: the latest run)")
    parser.add_argument("--ab", metavar="GROUP", help="report an interleaved A/B group (daskbench ab): verdicts "
                        "from per-round ratios B/A, listed in each row's note; charts show A's runs and B's last")  # fmt: skip
    parser.add_argument(
        "--history",
        metavar="N",
        type=history_runs,
        help="compare each case with its last N good runs; charts show N runs",
    )
    add_floor_option(parser)
    parser.add_argument("--allow-mixed", action="store_true", help="compare runs from different hosts or cluster specs")
    parser.add_argument(
        "-o", "--output", metavar="PATH", type=output_path, default=DEFAULT_OUTPUT,
        help=f"file to write, or a folder to write report.html in (default: {DEFAULT_OUTPUT})",
    )  # fmt: skip
    add_db_option(parser)
    parser.set_defaults(func=cmd_report)


def output_path(text: str) -> Path:
    """Where the report goes: the file named, or ``report.html`` in a folder named; checked
    before the store is read, so a path that cannot be written costs nothing."""
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / "report.html"
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder; name a file to write, e.g. {path / 'report.html'}")
    blocking = next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{blocking} is a file, not a folder; choose another path for the report")
    return path


def cmd_report(args: argparse.Namespace) -> int:
    if args.ab and (args.baseline or args.candidate or args.history):
        raise DaskbenchError("--ab judges a group by its own rounds; drop --baseline, --candidate and --history")
    path = write_report(
        open_store(args),
        args.output,
        candidate=args.candidate,
        baseline=args.baseline,
        history=args.history,
        floors=floors(args),
        allow_mixed=args.allow_mixed,
        ab=args.ab,
    )
    print(f"wrote {path} ({format_bytes(path.stat().st_size)})")
    return 0
