"""``daskbench calibrate``: what this setup can detect, measured on it (false alarms, planted slowdowns).

Arguments after ``--`` go to each ``pytest`` session (cluster options: ``--cluster``,
``--workers``, ``--saturation``, ``--threads-per-worker``...). The table it prints
carries the date, the machine and the versions, so it can be quoted as measured.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from daskbench import provenance
from daskbench.calibrate.run import Calibration, format_power, power_rows
from daskbench.cli.common_args import add_round_options, floors, open_store, settings
from daskbench.cli.output import print_wrapped
from daskbench.cli.values import whole_number
from daskbench.judge import stats
from daskbench.lockstep.sessions import new_group_name, pytest_arguments
from daskbench.text import say

MAX_COMPARISONS = 500


#: ``calibrate``'s texts (add_parser's keywords).
TEXTS = {
    "help": "measure what this setup can detect: false alarms and planted slowdowns of 1.05-1.50x",
    "description": "Run N lockstep A/B comparisons of the bundled calibration benchmarks on your cluster "
    "settings: side B's tasks burn 1.05x, 1.10x, 1.20x and 1.50x the CPU of side A's, and an A/A arm plants "
    "nothing. Each arm adds rounds until decided, as daskbench ab does. Then print, per arm, how often a "
    "change was called (for the A/A arm: the false alarms), the median rounds and minutes it took, and the "
    "effect measured beside the one planted.",
    "epilog": "example: daskbench calibrate --comparisons 20 -- --workers 1 --saturation 1.1 --size tiny; "
    "exit codes: 0 measured, 2 could not run, 130 interrupted (finished comparisons are kept: --group continues)",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("calibrate", **TEXTS)
    parser.add_argument(
        "--comparisons",
        type=whole_number(1, MAX_COMPARISONS, "a number of comparisons", "--comparisons 20"),
        default=20,
        help="lockstep comparisons to run (default 20)",
    )
    add_round_options(parser, "calibrate")
    parser.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    floor = floors(args).get("runtime_s", stats.default_floor("runtime_s"))
    store = open_store(args)
    group = args.group or new_group_name("calibrate")
    runner = Calibration(store, settings(args).db, group, pytest_args, floor, args.max_rounds, args.max_time * 60, say)
    try:
        stored = runner.run(args.comparisons)
    except KeyboardInterrupt:
        say(f"calibrate: interrupted; finished comparisons are kept: continue with daskbench calibrate --group {group}")
        raise
    print(_header(group, stored, floor))
    print(format_power(power_rows(store, group, floor)))
    for line in runner.spent.lines():
        print_wrapped(line)
    return 0


def _header(group: str, comparisons: int, floor: float) -> str:
    host, versions = provenance.host(), provenance.versions()
    return (
        f"daskbench calibrate: group {group}, {comparisons} lockstep comparisons, floor {floor:.2f}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {host.get('cpu_model', '?')}, {host.get('cores', '?')} cores; "
        f"dask {versions.get('dask', '?')}, distributed {versions.get('distributed', '?')}, "
        f"daskbench {versions.get('daskbench', '?')}"
    )
