"""``daskbench bisect --good RUN|SPEC --bad RUN|SPEC``: the first release that made the selected cases slower;
``daskbench bisect --repo PATH --good REF --bad REF``: the first commit of a git checkout that did.

Every input is checked (the runs found, the pins parsed, the moving package's releases listed and both
ends found on the index; or the checkout, both refs and their order) before anything is built or run;
then `daskbench.bisect.search.Bisection` runs the steps, each a lockstep A/B of the good environment against
the step's. Exit codes: 0 no regression between good and bad, 1 a first bad release (or commit) named,
2 could not run, 3 a step stayed undecided at ``--rounds-cap`` (``--resume NAME`` continues), 130
interrupted (finished steps are kept).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from daskbench import envs
from daskbench.bisect import plan as bisect_plan
from daskbench.bisect import search as bisect
from daskbench.bisect.again import again_command
from daskbench.cli.common import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNDECIDED,
    add_build_options,
    add_db_option,
    add_floor_option,
    add_group_option,
    add_pytest_args,
    build_options,
    print_wrapped,
    say,
    settings,
    whole_number,
)
from daskbench.cli.rounds import add_budget_options, add_metric_option, budget_seconds, metric_of
from daskbench.errors import DaskbenchError
from daskbench.judge.sequential import ROUNDS_LIMIT
from daskbench.lockstep.sessions import new_group_name, pytest_arguments
from daskbench.model import Run
from daskbench.store import Store
from daskbench.text import plural

PythonOf = Callable[[bisect_plan.Candidate], str]
#: The exit code of each way a bisection ends (`bisect.Outcome.kind`): undecided is neither a culprit nor
#: "could not run" (2, the bad inputs), so a script can tell "rerun with --resume" from "fix the command".
EXITS = {"none": EXIT_OK, "culprit": EXIT_REGRESSION, "undecided": EXIT_UNDECIDED}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bisect",
        help="find the first release (or commit of a git checkout) between a good and a bad end that made the "
        "selected cases slower",
        description="Bisect the releases of the package that differs between --good and --bad (dask and "
        "distributed move together), or with --repo the commits of a local git checkout of a package (each "
        "installed from its source tree), each step an interleaved lockstep A/B of the good environment (side A) "
        "against the step's (side B), rounds until decided. Step 0 confirms bad against good; an undecided "
        "step gets twice the rounds, up to --rounds-cap, never a guess. Steps print as they finish (stdout), "
        "progress goes to stderr, and each step's runs are tagged bisect=NAME in the store.",
        epilog="example: daskbench bisect --good dask==2026.6.0,distributed==2026.6.0 --bad 1a2b3c4d --inherit "
        "-- -k ocean --size tiny; daskbench bisect --repo ~/src/dask --good v2026.6.0 --bad main --inherit -- -k "
        "ocean; exit codes: 0 no regression between good and bad, 1 first bad release or commit named, 2 could "
        "not run, 3 a step stayed undecided (--resume NAME continues), 130 interrupted",
    )
    parser.add_argument(
        "--good",
        metavar="RUN|SPEC|REF",
        help="the good end: a run id (prefix) or pins NAME==V,...; with --repo a commit, branch or tag",
    )
    parser.add_argument(
        "--bad",
        metavar="RUN|SPEC|REF",
        help="the bad end: a run id (prefix) or pins NAME==V,...; with --repo a commit, branch or tag",
    )
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="bisect the commits of this local git checkout of a package (first-parent, good..bad), "
        "installing each commit's source tree",
    )
    parser.add_argument(
        "--only",
        metavar="NAME,...",
        help="bisect only these packages when the ends differ in more (dask,distributed count as one)",
    )
    parser.add_argument(
        "--inherit",
        action="store_true",
        help="each environment is an overlay over this interpreter's packages holding only the "
        "bisected package(s): seconds to build (default: the good end's whole version set)",
    )
    add_group_option(
        parser,
        "name of the bisection (default: bisect-<date-time>), tagged on its runs and starting its steps' A/B groups",
        "--name",
    )
    parser.add_argument("--resume", metavar="NAME", help="continue bisection NAME: its finished steps are reused")
    parser.add_argument(
        "--rounds-cap",
        type=whole_number(3, ROUNDS_LIMIT, "a number of rounds", "--rounds-cap 120"),
        default=bisect.ROUNDS_CAP,
        help=f"most rounds an undecided step is raised to (default {bisect.ROUNDS_CAP})",
    )
    add_budget_options(
        parser, rounds=" in a step's first attempt", minutes=" in one attempt of a step", whole="bisection"
    )
    add_metric_option(parser, "a step is judged by (default runtime_s)")
    add_floor_option(parser)
    add_db_option(parser)
    add_build_options(parser)
    add_pytest_args(parser)
    parser.set_defaults(func=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    if args.rounds_cap < args.max_rounds:
        raise DaskbenchError(f"--rounds-cap {args.rounds_cap} is below --max-rounds {args.max_rounds}")
    store = _store(args)
    name, stored = _name(args, store)
    ends = _ends(args, store, name)
    repo = _repo(args, store, name)
    plan, python_of = _commits(args, repo, ends) if repo else _releases(args, store, ends)
    _say_header(name, plan, repo)
    runner = bisect.Bisection(
        name,
        store,
        settings(args).db,
        pytest_args,
        python_of,
        ends,
        repo=str(repo or ""),
        floors=settings(args).floor or {},
        max_rounds=args.max_rounds,
        rounds_cap=args.rounds_cap,
        max_seconds=args.max_time * 60,
        say=say,
        show=print_wrapped,
        stored={step.label: step for step in stored},
        metric=metric_of(args),
        budget=budget_seconds(args),
    )
    try:
        outcome = runner.run(plan)
    except KeyboardInterrupt:  # a step tagged just as Ctrl-C came counts too
        _say_again(args, pytest_args, name, kept=bool(runner.done or stored or _has_steps(store, name)))
        raise
    for line in bisect.outcome_lines(outcome, name, args.rounds_cap):
        print_wrapped(line)
    if outcome.kind == "undecided":
        more = {"--resume": name, "--rounds-cap": str(2 * args.rounds_cap)}
        for line in again_command(getattr(args, "given_args", ()), pytest_args, more):
            print(f"  {line}", flush=True)
    for line in runner.spent.lines():
        say(f"bisect: {line}")
    return EXITS[outcome.kind]


def _say_header(name: str, plan: bisect_plan.BisectPlan, repo: Path | None) -> None:
    between = plural(len(plan.candidates) - 1, "commit" if repo else "release")
    say(
        f"bisect {name}: {plan.good.describe()} (good) .. {plan.candidates[-1].describe()} (bad): "
        f"{between} between, at most {plan.max_steps()} steps"
    )
    for note in plan.notes:
        say(f"bisect: note: {note}")


def _say_again(args: argparse.Namespace, pytest_args: list[str], name: str, *, kept: bool) -> None:
    """After Ctrl-C, the whole command that continues the bisection (its finished steps ``kept``), or, when none
    is stored (``--resume`` would find no such bisection), the one that starts it again."""
    if kept:
        say("bisect: interrupted; finished steps are kept. Continue with:")
    else:
        say("bisect: interrupted before any step finished. Start it again with:")
    again = {"--resume": name} if kept else {"--group": name}
    for line in again_command(getattr(args, "given_args", ()), pytest_args, again):
        say(f"  {line}", wrap=False)


def _store(args: argparse.Namespace) -> Store:
    """The store; created only when neither end names a run (a mistyped --db is then not a new store)."""
    names_run = not args.repo and any(text and "==" not in text for text in (args.good, args.bad))
    return Store(settings(args).db, create=not (names_run or args.resume))


def _name(args: argparse.Namespace, store: Store) -> tuple[str, list[bisect.Step]]:
    """The bisection's name and its stored steps: --resume continues one, --group must be new."""
    if args.resume and args.group and args.group != args.resume:
        raise DaskbenchError(f"--group {args.group} and --resume {args.resume} name two bisections; give one")
    name = args.resume or args.group or new_group_name("bisect")
    stored = bisect.stored_steps(store, name, settings(args).floor or {})
    if args.resume and bisect.stored_ends(store, name) is None:
        raise DaskbenchError(f"no bisection {name!r} in {store.display_url} (no finished step); start it with --group")
    if not args.resume and stored:
        raise DaskbenchError(f"bisection {name!r} exists already: continue it with --resume {name}, or pick a --group")
    return name, stored


def _ends(args: argparse.Namespace, store: Store, name: str) -> tuple[str, str]:
    """--good and --bad as given, or (resuming) as the bisection was started; one line when they differ."""
    found = bisect.stored_ends(store, name) if args.resume else None
    good, bad = args.good or (found and found[0]), args.bad or (found and found[1])
    if found is not None and (good, bad) != found:
        raise DaskbenchError(
            f"bisection {name} ran with --good {found[0]} --bad {found[1]}; resume it with those (or leave both out)"
        )
    if not good or not bad:
        form = "REF" if args.repo else "RUN|NAME==VERSION,..."
        raise DaskbenchError(f"give both ends: --good {form} --bad {form}")
    return good, bad


def _repo(args: argparse.Namespace, store: Store, name: str) -> Path | None:
    """The checkout whose commits are bisected: --repo, or (resuming) the one the bisection ran on; None:
    releases. One line for a folder that is not a git checkout, or --only (it names packages)."""
    found = bisect.stored_repo(store, name) if args.resume else None
    given: str | None = args.repo or found
    if given is None:
        return None
    if args.only:
        raise DaskbenchError("--only names packages to bisect; with --repo the commits of the checkout are bisected")
    repo = envs.git_checkout(given, "--repo")
    if found and repo != Path(found):
        raise DaskbenchError(f"bisection {name} ran with --repo {found}; resume it with that (or leave it out)")
    return repo


def _commits(args: argparse.Namespace, repo: Path, ends: tuple[str, str]) -> tuple[bisect_plan.BisectPlan, PythonOf]:
    """The commits after good up to bad, and how a commit's environment is built."""
    plan = bisect_plan.commit_plan(repo, *ends)
    return plan, _commit_maker(args, repo, build_options(args))


def _releases(args: argparse.Namespace, store: Store, ends: tuple[str, str]) -> tuple[bisect_plan.BisectPlan, PythonOf]:
    """The releases after good up to bad, and how a release's environment is built."""
    good, bad = (_end(store, text, flag) for text, flag in zip(ends, ("--good", "--bad"), strict=True))
    options = build_options(args)
    return _plan(args, good[1], bad[1], options["index"]), _python_maker(args, good, options)


def _end(store: Store, text: str, flag: str) -> tuple[Run | None, dict[str, str]]:
    """A run (its recorded versions) or pins: ``standin==1.0`` or ``dask==X,distributed==X``."""
    if "==" in text:
        return None, envs.parse_pins(text, flag)
    run = store.run(text)
    return run, bisect_plan.recorded_pins(run)


def _plan(
    args: argparse.Namespace, good: Mapping[str, str], bad: Mapping[str, str], index: envs.Index
) -> bisect_plan.BisectPlan:
    """The moving packages and their candidate releases, listed from the index."""
    only = envs.parse_names(args.only, "--only") if args.only else None
    moving = bisect_plan.moving_packages(good, bad, only)
    listed = {package: envs.available_versions(package, index, args.installer) for package in moving}
    return bisect_plan.make_plan(good, bad, moving, listed, index.describe("pip"))


def _python_maker(
    args: argparse.Namespace, good: tuple[Run | None, dict[str, str]], options: dict[str, Any]
) -> PythonOf:
    """Builds (once, cached) a candidate's environment: an overlay of the candidate's pins with
    --inherit, else the good end's versions with the candidate's replacing them."""

    def python_of(candidate: bisect_plan.Candidate) -> str:
        pins, source = dict(candidate.pins), candidate.describe()
        if args.inherit:
            spec = envs.spec_from_pins(pins, with_daskbench=False, source=source)
        elif good[0] is not None:
            spec = envs.spec_from_run(good[0], overrides=pins)
        else:
            spec = envs.spec_from_pins({**good[1], **pins}, source=source)
        # every step gets the libraries of the good end's era (envs.known), so it differs in the bisected package
        return str(envs.build(spec, say=say, inherit=args.inherit, era_from=good[1], **options))

    return python_of


def _commit_maker(args: argparse.Namespace, repo: Path, options: dict[str, Any]) -> PythonOf:
    """Builds (once, cached) a commit's environment from its source tree (`envs.exported`): with --inherit
    an overlay holding it alone, else the tree with its dependencies plus this daskbench."""

    def python_of(candidate: bisect_plan.Candidate) -> str:
        tree = envs.exported(repo, candidate.commit, options["cache"])
        spec = envs.spec_from_pins(
            {}, with_daskbench=not args.inherit, source=f"commit {candidate.describe()}", sources=(str(tree),)
        )
        return str(envs.build(spec, say=say, inherit=args.inherit, **options))

    return python_of


def _has_steps(store: Store, name: str) -> bool:
    """Whether the store holds a finished step of bisection ``name`` (its runs tagged)."""
    try:
        return bool(bisect.stored_steps(store, name))
    except DaskbenchError:
        return False
