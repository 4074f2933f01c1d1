"""``daskbench ab``: the suite in two environments, interleaved in balanced rounds, judged per round.

Arguments after ``--`` go to each ``pytest -m benchmark`` session (e.g. ``-- -k ocean
--size tiny``). Exit codes like ``compare``: 0 nothing regressed, 1 B regressed or newly
fails, 2 could not run; Ctrl-C keeps the finished rounds (judge them with
``daskbench compare --ab GROUP``, or continue with ``daskbench ab --group GROUP``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from daskbench.ab.sessions import MAX_ROUNDS, GroupRunner, Side, check_side, new_group_name, parse_env, pytest_arguments
from daskbench.cli.common import (
    add_db_option,
    add_floor_option,
    add_format_option,
    floors,
    open_store,
    settings,
    whole_number,
)
from daskbench.cli.compare import print_comparison
from daskbench.judge.compare import compare
from daskbench.judge.selection import Selection


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ab",
        help="run the suite in two environments, interleaved (ABBA...), and judge B against A per round",
        description="Run `pytest -m benchmark` sessions of side A and side B alternately in balanced rounds "
        "(A B, B A, A B, ...), tag their runs with the group, side and round, and judge each case by its "
        "per-round ratios B/A. A side is a python (another venv: another dask) plus environment variables.",
        epilog="example: daskbench ab --rounds 5 --b-env DASKBENCH_SATURATION=inf -- -k array --size tiny; "
        "exit codes: 0 nothing regressed, 1 B regressed or newly fails, 2 could not run, 130 interrupted",
    )
    parser.add_argument(
        "--rounds",
        type=whole_number(1, MAX_ROUNDS, "rounds", "--rounds 5"),
        default=5,
        help="rounds of one A and one B session (default 5)",
    )
    for side in ("a", "b"):
        parser.add_argument(f"--{side}-python", metavar="PYTHON", default=sys.executable,
                            help=f"interpreter of side {side.upper()} (default: this one)")  # fmt: skip
        parser.add_argument(f"--{side}-env", metavar="KEY=VALUE", action="append", default=[],
                            help=f"environment variable for side {side.upper()} (repeatable)")  # fmt: skip
    parser.add_argument("--group", help="name of the group (default: ab-<date-time>); an existing group is continued")
    add_floor_option(parser)
    add_format_option(parser)
    add_db_option(parser)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then arguments for pytest -m benchmark")
    parser.set_defaults(func=cmd_ab)


def cmd_ab(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    chosen = floors(args)
    sides = {
        "A": Side("A", args.a_python, parse_env(args.a_env, "--a-env")),
        "B": Side("B", args.b_python, parse_env(args.b_env, "--b-env")),
    }
    if sides["A"] == Side("A", sides["B"].python, sides["B"].env):
        print("ab: sides A and B are the same environment: this is an A/A check of the noise", file=sys.stderr)
    for side in sides.values():
        check_side(side)
    store, group = open_store(args), args.group or new_group_name("ab")
    runner = GroupRunner(store, settings(args).db, group, sides, pytest_args,
                         say=lambda line: print(line, file=sys.stderr, flush=True))  # fmt: skip
    try:
        runner.run(args.rounds)
    except KeyboardInterrupt:
        print(f"ab: interrupted; finished rounds are kept. Judge them: daskbench compare --ab {group}; "
              f"continue: daskbench ab --group {group} --rounds {args.rounds} ...", file=sys.stderr)  # fmt: skip
        raise
    return _judge(args, store, group, chosen)


def _judge(args: argparse.Namespace, store: Any, group: str, floors: dict[str, float] | None) -> int:
    chosen = Selection(ab_group=group, floors=floors or {})
    return print_comparison(compare(store, chosen), args.format, {"ab_group": group})
