"""``daskbench alert``: a comparison as job-summary Markdown and one GitHub issue per regressed case.

Why: the nightly's exit code is read by nobody; an issue per regressed case (opened,
commented on, closed on recovery) is. See `daskbench.alerts`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from daskbench import alerts
from daskbench.cli.common import add_db_option, add_selection_options, open_store, selection
from daskbench.judge.compare import compare


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "alert",
        help="write regressions as Markdown and one GitHub issue per regressed case",
        description="Judge a run as daskbench compare does (default: the latest run against baseline main, "
        "or --history N) and, if anything regressed, append Markdown to the job summary; with --github, keep "
        "one issue per regressed case: opened the first time, commented on later, closed when the case recovers. "
        "A run with nothing regressed writes nothing (it only closes issues of recovered cases).",
        epilog="examples: daskbench alert --history 20 --github dask/daskbench | "
        "daskbench alert --infrastructure 'cluster did not start' --github dask/daskbench. "
        f"Environment: GITHUB_TOKEN (needed with --github), GITHUB_STEP_SUMMARY, {alerts.API_ENV} "
        f"(API base URL, default {alerts.DEFAULT_API}). Exit 1 when something regressed.",
    )
    add_selection_options(parser, ab=False)
    parser.add_argument(
        "--confirm",
        metavar="RUN",
        help="a re-run of the regressed cases: alert only on regressions it confirms",
    )
    parser.add_argument("--github", metavar="OWNER/REPO", help="keep one issue per regressed case in this repository")
    parser.add_argument(
        "--summary",
        metavar="PATH",
        default=os.environ.get("GITHUB_STEP_SUMMARY"),
        help="append the Markdown here (default: $GITHUB_STEP_SUMMARY; else stdout only)",
    )
    parser.add_argument(
        "--infrastructure",
        metavar="REASON",
        help="the run could not measure (cluster, store, S3): report REASON on the infrastructure issue instead",
    )
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
        return 0
    store = open_store(args)
    chosen = selection(args)
    comparison = compare(store, chosen)
    if args.confirm:
        comparison = alerts.confirmed(comparison, compare(store, chosen.with_candidate(args.confirm)))
    text = alerts.markdown(comparison, url)
    if text:
        _write(text, args.summary)
    else:
        print("daskbench alert: nothing regressed")
    if github:
        print(alerts.sync_issues(github, comparison, url).summary())
    return 1 if text else 0


def _github(repo: str | None) -> alerts.GitHub | None:
    if not repo:
        return None
    base = os.environ.get(alerts.API_ENV) or alerts.DEFAULT_API
    return alerts.GitHub(repo, os.environ.get("GITHUB_TOKEN", ""), base)


def _run_url() -> str | None:
    """The Actions run's page, from the variables Actions sets (None elsewhere)."""
    parts = [os.environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else None


def _write(text: str, summary: str | None) -> None:
    print(text, end="")
    if summary:
        with Path(summary).open("a", encoding="utf-8") as out:
            out.write(text + "\n")
