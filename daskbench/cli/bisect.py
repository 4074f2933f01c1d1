"""``daskbench bisect --good RUN|SPEC --bad RUN|SPEC``: the first release that made the selected cases slower;
``daskbench bisect --repo PATH --good REF --bad REF``: the first commit of a git checkout that did.

Every input is checked (the runs found, the pins parsed, the moving package's releases listed and both
ends found on the index; or the checkout, both refs and their order) before anything is built or run;
then `daskbench.bisect.search.Bisection` runs the steps, each a lockstep A/B of the good environment against
the step's. Exit codes: 0 no regression between good and bad, 1 a first bad release (or commit) named,
2 could not run, 3 a step stayed undecided at ``--rounds-cap`` (``--group NAME`` continues it), 130
interrupted (finished steps are kept; ``--group NAME`` continues).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from daskbench import envs
from daskbench.bisect import plan as bisect_plan
from daskbench.bisect import points
from daskbench.bisect import search as bisect
from daskbench.bisect.again import again_command
from daskbench.cli.app import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from daskbench.cli.common_args import (
    add_round_options,
    budget_seconds,
    build_options,
    floors,
    metric_of,
    settings,
)
from daskbench.cli.output import print_wrapped
from daskbench.cli.values import whole_number
from daskbench.errors import DaskbenchError
from daskbench.judge.sequential import ROUNDS_LIMIT
from daskbench.lockstep.sessions import new_group_name, pytest_arguments
from daskbench.model import Run
from daskbench.store import Store
from daskbench.text import plural, say

PythonOf = Callable[[bisect_plan.Candidate], str]
#: The exit code of each way a bisection ends (`bisect.Outcome.kind`): undecided is neither a culprit nor
#: "could not run" (2, the bad inputs), so a script can tell "continue with --group" from "fix the command".
EXITS = {"none": EXIT_OK, "culprit": EXIT_REGRESSION, "undecided": EXIT_UNDECIDED, "budget": EXIT_UNDECIDED}


#: ``bisect``'s texts (add_parser's keywords).
TEXTS = {
    "help": "find the first release (or commit of a git checkout) between a good and a bad end that made the "
    "selected cases slower",
    "description": "Bisect the releases of the package that differs between --good and --bad (dask and "
    "distributed move together), or with --repo the commits of a local git checkout of a package (each "
    "installed from its source tree), each step an interleaved lockstep A/B of the good environment (side A) "
    "against the step's (side B), rounds until decided. Step 0 confirms bad against good; an undecided "
    "step gets twice the rounds, up to --rounds-cap, never a guess. Steps print as they finish (stdout), "
    "progress goes to stderr, and each step's runs are tagged bisect=NAME in the store.",
    "epilog": "example: daskbench bisect --good dask==2026.6.0,distributed==2026.6.0 --bad 1a2b3c4d --inherit "
    "-- -k ocean --size tiny; daskbench bisect --repo ~/src/dask --good v2026.6.0 --bad main --inherit -- -k "
    "ocean; exit codes: 0 no regression between good and bad, 1 first bad release or commit named, 2 could "
    "not run, 3 a step stayed undecided (--group NAME continues), 130 interrupted",
}
#: The help of ``bisect``'s own options.
HELP = {
    "--good": "the good end: a run id (prefix) or pins NAME==V,...; with --repo a commit, branch or tag",
    "--bad": "the bad end: a run id (prefix) or pins NAME==V,...; with --repo a commit, branch or tag",
    "--repo": "bisect the commits of this local git checkout of a package (first-parent, good..bad), installing "
    "each commit's source tree",
    "--other-repo": "with --repo: a checkout of the package released with it (distributed for dask's, dask for "
    "distributed's); each step gets its last commit at or before the step's commit (default: the release the "
    "step's tree pins)",
    "--only": "bisect only these packages when the ends differ in more (dask,distributed count as one)",
    "--inherit": "each environment is an overlay over this interpreter's packages holding only the bisected "
    "package(s): seconds to build (default: the good end's whole version set)",
    "--rounds-cap": f"most rounds an undecided step is raised to (default {bisect.ROUNDS_CAP})",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bisect", **TEXTS)
    for flag in ("--good", "--bad"):
        parser.add_argument(flag, metavar="RUN|SPEC|REF", help=HELP[flag])
    parser.add_argument("--repo", metavar="PATH", help=HELP["--repo"])
    parser.add_argument("--other-repo", metavar="PATH", help=HELP["--other-repo"])
    parser.add_argument("--only", metavar="NAME,...", help=HELP["--only"])
    parser.add_argument("--inherit", action="store_true", help=HELP["--inherit"])
    parser.add_argument(
        "--rounds-cap",
        type=whole_number(3, ROUNDS_LIMIT, "a number of rounds", "--rounds-cap 120"),
        default=bisect.ROUNDS_CAP,
        help=HELP["--rounds-cap"],
    )
    add_round_options(parser, "bisect")
    parser.set_defaults(func=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    pytest_arguments(args.pytest_args)  # checked before anything else
    if args.rounds_cap < args.max_rounds:
        raise DaskbenchError(f"--rounds-cap {args.rounds_cap} is below --max-rounds {args.max_rounds}")
    if args.other_repo and not (args.repo or args.group):
        raise DaskbenchError("--other-repo goes with --repo (a checkout whose commits are bisected); give --repo")
    store = _store(args)
    name, stored = _name(args, store)
    continued = bisect.stored_ends(store, name) is not None
    ends = _ends(args, store, name, continued)
    repo = _repo(args, store, name, continued)
    other = _other_repo(args, repo, bisect.stored_repo(store, name, bisect.OTHER_REPO_TAG)) if repo else None
    plan, python_of = _commits(args, repo, ends, other) if repo else _releases(args, store, ends)
    _say_header(name, plan, repo)
    runner = _runner(args, store, name, stored, python_of, ends, (repo, other[1] if other else None))
    outcome = _run(args, runner, plan, store, name)
    for line in bisect.outcome_lines(outcome, name, args.rounds_cap):
        print_wrapped(line)
    _say_more(args, outcome.kind, name)
    for line in runner.spent.lines():
        say(f"bisect: {line}")
    return EXITS[outcome.kind]


def _runner(
    args: argparse.Namespace,
    store: Store,
    name: str,
    stored: list[bisect.Step],
    python_of: PythonOf,
    ends: tuple[str, str],
    repos: tuple[Path | None, Path | None],
) -> bisect.Bisection:
    """The bisection of these ends (of the commits of ``repos[0]``, their partners from ``repos[1]``; none:
    releases), its stored steps reused, asked as the round options say."""
    return bisect.Bisection(
        name,
        store,
        settings(args).db,
        pytest_arguments(args.pytest_args),
        python_of,
        ends,
        repo=str(repos[0] or ""),
        other_repo=str(repos[1] or ""),
        floors=floors(args),
        max_rounds=args.max_rounds,
        rounds_cap=args.rounds_cap,
        max_seconds=args.max_time * 60,
        say=say,
        show=print_wrapped,
        stored={step.label: step for step in stored},
        metric=metric_of(args),
        budget=budget_seconds(args),
    )


def _run(
    args: argparse.Namespace, runner: bisect.Bisection, plan: bisect_plan.BisectPlan, store: Store, name: str
) -> bisect.Outcome:
    """The bisection's steps; on Ctrl-C, the whole command that continues it (or starts it again: nothing stored)."""
    try:
        return runner.run(plan)
    except KeyboardInterrupt:  # a step tagged just as Ctrl-C came counts too
        _say_again(args, name, kept=bool(runner.done or runner.stored or _has_steps(store, name)))
        raise


def _say_more(args: argparse.Namespace, kind: str, name: str) -> None:
    """After an undecided step or a budget used up, the whole command that continues the bisection."""
    more = {"undecided": {"--group": name, "--rounds-cap": str(2 * args.rounds_cap)}, "budget": {"--group": name}}
    if kind in more:
        for line in again_command(getattr(args, "given_args", ()), pytest_arguments(args.pytest_args), more[kind]):
            print(f"  {line}", flush=True)


def _say_header(name: str, plan: bisect_plan.BisectPlan, repo: Path | None) -> None:
    between = plural(len(plan.candidates) - 1, "commit" if repo else "release")
    say(
        f"bisect {name}: {plan.good.describe()} (good) .. {plan.candidates[-1].describe()} (bad): "
        f"{between} between, at most {plan.max_steps()} steps"
    )
    for note in plan.notes:
        say(f"bisect: note: {note}")


def _say_again(args: argparse.Namespace, name: str, *, kept: bool) -> None:
    """After Ctrl-C, the whole command that continues the bisection (its finished steps ``kept``), or, when none
    is stored, the one that starts it again (``--group NAME`` does both)."""
    if kept:
        say("bisect: interrupted; finished steps are kept. Continue with:")
    else:
        say("bisect: interrupted before any step finished. Start it again with:")
    given = getattr(args, "given_args", ())
    for line in again_command(given, pytest_arguments(args.pytest_args), {"--group": name}):
        say(f"  {line}", wrap=False)


def _store(args: argparse.Namespace) -> Store:
    """The store; created only when the bisection is new and neither end names a run (a mistyped --db is then
    not a new store)."""
    names_run = not args.repo and any(text and "==" not in text for text in (args.good, args.bad))
    continuing = args.group and not (args.good or args.bad)
    return Store(settings(args).db, create=not (names_run or continuing))


def _name(args: argparse.Namespace, store: Store) -> tuple[str, list[bisect.Step]]:
    """The bisection's name (--group, else a new one) and its stored steps; one line for a --group that names
    no stored bisection and no ends to start it from."""
    name = args.group or new_group_name("bisect")
    if args.group and not (args.good and args.bad) and bisect.stored_ends(store, name) is None:
        raise DaskbenchError(
            f"no bisection {name!r} in {store.display_url} (no finished step); to start it give both ends: "
            "--good and --bad"
        )
    return name, bisect.stored_steps(store, name, floors(args))


def _ends(args: argparse.Namespace, store: Store, name: str, continued: bool) -> tuple[str, str]:
    """--good and --bad as given, or (continued) as the bisection was started; one line when they differ."""
    found = bisect.stored_ends(store, name) if continued else None
    good, bad = args.good or (found and found[0]), args.bad or (found and found[1])
    if found is not None and (good, bad) != found:
        raise DaskbenchError(
            f"bisection {name} ran with --good {found[0]} --bad {found[1]}; continue it with those (or leave both "
            "out), or start another with a new --group"
        )
    if not good or not bad:
        form = "REF" if args.repo else "RUN|NAME==VERSION,..."
        raise DaskbenchError(f"give both ends: --good {form} --bad {form}")
    return good, bad


def _repo(args: argparse.Namespace, store: Store, name: str, continued: bool) -> Path | None:
    """The checkout whose commits are bisected: --repo, or (continued) the one the bisection ran on; None:
    releases. One line for a folder that is not a git checkout, or --only (it names packages)."""
    found = bisect.stored_repo(store, name) if continued else None
    given: str | None = args.repo or found
    if given is None:
        if args.other_repo:  # a bisection of releases, continued or not
            raise DaskbenchError("--other-repo goes with --repo (a checkout whose commits are bisected); give --repo")
        return None
    if args.only:
        raise DaskbenchError("--only names packages to bisect; with --repo the commits of the checkout are bisected")
    repo = envs.git_checkout(given, "--repo")
    if found and repo != Path(found):
        raise DaskbenchError(f"bisection {name} ran with --repo {found}; continue it with that (or leave it out)")
    return repo


def _commits(
    args: argparse.Namespace, repo: Path, ends: tuple[str, str], other: tuple[str, Path] | None
) -> tuple[bisect_plan.BisectPlan, PythonOf]:
    """The commits after good up to bad, and how a commit's environment is built."""
    plan = bisect_plan.commit_plan(repo, *ends)
    return plan, _commit_maker(args, repo, plan.good.commit, other, build_options(args))


def _other_repo(args: argparse.Namespace, repo: Path, stored: str | None) -> tuple[str, Path] | None:
    """--other-repo's package and checkout, or (a bisection continued) the one it ran with; one line for one that
    is not a package's checkout, is --repo's, or is not the one a continued bisection ran with."""
    given: str | None = args.other_repo or stored
    if not given:
        return None
    checkout = envs.git_checkout(given, "--other-repo")
    if stored and checkout != Path(stored):
        raise DaskbenchError(
            f"this bisection ran with --other-repo {stored}; continue it with that (or leave it out), or start "
            "another with a new --group"
        )
    name = envs.project_name(checkout)
    if name is None:
        raise DaskbenchError(
            f"--other-repo {given}: its pyproject.toml names no package ([project] name); give a checkout "
            "of distributed (for a checkout of dask) or of dask"
        )
    if checkout == repo or name == envs.project_name(repo):
        raise DaskbenchError(f"--other-repo {given} is a checkout of {name} as --repo is; give the other one")
    return name, checkout


def _releases(args: argparse.Namespace, store: Store, ends: tuple[str, str]) -> tuple[bisect_plan.BisectPlan, PythonOf]:
    """The releases after good up to bad, and how a release's environment is built."""
    good, bad = (_end(store, text, flag) for text, flag in zip(ends, ("--good", "--bad"), strict=True))
    options = build_options(args)
    return _plan(args, good[1], bad[1], options.index), _python_maker(args, good, options)


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
    args: argparse.Namespace, good: tuple[Run | None, dict[str, str]], options: envs.BuildOptions
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
        return str(envs.build(spec, options, say=say, inherit=args.inherit, era_from=good[1]))

    return python_of


def _commit_maker(
    args: argparse.Namespace, repo: Path, good: str, other: tuple[str, Path] | None, options: envs.BuildOptions
) -> PythonOf:
    """Builds (once, cached) a commit's environment from its source tree (`envs.exported`) with the package
    released with it at a matching commit or release (`points.partner`): with --inherit an overlay holding those
    alone, else with their dependencies plus this daskbench, with the libraries of the good commit's release."""
    said: set[str] = set()
    tag = envs.followed_tag(repo, good)  # the release the good commit follows: every step gets its era's libraries
    good_release = tag.removeprefix("v") if tag else None

    def python_of(candidate: bisect_plan.Candidate) -> str:
        tree = envs.exported(repo, candidate.commit, options.cache)
        try:
            own = envs.project_name(tree) or envs.normalized(repo.name)
            found = points.partner(repo, candidate.commit, tree, other)
        except envs.InstallFailed:
            raise
        except DaskbenchError as exc:  # a tree whose project file does not even parse does not build: skipped
            raise envs.InstallFailed(str(exc)) from None
        if candidate.commit not in said:
            said.add(candidate.commit)
            beside = ", ".join(f"{name} {ref.text()}" for name, ref in found.refs.items())
            say(f"bisect: {candidate.label()}: {own} at that commit" + (f", {beside} ({found.how})" if beside else ""))
        point = {own: points.Ref("", candidate.commit), **found.refs}
        repos = {own: repo, **dict([other] if other else [])}
        era = {own: good_release} if good_release else None
        described = f"commit {candidate.describe()}"
        return points.point_python(point, repos, described, options, inherit=args.inherit, era_from=era, say=say)

    return python_of


def _has_steps(store: Store, name: str) -> bool:
    """Whether the store holds a finished step of bisection ``name`` (its runs tagged)."""
    try:
        return bool(bisect.stored_steps(store, name))
    except DaskbenchError:
        return False
