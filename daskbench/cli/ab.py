"""``daskbench ab``: the suite in two environments, measured side by side, judged per round.

Two modes. **lockstep** (the default where it can run): one session per side, each with its
cluster started once, measuring each case in turn (A B, B A, ...) until its verdict is decided
(`daskbench.lockstep.engine`). **sessions**: one whole pytest session per side and round (ABBA), for a
cluster that cannot be measured twice at once: a running scheduler (``--cluster tcp://...``),
whose worker-saturation both sides would set. ``--mode auto`` picks lockstep unless the cluster
is a running scheduler, and says which it picked.

A side's interpreter is this one, ``--X-python PATH``, or (``--X-from RUN``) the environment rebuilt
from that run's recorded versions (`daskbench.envs`, as ``daskbench env RUN``), named in the header.

Arguments after ``--`` go to each ``pytest -m benchmark`` session (e.g. ``-- -k ocean --size
tiny``). Exit codes: 0 every case decided and nothing regressed, 1 B regressed or newly fails, 2 could
not run, 3 some case undecided (or nothing measured), 130 interrupted: the finished rounds are kept (judge them
with ``daskbench compare --group GROUP``, or continue with ``daskbench ab --group GROUP``). False alarms are
counted per suite (`daskbench.judge.suite`): the table's note says the suite-level rate.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from daskbench import envs
from daskbench.cli.app import EXIT_UNDECIDED, verdicts_exit
from daskbench.cli.common_args import (
    add_round_options,
    budget_seconds,
    build_options,
    floors,
    metric_of,
    open_store,
    settings,
)
from daskbench.cli.output import print_comparison
from daskbench.cli.values import whole_number
from daskbench.errors import DaskbenchError
from daskbench.judge import stats
from daskbench.judge.compare import AB_GROUP, compare, group_rounds
from daskbench.judge.selection import Selection
from daskbench.judge.sequential import REPEAT_WITHIN, ROUNDS_LIMIT, Question
from daskbench.judge.suite import SUITE_ALPHA, Family
from daskbench.lockstep.parts import GroupPlan, Spent, run_group
from daskbench.lockstep.sessions import (
    GroupRunner,
    Side,
    check_side,
    check_sides_differ,
    new_group_name,
    parse_env,
    pytest_arguments,
    side_tags,
)
from daskbench.model import Run
from daskbench.store import Store
from daskbench.text import plural, say
from daskbench.verdicts import Verdict

#: ``ab``'s texts (add_parser's keywords).
TEXTS = {
    "help": "measure the suite in two environments side by side and judge B against A per round",
    "description": "Measure side A and side B alternately and judge each case by its per-round ratios B/A, "
    "adding rounds until its verdict is decided (a sequential rule that keeps A/A false alarms under 5%). "
    "A side is a python (another venv: another dask) plus environment variables. Lockstep mode keeps one "
    "session per side alive and alternates measurement by measurement; sessions mode alternates whole "
    "pytest sessions (for a running scheduler, which both sides cannot use at once).",
    "epilog": "example: daskbench ab --b-python ../new/.venv/bin/python -- -k array --size tiny; "
    "exit codes: 0 every case decided, nothing regressed, 1 B regressed or newly fails, 2 could not run, "
    "3 some case undecided, 130 interrupted",
}
#: The help of each side's flags; ``{side}`` is A or B.
SIDE_HELP = {
    "python": "interpreter of side {side} (default: this one)",
    "from": "run side {side} in the environment rebuilt from this run's recorded versions (daskbench env RUN; "
    "built once, then reused)",
    "env": "environment variable for side {side} (repeatable)",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("ab", **TEXTS)
    parser.add_argument(
        "--mode",
        choices=("auto", "lockstep", "sessions"),
        default="auto",
        help="lockstep (one session per side, measuring in turn), sessions (a session per side "
        "and round), or auto: lockstep unless --cluster is a running scheduler (default)",
    )
    parser.add_argument(
        "--rounds",
        type=rounds_value,
        default=None,
        metavar="N|auto",
        help="rounds per case: auto (default) adds rounds until decided, N runs exactly N",
    )
    for side in ("a", "b"):
        texts = {name: text.format(side=side.upper()) for name, text in SIDE_HELP.items()}
        parser.add_argument(f"--{side}-python", metavar="PYTHON", help=texts["python"])
        parser.add_argument(f"--{side}-from", metavar="RUN", help=texts["from"])
        parser.add_argument(f"--{side}-env", metavar="KEY=VALUE", action="append", default=[], help=texts["env"])
    add_round_options(parser, "ab")
    parser.set_defaults(func=cmd_ab)


def rounds_value(text: str) -> int | None:
    """``--rounds``: ``auto`` (None) or a whole number of rounds."""
    if text == "auto":
        return None
    return whole_number(1, ROUNDS_LIMIT, "a number of rounds", "--rounds 5 or --rounds auto")(text)


def cmd_ab(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    rebuilt = args.a_from is not None or args.b_from is not None
    sides = resolve_sides(args, open_store(args) if rebuilt else None)
    check_sides_differ(sides, pytest_args)
    mode = _mode(args.mode, pytest_args, sides)
    if (sides["A"].python, sides["A"].env) == (sides["B"].python, sides["B"].env):
        say("ab: sides A and B are the same environment: this is an A/A check of the noise")
    for side in sides.values():
        check_side(side)
    store, group = open_store(args), args.group or new_group_name("ab")
    limits = floors(args)
    metric = metric_of(args)
    if mode != "lockstep" and (budget_seconds(args) is not None or metric != "runtime_s"):
        raise DaskbenchError("--budget and --metric need --mode lockstep (sessions mode runs whole sessions per round)")
    spent = None
    try:
        if mode == "lockstep":
            spent = _lockstep(args, store, group, sides, pytest_args, limits)
        else:
            _sessions(args, store, group, sides, pytest_args, limits)
    except KeyboardInterrupt:
        say(
            f"ab: interrupted; finished rounds are kept. Judge them: daskbench compare --group {group}; "
            f"continue: daskbench ab --group {group} ..."
        )
        raise
    chosen = Selection(ab_group=group, floors=limits)
    for line in spent.lines() if spent is not None else ():
        say(line)
    comparison = compare(store, chosen)
    print_comparison(comparison, args.format, {"ab_group": group, "ab_mode": mode})
    return _undecided(comparison.verdicts, group)


def _undecided(verdicts: Sequence[Verdict], group: str) -> int:
    """Exit 3, said in one line, when some case has no verdict yet (or nothing was measured); else 0."""
    code = verdicts_exit(verdicts)
    if code == EXIT_UNDECIDED:
        open_ = len({v.fingerprint for v in verdicts if v.verdict == "inconclusive"})
        said = f"{plural(open_, 'case')} undecided" if open_ else "nothing measured on both sides"
        say(f"ab: {said} (exit 3): more rounds (daskbench ab --group {group}, --max-rounds, --budget) decide them")
    return code


def resolve_sides(args: argparse.Namespace, store: Store | None) -> dict[str, Side]:
    """Each side's interpreter and variables: ``--X-python``, or the environment built from ``--X-from``'s
    record in ``store`` (every flag checked, both runs found and both specs made before anything is
    built), or this one."""
    variables = {name: parse_env(getattr(args, f"{name.lower()}_env"), f"--{name.lower()}-env") for name in "AB"}
    envs_from = {name: _env_from(args, store, name) for name in "AB"}
    options = build_options(args) if any(envs_from.values()) else envs.BuildOptions()
    sides = {}
    for name, found in envs_from.items():
        python = getattr(args, f"{name.lower()}_python") or sys.executable
        if found is not None:
            python = str(envs.build(found[1], options, say=say))
            say(
                f"ab: side {name} runs in the environment of run {found[0].run_id[:8]} ({found[1].describe()}): "
                f"{python}"
            )
        sides[name] = Side(name, python, variables[name], env_from=found[0].run_id if found else None)
    return sides


def _env_from(args: argparse.Namespace, store: Store | None, name: str) -> tuple[Run, envs.EnvSpec] | None:
    """The run of ``--X-from`` and the spec of its recorded versions (None without the flag)."""
    flag = name.lower()
    given = getattr(args, f"{flag}_from")
    if given is None:
        return None
    if getattr(args, f"{flag}_python"):
        raise DaskbenchError(f"--{flag}-python and --{flag}-from both choose side {name}'s interpreter; give one")
    if store is None:
        raise ValueError("resolve_sides: --a-from/--b-from need the store")
    run = store.run(given)
    return run, envs.spec_from_run(run)


def _mode(asked: str, pytest_args: list[str], sides: dict[str, Side]) -> str:
    """The mode to run: as asked, or lockstep unless a side measures on a running scheduler."""
    clusters = [_cluster_of(pytest_args, side) for side in sides.values()]
    shared = [cluster for cluster in clusters if cluster.startswith(("tcp://", "tls://"))]
    if asked == "lockstep" and shared:
        raise DaskbenchError(
            f"--mode lockstep needs two clusters at once; {shared[0]} is one running "
            "scheduler both sides would share: use --mode sessions"
        )
    if asked != "auto":
        return asked
    mode = "sessions" if shared else "lockstep"
    why = f"{shared[0]} is a running scheduler both sides share" if shared else "each side gets its own cluster"
    say(f"ab: mode {mode} ({why}; --mode to choose)")
    return mode


def _cluster_of(pytest_args: list[str], side: Side) -> str:
    """The ``--cluster`` a side's session will use: its pytest flag, else its environment, else local."""
    for index, arg in enumerate(pytest_args):
        if arg == "--cluster" and index + 1 < len(pytest_args):
            return pytest_args[index + 1]
        if arg.startswith("--cluster="):
            return arg.split("=", 1)[1]
    return side.env.get("DASKBENCH_CLUSTER") or os.environ.get("DASKBENCH_CLUSTER", "local")


def _lockstep(
    args: argparse.Namespace,
    store: Store,
    group: str,
    sides: dict[str, Side],
    pytest_args: list[str],
    floors: dict[str, float],
) -> Spent:
    """The group's next part(s): both sessions at once, every common case until decided (or, with
    --budget, a screening of every case and parts for the open ones until the budget ends)."""
    part = len(group_rounds(store, group))
    metric = metric_of(args)
    floor = floors.get(metric, stats.default_floor(metric))
    exact = args.rounds is not None  # --rounds N: N rounds, as asked, pooled (a change is not repeated)
    question = Question(
        floor,
        args.rounds or args.max_rounds,
        metric=metric,
        repeat_within=None if exact else REPEAT_WITHIN,
        family=Family(alpha=SUITE_ALPHA),  # false alarms counted over the suite (its cases found in the sessions)
    )
    budget = budget_seconds(args) if args.rounds is None else None
    within = f"; budget {budget / 60:g} min for all cases" if budget is not None else ""
    decides = f"; {metric} decides when a case stops" if metric != "runtime_s" else ""
    say(
        f"ab: lockstep group {group}, part {part + 1}: two clusters share this machine (each side's auto "
        f"memory per worker is halved); at most {question.max_rounds} rounds and {args.max_time:g} min per "
        f"case{within}{decides}"
    )
    spent = run_group(
        GroupPlan(
            group,
            sides,
            settings(args).db,
            pytest_args,
            question,
            max_seconds=args.max_time * 60 if args.rounds is None else float("inf"),
            budget=budget,
            first_part=part,
            exact=exact,
        ),
        say,
    )
    _tag_sides(store, group, sides)
    return spent


def _tag_sides(store: Store, group: str, sides: dict[str, Side]) -> None:
    """Say on each run of the group which python and which variable names (never values) it had."""
    for run in store.runs():
        side = sides.get(run.tags.get("ab_side", ""))
        if run.tags.get(AB_GROUP) == group and side is not None and "ab_python" not in run.tags:
            store.tag_run(run.run_id, side_tags(side))


def _sessions(
    args: argparse.Namespace,
    store: Store,
    group: str,
    sides: dict[str, Side],
    pytest_args: list[str],
    floors: dict[str, float],
) -> None:
    """Whole sessions per side and round (ABBA): N rounds, or with --rounds auto until every case is decided."""
    runner = GroupRunner(store, settings(args).db, group, sides, pytest_args, say=say)
    if args.rounds is not None:
        runner.run(args.rounds)
        return
    chosen = Selection(ab_group=group, floors=floors)
    runner.run(args.max_rounds, until=lambda: _all_decided(store, chosen), max_rounds=args.max_rounds)


def _all_decided(store: Store, chosen: Selection) -> bool:
    """Whether every case of the group has a decided runtime verdict (a failure needs no more rounds either)."""
    try:
        verdicts = compare(store, chosen).verdicts
    except DaskbenchError:
        return False
    return all(v.verdict != "inconclusive" for v in verdicts if v.metric == "runtime_s")
