"""``daskbench alert``: a comparison as job-summary Markdown and one GitHub issue per regressed case.

Why: the nightly's exit code is read by nobody; an issue per regressed case (opened,
commented on, closed on recovery) is. See `daskbench.alerts`. ``--group GROUP`` alerts only what a
side-by-side A/B (``daskbench confirm``) confirms, with its evidence; ``--confirm RUN`` what a re-run of the
same environment confirms (``--fallback-reason`` says why it was not side by side).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from daskbench import alerts
from daskbench.cli.app import EXIT_OK, EXIT_REGRESSION
from daskbench.cli.common_args import (
    add_db_option,
    add_group_option,
    add_old_spellings,
    add_selection_options,
    open_store,
    selection,
    settings,
)
from daskbench.errors import DaskbenchError
from daskbench.github import API_ENV, DEFAULT_API, GitHub
from daskbench.judge import bisected, confirmed
from daskbench.judge.compare import compare, compare_group
from daskbench.store import Store
from daskbench.verdicts import Comparison

#: ``alert``'s texts (add_parser's keywords).
TEXTS = {
    "help": "write regressions as Markdown and one GitHub issue per regressed case",
    "description": "Judge a run as daskbench compare does (default: the latest run against baseline main, "
    "or --history N) and, if anything regressed, append Markdown to the job summary; with --github, keep "
    "one issue per regressed case: opened the first time, commented on later, closed when the case recovers. "
    "A run with nothing regressed writes nothing (it only closes issues of recovered cases).",
    "epilog": "examples: daskbench alert --history 20 --github dask/daskbench | "
    "daskbench alert --infrastructure 'cluster did not start' --github dask/daskbench. "
    f"Environment: GITHUB_TOKEN (needed with --github), GITHUB_STEP_SUMMARY, {API_ENV} "
    f"(API base URL, default {DEFAULT_API}). Exit 1 when something regressed.",
}
#: The help of ``alert``'s own options.
HELP = {
    "--confirm": "a re-run of the regressed cases: alert only on regressions it confirms",
    "--group": "a side-by-side A/B of the regressed cases (daskbench confirm --group GROUP): alert only on "
    "regressions it judges regressed, with its evidence",
    "--fallback-reason": "with --confirm: why the regressions were not confirmed side by side (said in the alert)",
    "--github": "keep one issue per regressed case in this repository",
    "--summary": "the job summary file the Markdown is appended to (default: $GITHUB_STEP_SUMMARY; else stdout only)",
    "--infrastructure": "the run could not measure (cluster, store, S3): report REASON on the infrastructure "
    "issue instead",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("alert", **TEXTS)
    add_selection_options(parser, group=False)
    parser.add_argument("--confirm", metavar="RUN", help=HELP["--confirm"])
    add_group_option(parser, HELP["--group"], "--confirm-ab")
    parser.add_argument("--fallback-reason", metavar="REASON", help=HELP["--fallback-reason"])
    parser.add_argument("--github", metavar="OWNER/REPO", help=HELP["--github"])
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    parser.add_argument("--summary", metavar="PATH", default=summary, help=HELP["--summary"])
    add_old_spellings(parser, "--summary", "-o", "--output")
    parser.add_argument("--infrastructure", metavar="REASON", help=HELP["--infrastructure"])
    add_db_option(parser)
    parser.set_defaults(func=cmd_alert)


def cmd_alert(args: argparse.Namespace) -> int:
    github = _github(args.github)  # a bad repo or missing token fails before the store is read
    url = _run_url()
    if args.infrastructure:
        text = f"### daskbench: the nightly could not run\n\n{alerts.reason_markdown(args.infrastructure)}\n"
        _write(text, args.summary)
        if github:
            print(alerts.infrastructure_alert(github, args.infrastructure, url).summary())
        return EXIT_OK
    if args.confirm and args.group:
        raise DaskbenchError("give one of --confirm RUN (a re-run) and --group GROUP (side by side)")
    if args.fallback_reason and not args.confirm:
        raise DaskbenchError("--fallback-reason goes with --confirm RUN: the re-run that stood in for an A/B")
    store = open_store(args)
    comparison, confirmation = _confirmed(args, store, compare(store, selection(args)))
    text = alerts.markdown(comparison, url, confirmation)
    if text:
        _write(text, args.summary)
    else:
        print("daskbench alert: nothing regressed" + (" (after confirming)" if confirmation else ""))
    if github:
        print(alerts.sync_issues(github, comparison, url, confirmation).summary())
    return EXIT_REGRESSION if text else EXIT_OK


def _confirmed(
    args: argparse.Namespace, store: Store, night: Comparison
) -> tuple[Comparison, alerts.Confirmation | None]:
    """The night's verdicts as the confirmation re-judged them, and how it was confirmed (None: not)."""
    candidate = night.candidate_run.run_id
    if args.group:
        found = confirmed.stored(store, args.group)
        if not candidate.startswith(found.candidate):
            raise DaskbenchError(
                f"A/B group {args.group} confirms run {found.candidate[:8]}, not the judged run "
                f"{candidate[:8]}; pass --candidate {found.candidate[:8]}"
            )
        ab = compare_group(store, args.group, floors=found.floors or settings(args).floor)
        comparison, confirmation = alerts.side_by_side(
            night, ab, reference=args.group, good=found.good, versions=found.versions()
        )
    elif args.confirm:
        rerun = compare(store, selection(args).with_candidate(args.confirm))
        comparison = alerts.confirmed(night, rerun)
        confirmation = alerts.Confirmation(alerts.RERUN, rerun.candidate_run.run_id, reason=args.fallback_reason or "")
    else:
        return night, None
    return comparison, replace(confirmation, culprit=bisected.culprit_line(store, candidate))


def _github(repo: str | None) -> GitHub | None:
    if not repo:
        return None
    base = os.environ.get(API_ENV) or DEFAULT_API
    return GitHub(repo, os.environ.get("GITHUB_TOKEN", ""), base)


def _run_url() -> str | None:
    """The Actions run's page, from the variables Actions sets (None elsewhere)."""
    parts = [os.environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else None


def _write(text: str, summary: str | None) -> None:
    print(text, end="")
    if summary:
        with Path(summary).open("a", encoding="utf-8") as out:
            out.write(text + "\n")
