"""``daskbench culprit --group CONFIRMATION``: the first bad commit (or release) of a regression confirmed side by
side, found unattended within a budget, and said on the regression's issue.

Reads the confirmation (``daskbench confirm``'s A/B group: the night's run, the last good run), judges the night
as ``confirm`` did (the same ``--history``/``--baseline``), keeps what the A/B confirmed, plans the route between
the two runs (`daskbench.culprit.route`: commits from a mirror of each package's repository, made once under
``--mirrors``; or releases), bisects it (`daskbench.culprit.hunt`) and writes what it found
(`daskbench.culprit.comment`) to the job summary and, with ``--github``, as a comment on each confirmed case's
issue. Run it with the interpreter the night ran in (``python -m daskbench culprit``): every step is an overlay
over it. Exit codes: 0 no culprit (nothing confirmed, or no regression between the ends), 1 a culprit named, 2
could not run, 3 undecided (a step, or the budget: run it again with more ``--budget``; its steps are reused).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from daskbench import alerts, envs
from daskbench.bisect import search
from daskbench.cli.app import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from daskbench.cli.common_args import (
    add_old_spellings,
    add_round_options,
    add_selection_options,
    build_options,
    metric_of,
    open_store,
    selection,
    settings,
)
from daskbench.cli.output import print_wrapped
from daskbench.cli.values import parse_duration, whole_number
from daskbench.culprit import comment, hunt, route
from daskbench.errors import DaskbenchError
from daskbench.github import API_ENV, DEFAULT_API, GitHub, open_alerts
from daskbench.judge import confirmed
from daskbench.judge.compare import compare, compare_group
from daskbench.judge.sequential import ROUNDS_LIMIT
from daskbench.lockstep.sessions import pytest_arguments
from daskbench.model import Run
from daskbench.store import Store
from daskbench.text import say
from daskbench.verdicts import Comparison

#: The budget of a hunt when neither --budget nor this variable gives one (``60m``: a GitHub Actions job).
BUDGET_ENV = "DASKBENCH_CULPRIT_BUDGET"
SUMMARY_HELP = "append the Markdown here (default: $GITHUB_STEP_SUMMARY; else stdout only)"
EXITS = {"none": EXIT_OK, "culprit": EXIT_REGRESSION, "undecided": EXIT_UNDECIDED, "budget": EXIT_UNDECIDED}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "culprit",
        help="find the first bad commit (or release) of a regression confirmed side by side, within a budget",
        description="Go on from a side-by-side confirmation (daskbench confirm --group GROUP) by itself: bisect "
        "between the last good run and the confirmed run over what changed as they recorded it (the commits of "
        "dask and distributed when they were installed from git, from a mirror of each repository made once "
        "under --mirrors; else their releases), dask first, then distributed; all confirmed cases in one search "
        "while they share a cause. Writes the first bad commit with the step table to the job summary and, with "
        "--github, as a comment on each confirmed case's issue. Run it with the interpreter the night ran in.",
        epilog="example: python -m daskbench culprit --history 20 --group confirm-1a2b3c4d --github dask/daskbench "
        "-- --size small; exit codes: 0 no culprit, 1 a culprit named, 2 could not run, 3 undecided (run it again "
        "with more --budget: its finished steps are reused)",
    )
    add_selection_options(parser, verb="judge (as the confirmation did)", group=False, floor=False)
    for action in parser._actions:  # the candidate's default here is the confirmation's run, not the latest
        if action.dest == "candidate":
            action.help = "the run the confirmation confirms (the default), judged as it was"
    parser.add_argument(
        "--name", metavar="NAME", help="the bisection's name (default culprit-RUN): running it again continues it"
    )
    parser.add_argument(
        "--mirrors",
        metavar="DIR",
        help=f"where the mirrors of the packages' repositories are kept (default ${envs.MIRRORS_ENV}, else "
        "~/.cache/daskbench/mirrors): made once, fetched when a commit is missing; CI caches it",
    )
    parser.add_argument(
        "--rounds-cap",
        type=whole_number(3, ROUNDS_LIMIT, "a number of rounds", "--rounds-cap 120"),
        default=search.ROUNDS_CAP,
        help=f"most rounds an undecided step is raised to (default {search.ROUNDS_CAP})",
    )
    parser.add_argument("--github", metavar="OWNER/REPO", help="comment on each confirmed case's issue there")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    parser.add_argument("--summary", metavar="PATH", default=summary, help=SUMMARY_HELP)
    add_old_spellings(parser, "--summary", "-o", "--output")
    add_round_options(parser, "culprit")
    parser.set_defaults(func=cmd_culprit)


def cmd_culprit(args: argparse.Namespace) -> int:
    github = _github(args.github)  # a bad repository or a missing token fails before anything runs
    if not args.group:
        raise DaskbenchError("give the confirmation to go on from: --group GROUP (daskbench confirm --group GROUP)")
    pytest_args, options = pytest_arguments(args.pytest_args), build_options(args)
    store = open_store(args)
    found = confirmed.stored(store, args.group)
    judged = _confirmed(args, store, found)
    if not judged.regressions:
        print_wrapped(f"culprit: A/B group {args.group} confirmed no regression; no culprit to find")
        return EXIT_OK
    path = _route(args, store.run(found.good), judged, options)
    hunter = hunt.Hunter(
        store, settings(args).db, pytest_args, path, args.name or f"culprit-{judged.candidate_run.run_id[:8]}",
        found.floors or settings(args).floor or {}, options, budget=_budget_minutes(args) * 60, max_rounds=args.max_rounds,
        rounds_cap=args.rounds_cap, max_seconds=args.max_time * 60, metric=metric_of(args), say=say,
        show=print_wrapped,
    )  # fmt: skip
    result = hunter.run(sorted({verdict.workload for verdict in judged.regressions}), args.group)
    text = comment.markdown(result)
    if args.summary:
        with Path(args.summary).open("a", encoding="utf-8") as out:
            out.write(text + "\n")
    if github is not None:
        print(_commented(github, judged, text))
    return EXITS.get(result.kind(), EXIT_UNDECIDED)


def _route(args: argparse.Namespace, good: Run, judged: Comparison, options: envs.BuildOptions) -> route.Route:
    """What the hunt bisects between the good run and the night's, said in progress lines."""

    def listed(name: str) -> list[str]:
        return envs.available_versions(name, options.index, options.installer)

    path = route.make_route(good, judged.candidate_run, envs.mirrors_root(args.mirrors), listed, say)
    say(f"culprit: {path.describe()}; at most {path.plan.max_steps()} steps, budget {args.budget:g} min")
    for note in (*path.plan.notes, *path.notes):
        say(f"culprit: note: {note}")
    return path


def _confirmed(args: argparse.Namespace, store: Store, found: confirmed.Stored) -> Comparison:
    """The night judged as the confirmation judged it, with only what its A/B confirmed left regressed."""
    chosen = selection(args)
    if chosen.candidate is None:
        chosen = chosen.with_candidate(found.candidate)
    night = compare(store, chosen)
    if not night.candidate_run.run_id.startswith(found.candidate):
        raise DaskbenchError(
            f"A/B group {args.group} confirms run {found.candidate[:8]}, not {night.candidate_run.run_id[:8]}; "
            f"pass --candidate {found.candidate[:8]} (or leave it out)"
        )
    ab = compare_group(store, args.group, floors=found.floors or settings(args).floor)
    judged, _ = alerts.side_by_side(night, ab, reference=args.group, good=found.good, versions=found.versions())
    return judged


def _budget_minutes(args: argparse.Namespace) -> float:
    """``--budget``, else ``$DASKBENCH_CULPRIT_BUDGET`` (``60m``; a bare number is minutes), else the default."""
    if args.budget is not None:
        return float(args.budget)
    given = os.environ.get(BUDGET_ENV, "")
    seconds = parse_duration(given, "m") if given else None
    if given and seconds is None:
        raise DaskbenchError(f"{BUDGET_ENV}={given!r} is not a duration: like 60m or 2h")
    return seconds / 60 if seconds else hunt.BUDGET_MINUTES


def _commented(github: GitHub, judged: Comparison, text: str) -> str:
    """Comment ``text`` on the open issue of each confirmed case (`alerts.sync_issues` opened them); what it did."""
    existing = open_alerts(github, alerts.REGRESSION_LABEL)
    numbers = sorted({int(existing[v.fingerprint]["number"]) for v in judged.regressions if v.fingerprint in existing})
    for number in numbers:
        github.comment(number, text)
    if not numbers:
        return "issues: no open issue of the confirmed cases to comment on (daskbench alert --github opens them)"
    return "issues: commented on " + ", ".join(f"#{number}" for number in numbers)


def _github(repo: str | None) -> GitHub | None:
    if not repo:
        return None
    return GitHub(repo, os.environ.get("GITHUB_TOKEN", ""), os.environ.get(API_ENV) or DEFAULT_API)
