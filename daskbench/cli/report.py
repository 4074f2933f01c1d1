"""``daskbench report``: the comparison as one self-contained HTML file.

The same selection as ``daskbench compare`` (latest run against baseline ``main`` by
default, ``--baseline``/``--candidate`` for any two, ``--history N`` for trends); the
report never sets the exit code on a regression (``daskbench compare`` gates CI).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daskbench.cli.common_args import add_db_option, add_output_option, add_selection_options, open_store, selection
from daskbench.cli.output import check_report_bokeh, print_wrapped
from daskbench.errors import DaskbenchError, check_writable
from daskbench.store import Store, runstatus
from daskbench.text import format_bytes

DEFAULT_OUTPUT = "results/report.html"
#: --charts: the report's compact form forced on, off, or by the number of cases (`report.page.COMPACT_CASES`).
CHARTS = {"auto": None, "interactive": False, "compact": True}


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
    add_selection_options(parser, verb="report on")
    add_output_option(
        parser,
        f"file to write, or a folder to write report.html in (default: {DEFAULT_OUTPUT})",
        metavar="PATH",
        type=output_path,
        default=DEFAULT_OUTPUT,
    )
    parser.add_argument(
        "--charts",
        choices=tuple(CHARTS),
        default="auto",
        help="interactive (Bokeh) or compact (static SVG: written and drawn in seconds, for hundreds of cases) "
        "charts; auto: compact above 100 cases (default: %(default)s)",
    )
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
    check_writable(args.output, "-o")
    check_report_bokeh("report")
    from daskbench.report import write_report  # bokeh and jinja: only when a report is written

    store, chosen = open_store(args), selection(args)
    path = write_report(store, args.output, chosen, compact=CHARTS[args.charts])
    print(f"wrote {path} ({format_bytes(path.stat().st_size)})")
    if not (chosen.candidate or chosen.baseline or chosen.history or chosen.ab_group):
        _say_if_unfinished(store)
    return 0


def _say_if_unfinished(store: Store) -> None:
    """When no run has finished yet (the first one was interrupted), what the report shows and what to do."""
    try:
        runstatus.latest_finished(store)
    except runstatus.NoFinishedRun as none:
        print_wrapped(
            f"report: no run has finished yet; it shows the {none.status} run {none.newest.run_id[:8]} alone "
            "(what it measured before it stopped); run the benchmarks to the end for a report that compares"
        )
    except DaskbenchError:
        pass  # only comparison runs: the report said what it could
