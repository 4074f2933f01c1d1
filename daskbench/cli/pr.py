"""``daskbench pr BASE HEAD [-- pytest args]``: a pull request's base and head side by side, on one comment.

Every input is checked (the checkout, both sides, ``--github``/``--pr`` and the token, the report URL,
the index and the store) before anything is built or run; then `daskbench.pr` builds one overlay
environment per side holding that side's project (each from its own requirements when the sides declare
different dependencies), runs one lockstep A/B group (base is side A, head side
B), and prints the verdict table as Markdown (stdout; progress on stderr). With ``--github OWNER/REPO --pr N``
and ``GITHUB_TOKEN`` it creates, or edits, one comment on the pull request and sets a commit status on the
head; without a token (a pull request from a fork) the table goes to the job summary only, as said.
Exit codes: 0 every case decided and none regressed (or base and head are one commit), 1 head regressed, 2
could not run, 3 some case undecided or nothing measured (the status is then pending, not success), 130
interrupted.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from daskbench import envs, pr
from daskbench.cli.app import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from daskbench.cli.common_args import (
    add_old_spellings,
    add_round_options,
    budget_seconds,
    build_options,
    floors,
    settings,
)
from daskbench.cli.output import check_outputs
from daskbench.cli.values import whole_number
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError
from daskbench.github import GitHub
from daskbench.judge import suite
from daskbench.judge.compare import group_rounds
from daskbench.lockstep.parts import Spent
from daskbench.lockstep.sessions import pytest_arguments
from daskbench.shards.history import history_seconds
from daskbench.shards.plan import Selector, Shard, parse_shard
from daskbench.store import Store
from daskbench.text import say
from daskbench.verdicts import Comparison

#: Where the report goes unless --report says otherwise.
REPORT = "results/daskbench-pr.html"


#: ``pr``'s texts (add_parser's keywords).
TEXTS = {
    "help": "benchmark a pull request: its base and head side by side, the verdicts as Markdown (and on the PR)",
    "description": "Build one environment per side holding that side's checkout of your project (BASE and HEAD: "
    "branches, tags, commits or folders of the git checkout --repo; a commit's is built once), run the "
    "selected benchmarks on both in turn (lockstep A/B, base is A, head is B, rounds until each case is "
    "decided) and print the verdict table as Markdown: what changed first, then the unchanged counts. "
    "Each side's session runs in its own source tree (its benchmarks, its settings). With --github and "
    "--pr, one comment on the pull request is created, then edited on every later run, and the head "
    "commit gets a status (context daskbench): failure for a regression, pending (not running: undecided) "
    "when some case is undecided, else success. False alarms are counted per suite: the comment says the rate.",
    "epilog": 'example: daskbench pr main HEAD -- -k ocean --size tiny; in CI: daskbench pr "$BASE_SHA" '
    '"$HEAD_SHA" --github "$REPO" --pr "$PR" --report results/pr.html (token in GITHUB_TOKEN); exit codes: 0 '
    "no regression, every case decided, 1 head regressed, 2 could not run, 3 some case undecided, 130 interrupted",
}
#: The help of ``pr``'s own options.
HELP = {
    "--repo": "the git checkout of your project (default: the current folder's)",
    "--github": "keep one comment on pull request --pr of this repository and set a status on HEAD (token in "
    "GITHUB_TOKEN; DASKBENCH_GITHUB_API overrides the API's URL)",
    "--pr": "the pull request's number (with --github)",
    "--report": f"write the HTML report of the comparison here (default {REPORT})",
    "--no-report": "write no HTML report",
    "--report-url": "the link the comment gives to the report (default in GitHub Actions: this workflow run's "
    "page, which holds the uploaded report; elsewhere the report's path)",
    "--markdown": "also write the verdict table's Markdown to FILE",
    "--shard": "measure only shard K of N of the suite (cases split by time from the store's history, else by "
    "count; every runner makes the same split), then write its results with daskbench export for daskbench merge, "
    "which judges every shard together and comments once",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("pr", **TEXTS)
    parser.add_argument("base", metavar="BASE", help="the pull request's base: branch, tag, commit or folder")
    parser.add_argument("head", metavar="HEAD", help="its head: branch, tag, commit or folder")
    parser.add_argument("--repo", metavar="PATH", default=".", help=HELP["--repo"])
    parser.add_argument("--github", metavar="OWNER/REPO", help=HELP["--github"])
    pr_number = whole_number(1, 10**9, "a pull request's number", "--pr 42")
    parser.add_argument("--pr", type=pr_number, metavar="N", help=HELP["--pr"])
    parser.add_argument("--report", metavar="PATH", default=REPORT, help=HELP["--report"])
    add_old_spellings(parser, "--report", "-o", "--output")
    parser.add_argument("--no-report", action="store_true", help=HELP["--no-report"])
    parser.add_argument("--report-url", metavar="URL", help=HELP["--report-url"])
    parser.add_argument("--markdown", metavar="FILE", help=HELP["--markdown"])
    parser.add_argument("--shard", metavar="K/N", help=HELP["--shard"])
    add_round_options(parser, "pr")
    parser.set_defaults(func=cmd_pr)


def cmd_pr(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    shard = _shard(args)
    repo = envs.git_checkout(args.repo, "--repo")
    base, head = pr.resolve(repo, args.base, "BASE"), pr.resolve(repo, args.head, "HEAD")
    edits = pr.uncommitted_note(repo, base, head)
    github = _github(args, head)
    link = _link(args)
    check_outputs("pr", None if args.no_report else args.report, args.markdown)
    options = build_options(args)
    db = absolute_db(settings(args).db)
    store = Store(db)
    group = _group(args, store, base, head) + (f"-shard{shard.number}of{shard.count}" if shard else "")
    if edits:
        say(f"pr: {edits}")
    if base.commit is not None and base.commit == head.commit:
        return _finish(args, github, head, pr.Outcome("unchanged", (), ()), _same_page(base, head, link, edits))
    sides = {"A": pr.exported(repo, base, options.cache, say), "B": pr.exported(repo, head, options.cache, say)}
    changes = pr.dependency_changes(sides["A"], sides["B"], say)
    pythons = {
        name: pr.side_python(revision, "base" if name == "A" else "head", options, say, bool(changes))
        for name, revision in sides.items()
    }
    sided = {name: (sides[name], pythons[name]) for name in sides}
    budget = budget_seconds(args)
    pick = Selector(shard, seconds=history_seconds(store)) if shard else None
    plan = pr.PrPlan(
        db, group, sided, pytest_args, floors(args), args.max_rounds, args.max_time * 60, budget, changes, pick
    )
    return _run(args, store, plan, github, link)


def _shard(args: argparse.Namespace) -> Shard | None:
    """--shard K/N, checked before anything is built: a shard leaves the comment to ``daskbench merge``."""
    if args.shard is None:
        return None
    shard = parse_shard(args.shard)
    if args.github is not None:
        raise DaskbenchError(
            f"--shard {shard} with --github: a shard does not comment; daskbench merge judges every shard's "
            "export together and comments once (give --github and --pr there)"
        )
    return shard


def _group(args: argparse.Namespace, store: Store, base: pr.Revision, head: pr.Revision) -> str:
    """``--group``, a new one (a pull request's comparison is not continued), or a new name."""
    if args.group is None:
        return pr.new_group(base, head)
    if group_rounds(store, args.group):
        raise DaskbenchError(f"A/B group {args.group!r} exists already in {store.display_url}; pick another --group")
    return str(args.group)


def _run(args: argparse.Namespace, store: Store, plan: pr.PrPlan, github: GitHub | None, link: str | None) -> int:
    """Measure (the head's status pending meanwhile), judge, report, publish."""
    base, head = plan.sides["A"][0], plan.sides["B"][0]
    within = f"; budget {plan.budget / 60:g} min for all cases" if plan.budget is not None else ""
    say(
        f"pr: base {base.short} (A), head {head.short} (B): lockstep group {plan.group}, at most "
        f"{plan.max_rounds} rounds and {args.max_time:g} min a case{within}"
    )
    started = time.monotonic()
    _status(github, args, head, "pending", "measuring base and head in turn", link)
    try:
        spent = pr.measure(plan, say)
        _check_store(store)
    except (DaskbenchError, KeyboardInterrupt) as error:
        said = _damaged(store, error)
        why = "interrupted" if isinstance(said, KeyboardInterrupt) else f"could not run: {said}"
        _status(github, args, head, "error", why, link, quiet=True)
        if said is error:
            raise
        raise said from None
    pr.tag_group(store, plan, args.pr)
    comparison = pr.judged(store, plan)
    outcome = pr.Outcome.of(comparison)
    say(f"pr: measured in {pr.elapsed(started)}: {outcome.headline()}")
    for line in spent.lines():
        say(f"pr: {line}")
    report = None if args.no_report else _report(store, plan, args.report)
    page = pr.Page(
        base, head, plan.group, link or report, _shard_note(plan), _measured(spent, comparison), plan.dependencies
    )
    return _finish(args, github, head, outcome, page)


def _store_damage(store: Store) -> DaskbenchError | None:
    """The one line when the store was deleted, replaced or written over while the sides ran (their code runs
    with this user's rights and can write its file), else None. Nothing is judged then (no "unchanged" from a
    store that lost the rounds)."""
    damage = store.damage()
    if damage is None:
        return None
    return DaskbenchError(
        f"the store {store.display_url} was damaged while base and head were measured (their code can write "
        f"any file this user can): {damage}; nothing was judged"
    )


def _check_store(store: Store) -> None:
    """`_store_damage`, raised."""
    damage = _store_damage(store)
    if damage is not None:
        raise damage


def _damaged(store: Store, error: BaseException) -> BaseException:
    """What to say when measuring failed: the store's damage when it was damaged (a session's own error would
    blame that session, which only found it so), else ``error`` as it was."""
    if not isinstance(error, DaskbenchError):
        return error
    return _store_damage(store) or error


def _shard_note(plan: pr.PrPlan) -> str:
    """A shard's note: which one, and that ``daskbench merge`` judges the shards together ("" otherwise)."""
    if plan.pick is None:
        return ""
    note = (
        f"shard {plan.pick.shard} of the suite: these verdicts are this shard's; daskbench merge judges every "
        "shard's export together, with false alarms counted over the whole suite"
    )
    say(f"pr: {note} (write this one with: daskbench export -o shard-{plan.pick.shard.number}.jsonl)")
    return note


def _finish(
    args: argparse.Namespace, github: GitHub | None, head: pr.Revision, outcome: pr.Outcome, page: pr.Page
) -> int:
    """Deliver the comment (`daskbench.pr.deliver`); the exit code of the outcome."""
    pr.deliver(_target(args), github, head, outcome, page, "pr", say)
    return {"regressed": EXIT_REGRESSION, "inconclusive": EXIT_UNDECIDED}.get(outcome.state, EXIT_OK)


def _target(args: argparse.Namespace) -> pr.Target:
    return pr.Target(args.github, args.pr, args.markdown)


def _measured(spent: Spent, comparison: Comparison) -> str:
    """How the rounds went, and the suite-level rate of false alarms the verdicts keep (`suite.said`)."""
    return "; ".join(part for part in (pr.measured_text(spent), suite.said(comparison.notes)) if part)


def _github(args: argparse.Namespace, head: pr.Revision) -> GitHub | None:
    """The client for --github (None: not asked, or no token where a job summary takes the table)."""
    return pr.client(_target(args), head, "pr", say)


def _link(args: argparse.Namespace) -> str | None:
    """--report-url, else this workflow run's page in GitHub Actions (its artifacts hold the report)."""
    if args.report_url:
        return pr.check_url(args.report_url, "--report-url")
    return pr.run_link()


def _status(
    github: GitHub | None,
    args: argparse.Namespace,
    head: pr.Revision,
    state: str,
    why: str,
    link: str | None,
    *,
    quiet: bool = False,
) -> None:
    """Set the head's status; ``quiet``: on the way out of an error, a failure to set it is only said."""
    if github is None or head.commit is None:
        return
    try:
        github.set_status(head.commit, state, shown_message(why), pr.STATUS_CONTEXT, link)
    except DaskbenchError as error:
        if not quiet:
            raise
        say(f"pr: could not set the status too: {error}")


def _report(store: Store, plan: pr.PrPlan, path: str) -> str:
    """The HTML report of the group (its verdicts, memory over time, where the time went)."""
    from daskbench.judge.selection import Selection
    from daskbench.report import write_report

    written = write_report(store, path, Selection(ab_group=plan.group, floors=dict(plan.floors)))
    say(f"pr: report written to {written}")
    return str(path)


def _same_page(base: pr.Revision, head: pr.Revision, link: str | None, edits: str) -> pr.Page:
    note = f"base and head are one commit ({(base.commit or '')[:10]}): the code is the same, nothing was measured"
    say(f"pr: {note}")
    return pr.Page(base, head, None, link, f"{note}; {edits}" if edits else note)


def absolute_db(url: str) -> str:
    """A relative SQLite path made absolute, so that sessions started in other folders find the same store."""
    import sqlalchemy as sa

    from daskbench.store.engine import sqlite_file

    path = sqlite_file(url)
    if path is None or path.is_absolute():
        return url
    return sa.engine.make_url(url).set(database=str(path.absolute())).render_as_string(hide_password=False)
