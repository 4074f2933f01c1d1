"""``daskbench bisect --good RUN|SPEC --bad RUN|SPEC``: the first release that made the selected cases slower.

Every input is checked (the runs found, the pins parsed, the moving package's releases listed and both
ends found on the index) before anything is built or run; then `daskbench.ab.bisect.Bisection` runs the
steps, each a lockstep A/B of the good environment against the step's. Exit codes: 0 no regression
between good and bad, 1 a first bad release named, 2 could not run or a step stayed undecided at
``--rounds-cap`` (``--resume NAME`` continues), 130 interrupted (finished steps are kept).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

from daskbench import envs
from daskbench.ab import bisect
from daskbench.ab.sessions import MAX_ROUNDS, new_group_name, pytest_arguments
from daskbench.cli.ab import minutes_value
from daskbench.cli.common import add_db_option, add_floor_option, settings, whole_number
from daskbench.cli.env import add_build_options, build_options
from daskbench.errors import DaskbenchError
from daskbench.model import Run
from daskbench.store import Store

EXIT_NONE, EXIT_CULPRIT, EXIT_UNDECIDED = 0, 1, 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bisect",
        help="find the first release between a good and a bad version set that made the selected cases slower",
        description="Bisect the releases of the package that differs between --good and --bad (dask and "
        "distributed move together), each step an interleaved lockstep A/B of the good environment (side A) "
        "against the step's (side B), rounds until decided. Step 0 confirms bad against good; an undecided "
        "step gets twice the rounds, up to --rounds-cap, never a guess. Steps print as they finish (stdout), "
        "progress goes to stderr, and each step's runs are tagged bisect=NAME in the store.",
        epilog="example: daskbench bisect --good dask==2026.6.0,distributed==2026.6.0 --bad 1a2b3c4d --inherit "
        "-- -k ocean --size tiny; exit codes: 0 no regression between good and bad, 1 first bad release "
        "named, 2 could not run or a step stayed undecided (--resume NAME continues), 130 interrupted",
    )
    parser.add_argument("--good", metavar="RUN|SPEC", help="the good end: a run id (prefix) or pins NAME==V,...")
    parser.add_argument("--bad", metavar="RUN|SPEC", help="the bad end: a run id (prefix) or pins NAME==V,...")
    parser.add_argument("--only", metavar="NAME,...",
                        help="bisect only these packages when the ends differ in more (dask,distributed count as one)")  # fmt: skip
    parser.add_argument("--inherit", action="store_true",
                        help="each environment is an overlay over this interpreter's packages holding only the "
                        "bisected package(s): seconds to build (default: the good end's whole version set)")  # fmt: skip
    parser.add_argument("--name", help="name of the bisection (default: bisect-<date-time>), tagged on its runs")
    parser.add_argument("--resume", metavar="NAME", help="continue bisection NAME: its finished steps are reused")
    parser.add_argument("--max-rounds", type=whole_number(3, MAX_ROUNDS, "rounds", "--max-rounds 30"),
                        default=bisect.MAX_ROUNDS,
                        help=f"most rounds of one case in a step's first attempt (default {bisect.MAX_ROUNDS})")  # fmt: skip
    parser.add_argument("--rounds-cap", type=whole_number(3, MAX_ROUNDS, "rounds", "--rounds-cap 120"),
                        default=bisect.ROUNDS_CAP,
                        help=f"most rounds an undecided step is raised to (default {bisect.ROUNDS_CAP})")  # fmt: skip
    parser.add_argument("--max-time", type=minutes_value, default=10.0, metavar="MINUTES",
                        help="most minutes of one case in one attempt of a step (default 10)")  # fmt: skip
    add_floor_option(parser)
    add_db_option(parser)
    add_build_options(parser)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then arguments for pytest -m benchmark")
    parser.set_defaults(func=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    if args.rounds_cap < args.max_rounds:
        raise DaskbenchError(f"--rounds-cap {args.rounds_cap} is below --max-rounds {args.max_rounds}")
    store = _store(args)
    name, stored = _name(args, store)
    good_text, bad_text = _ends(args, store, name)
    good, bad = (_end(store, text, flag) for text, flag in ((good_text, "--good"), (bad_text, "--bad")))
    options = build_options(args)
    plan = _plan(args, good[1], bad[1], options["index"])
    _say(f"bisect {name}: {plan.good.describe()} (good) .. {plan.candidates[-1].describe()} (bad): "
         f"{len(plan.candidates) - 1} releases between, at most {plan.max_steps()} steps")  # fmt: skip
    for note in plan.notes:
        _say(f"bisect: note: {note}")
    floors = settings(args).floor or {}
    runner = bisect.Bisection(
        name, store, settings(args).db, pytest_args, _python_maker(args, good, options), (good_text, bad_text),
        floors=floors, max_rounds=args.max_rounds, rounds_cap=args.rounds_cap, max_seconds=args.max_time * 60,
        say=_say, show=_show, stored={step.label: step for step in stored},
    )  # fmt: skip
    try:
        outcome = runner.run(plan)
    except KeyboardInterrupt:
        _say(f"bisect: interrupted; finished steps are kept. Continue: daskbench bisect --resume {name} ...")
        raise
    for line in bisect.outcome_lines(outcome, name, args.rounds_cap):
        _show(line)
    return {"none": EXIT_NONE, "culprit": EXIT_CULPRIT}.get(outcome.kind, EXIT_UNDECIDED)


def _store(args: argparse.Namespace) -> Store:
    """The store; created only when neither end names a run (a mistyped --db is then not a new store)."""
    names_run = any(text and "==" not in text for text in (args.good, args.bad)) or args.resume
    return Store(settings(args).db, create=not names_run)


def _name(args: argparse.Namespace, store: Store) -> tuple[str, list[bisect.Step]]:
    """The bisection's name and its stored steps: --resume continues one, --name must be new."""
    if args.resume and args.name and args.name != args.resume:
        raise DaskbenchError(f"--name {args.name} and --resume {args.resume} name two bisections; give one")
    name = args.resume or args.name or new_group_name("bisect")
    stored = bisect.stored_steps(store, name)
    if args.resume and bisect.stored_ends(store, name) is None:
        raise DaskbenchError(f"no bisection {name!r} in {store.display_url} (no finished step); start it with --name")
    if not args.resume and stored:
        raise DaskbenchError(f"bisection {name!r} exists already: continue it with --resume {name}, or pick a --name")
    return name, stored


def _ends(args: argparse.Namespace, store: Store, name: str) -> tuple[str, str]:
    """--good and --bad as given, or (resuming) as the bisection was started; one line when they differ."""
    found = bisect.stored_ends(store, name) if args.resume else None
    good, bad = args.good or (found and found[0]), args.bad or (found and found[1])
    if found is not None and (good, bad) != found:
        raise DaskbenchError(f"bisection {name} ran with --good {found[0]} --bad {found[1]}; resume it with those "
                             "(or leave both out)")  # fmt: skip
    if not good or not bad:
        raise DaskbenchError("give both ends: --good RUN|NAME==VERSION,... --bad RUN|NAME==VERSION,...")
    return good, bad


def _end(store: Store, text: str, flag: str) -> tuple[Run | None, dict[str, str]]:
    """A run (its recorded versions) or pins: ``standin==1.0`` or ``dask==X,distributed==X``."""
    if "==" in text:
        return None, envs.parse_pins(text, flag)
    run = store.run(text)
    return run, bisect.recorded_pins(run)


def _plan(args: argparse.Namespace, good: Mapping[str, str], bad: Mapping[str, str], index: envs.Index) -> bisect.Plan:
    """The moving packages and their candidate releases, listed from the index."""
    only = envs.parse_names(args.only, "--only") if args.only else None
    moving = bisect.moving_packages(good, bad, only)
    listed = {package: envs.available_versions(package, index) for package in moving}
    return bisect.make_plan(good, bad, moving, listed, index.describe("pip"))


def _python_maker(
    args: argparse.Namespace, good: tuple[Run | None, dict[str, str]], options: dict[str, Any]
) -> Callable[[bisect.Candidate], str]:
    """Builds (once, cached) a candidate's environment: an overlay of the candidate's pins with
    --inherit, else the good end's versions with the candidate's replacing them."""

    def python_of(candidate: bisect.Candidate) -> str:
        pins, source = dict(candidate.pins), candidate.describe()
        if args.inherit:
            spec = envs.spec_from_pins(pins, with_daskbench=False, source=source)
        elif good[0] is not None:
            spec = envs.spec_from_run(good[0], overrides=pins)
        else:
            spec = envs.spec_from_pins({**good[1], **pins}, source=source)
        return str(envs.build(spec, say=_say, inherit=args.inherit, **options))

    return python_of


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _show(line: str) -> None:
    print(line, flush=True)
