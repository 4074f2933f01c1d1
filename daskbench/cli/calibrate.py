"""``daskbench calibrate``: what this setup can detect, measured on it (false alarms, planted slowdowns).

Arguments after ``--`` go to each ``pytest`` session (cluster options: ``--cluster``,
``--workers``, ``--saturation``, ``--threads-per-worker``...). The table it prints
carries the date, the machine and the versions, so it can be quoted as measured.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from daskbench import provenance
from daskbench.ab.calibrate import format_power, power_table, run_sessions
from daskbench.ab.sessions import new_group_name, pytest_arguments
from daskbench.cli.common import add_db_option, open_store, settings, whole_number
from daskbench.errors import DaskbenchError
from daskbench.judge import stats

MAX_SESSIONS = 500


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="measure what this setup can detect: false alarms and planted slowdowns of 1.05-1.50x",
        description="Run the bundled calibration benchmarks in N sessions on your cluster settings (each session "
        "measures an A/A pair and arms whose tasks burn 1.05x, 1.10x, 1.20x and 1.50x the CPU), then report, per "
        "cluster spec, how often an interleaved comparison of R rounds calls a change: the false-alarm rate and "
        "the detection rate per planted slowdown (from random subsets of R of the N sessions).",
        epilog="example: daskbench calibrate --sessions 20 --rounds 5 -- --workers 1 --saturation 1.1; "
        "exit codes: 0 measured, 2 could not run, 130 interrupted (finished sessions are kept: --group continues)",
    )
    parser.add_argument("--sessions", type=whole_number(2, MAX_SESSIONS, "sessions", "--sessions 20"), default=20,
                        help="sessions to run (default 20; 4x --rounds or more)")  # fmt: skip
    parser.add_argument("--rounds", type=whole_number(1, 100, "rounds", "--rounds 5"), default=5,
                        help="rounds of the comparisons judged (default 5, as daskbench ab)")  # fmt: skip
    parser.add_argument("--group", help="name of the calibration group (default: calibrate-<date-time>); continues one")
    parser.add_argument("--floor", type=float, default=None, help="runtime floor (default: the declared 1.10)")
    add_db_option(parser)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then cluster options for pytest")
    parser.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    if args.floor is not None and not 1.0 <= args.floor < 100:
        raise DaskbenchError(f"--floor {args.floor}: must be a ratio >= 1, e.g. --floor 1.1")
    store = open_store(args)
    group = args.group or new_group_name("calibrate")
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        stored = run_sessions(store, settings(args).db, group, args.sessions, pytest_args, say)
    except KeyboardInterrupt:
        say(f"calibrate: interrupted; finished sessions are kept: continue with daskbench calibrate --group {group}")
        raise
    floor = args.floor or stats.default_floor("runtime_s")
    rows = power_table(store, group, min(args.rounds, stored), floor=floor)
    print(_header(group, stored))
    print(format_power(rows, min(args.rounds, stored), floor))
    return 0


def _header(group: str, sessions: int) -> str:
    host, versions = provenance.host(), provenance.versions()
    return (
        f"daskbench calibrate: group {group}, {sessions} sessions, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
        f"{host.get('cpu_model', '?')}, {host.get('cores', '?')} cores; dask {versions.get('dask', '?')}, "
        f"distributed {versions.get('distributed', '?')}, daskbench {versions.get('daskbench', '?')}"
    )
