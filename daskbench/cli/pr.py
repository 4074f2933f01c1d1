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
import dataclasses
import os
import time
from pathlib import Path
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
from daskbench.cli.output import check_report_bokeh
from daskbench.cli.values import whole_number
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError, check_writable
from daskbench.github import API_ENV, DEFAULT_API, GitHub, check_repo
from daskbench.judge import suite
from daskbench.judge.compare import group_rounds
from daskbench.lockstep.parts import Spent
from daskbench.lockstep.sessions import pytest_arguments
from daskbench.model import Comparison
from daskbench.store import Store
from daskbench.text import say

#: Where the report goes unless --report says otherwise.
REPORT = "results/daskbench-pr.html"
#: Actions sets this to a file whose Markdown the job's summary page shows.
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
NO_TOKEN = (
    "no GITHUB_TOKEN (a pull request from a fork gets none that may write): no comment and no commit "
    "status, the verdict table is in the job summary only"
)


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
    add_round_options(parser, "pr")
    parser.set_defaults(func=cmd_pr)


def cmd_pr(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    repo = envs.git_checkout(args.repo, "--repo")
    base, head = pr.resolve(repo, args.base, "BASE"), pr.resolve(repo, args.head, "HEAD")
    edits = pr.uncommitted_note(repo, base, head)
    github = _github(args, head)
    link = _link(args)
    for path, flag in ((None if args.no_report else args.report, "--report"), (args.markdown, "--markdown")):
        if path:
            check_writable(Path(path), flag)
    if not args.no_report:
        check_report_bokeh("pr")
    options = build_options(args)
    db = absolute_db(settings(args).db)
    store = Store(db)
    group = _group(args, store, base, head)
    if edits:
        say(f"pr: {edits}")
    if base.commit is not None and base.commit == head.commit:
        return _finish(args, github, head, pr.Outcome("unchanged", (), ()), _same_page(base, head, link, edits))
    sides = {"A": pr.exported(repo, base, options["cache"]), "B": pr.exported(repo, head, options["cache"])}
    changes = pr.dependency_changes(sides["A"], sides["B"], say)
    pythons = {
        name: pr.side_python(revision, "base" if name == "A" else "head", say, bool(changes), **options)
        for name, revision in sides.items()
    }
    sided = {name: (sides[name], pythons[name]) for name in sides}
    budget = budget_seconds(args)
    plan = pr.PrPlan(db, group, sided, pytest_args, floors(args), args.max_rounds, args.max_time * 60, budget, changes)
    return _run(args, store, plan, github, link)


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
    except (DaskbenchError, KeyboardInterrupt) as error:
        why = "interrupted" if isinstance(error, KeyboardInterrupt) else f"could not run: {error}"
        _status(github, args, head, "error", why, link, quiet=True)
        raise
    pr.tag_group(store, plan, args.pr)
    comparison = pr.judged(store, plan)
    outcome = pr.Outcome.of(comparison)
    say(f"pr: measured in {pr.elapsed(started)}: {outcome.headline()}")
    for line in spent.lines():
        say(f"pr: {line}")
    report = None if args.no_report else _report(store, plan, args.report)
    page = pr.Page(
        base, head, plan.group, link or report, measured=_measured(spent, comparison), dependencies=plan.dependencies
    )
    return _finish(args, github, head, outcome, page)


def _finish(
    args: argparse.Namespace, github: GitHub | None, head: pr.Revision, outcome: pr.Outcome, page: pr.Page
) -> int:
    """Print the Markdown, write it where asked (file, job summary), keep the comment and set the status."""
    if args.github and github is None:
        note = "; ".join(filter(None, (page.note, NO_TOKEN)))
        page = dataclasses.replace(page, note=note)
    markdown = pr.comment_markdown(outcome, page)
    print(markdown, end="", flush=True)
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    summary = os.environ.get(SUMMARY_ENV)
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(markdown + "\n")
    if github is not None and head.commit is not None:
        done = pr.publish(github, args.pr, head.commit, markdown, outcome, _target(page.report))
        verb = "created" if done.created else "edited"
        say(f"pr: {verb} comment {done.comment_id} on pull request #{args.pr}; status {done.state} on {head.short}")
    return {"regressed": EXIT_REGRESSION, "inconclusive": EXIT_UNDECIDED}.get(outcome.state, EXIT_OK)


def _measured(spent: Spent, comparison: Comparison) -> str:
    """How the rounds went, and the suite-level rate of false alarms the verdicts keep (`suite.said`)."""
    return "; ".join(part for part in (pr.measured_text(spent), suite.said(comparison.notes)) if part)


def _github(args: argparse.Namespace, head: pr.Revision) -> GitHub | None:
    """The client for --github (None: not asked, or no token where a job summary takes the table)."""
    if args.github is None:
        if args.pr is not None:
            raise DaskbenchError("--pr needs --github OWNER/REPO (the repository the pull request is in)")
        return None
    check_repo(args.github)
    if args.pr is None:
        raise DaskbenchError(f"--github {args.github} needs --pr N, the pull request to comment on")
    if head.commit is None:
        raise DaskbenchError(f"HEAD {head.given!r} is a folder; a commit status needs a commit: give HEAD as a commit")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token and os.environ.get(SUMMARY_ENV):
        say(f"pr: {NO_TOKEN}")
        return None
    return GitHub(args.github, token, os.environ.get(API_ENV, DEFAULT_API))


def _link(args: argparse.Namespace) -> str | None:
    """--report-url, else this workflow run's page in GitHub Actions (its artifacts hold the report)."""
    if args.report_url:
        return pr.check_url(args.report_url, "--report-url")
    parts = [os.environ.get(name, "") for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if all(parts):
        url = f"{parts[0].rstrip('/')}/{parts[1]}/actions/runs/{parts[2]}"
        return url if pr.is_link(url) else None
    return None


def _target(report: str | None) -> str | None:
    return report if pr.is_link(report) else None


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
