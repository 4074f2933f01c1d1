"""``daskbench merge PATH...``: the shards of a pull request's check judged once, on one comment and one status.

Each shard ran ``daskbench pr BASE HEAD --shard K/N`` on a runner of its own (a lockstep A/B of its cases on
that machine) and wrote its store with ``daskbench export``. ``merge`` checks every file before the store is
touched (`daskbench.shards.merge.import_shards`: another comparison's shards, shards of different splits, two
results of one shard are one line each), imports them, and judges every shard's group with the false alarms
of the whole suite counted together. A shard without results (failed, cancelled: no file) is named, its
cases "not measured", never "unchanged": the state is then undecided (exit 3, status pending). The comment
and the status are ``daskbench pr``'s (`daskbench.pr.deliver`). Exit codes: 0 every case decided and none
regressed, 1 head regressed, 2 could not run (no shard's results at all), 3 some case undecided or not
measured.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daskbench import envs, pr
from daskbench.cli.app import verdicts_exit
from daskbench.cli.common_args import add_db_option, add_floor_option, floors, open_store
from daskbench.cli.output import check_outputs
from daskbench.cli.values import whole_number
from daskbench.config import MAX_SHARDS
from daskbench.errors import DaskbenchError
from daskbench.judge import suite
from daskbench.shards import merge
from daskbench.store import Store, exchange
from daskbench.text import plural, say

#: ``merge``'s texts (add_parser's keywords).
TEXTS = {
    "help": "judge the shards of a pull request's check together: one verdict table, comment and status",
    "description": "Import the export files the shards of one comparison wrote (daskbench pr BASE HEAD --shard "
    "K/N, then daskbench export) and judge every shard's cases together, false alarms counted over the whole "
    "suite; print the verdict table as Markdown and, with --github and --pr, keep the one comment and set the "
    "head's status as daskbench pr does. A shard without results (failed or cancelled) is named; its cases are "
    "not measured, never unchanged.",
    "epilog": 'example: daskbench merge results/shards --base "$BASE_SHA" --head "$HEAD_SHA" --github "$REPO" '
    '--pr "$PR" --report results/pr.html; exit codes: 0 no regression, every case decided, 1 head regressed, 2 '
    "could not run, 3 some case undecided or not measured",
}
HELP = {
    "paths": "the shards' export files, or folders holding them (every *.jsonl in a folder)",
    "--base": "the comparison's base commit (default: the one the files name, when they name one)",
    "--head": "its head commit (default: the one the files name)",
    "--repo": "a git checkout holding both commits, for their subjects (default: the current folder, if it is one)",
    "--github": "keep one comment on pull request --pr of this repository and set a status on the head (token in "
    "GITHUB_TOKEN)",
    "--pr": "the pull request's number (with --github)",
    "--report-url": "the link the comment gives (default in GitHub Actions: this workflow run's page, whose "
    "artifacts hold the reports)",
    "--markdown": "also write the verdict table's Markdown to FILE",
    "--report": "write the HTML report of every shard's cases and verdicts, judged together, to PATH (the comment "
    "links --report-url, or names PATH outside GitHub Actions)",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("merge", **TEXTS)
    parser.add_argument("paths", metavar="PATH", nargs="+", help=HELP["paths"])
    parser.add_argument("--base", metavar="COMMIT", help=HELP["--base"])
    parser.add_argument("--head", metavar="COMMIT", help=HELP["--head"])
    parser.add_argument("--repo", metavar="PATH", default=".", help=HELP["--repo"])
    parser.add_argument("--github", metavar="OWNER/REPO", help=HELP["--github"])
    parser.add_argument("--pr", type=whole_number(1, 10**9, "a pull request's number", "--pr 42"), metavar="N",
                        help=HELP["--pr"])  # fmt: skip
    parser.add_argument("--report-url", metavar="URL", help=HELP["--report-url"])
    parser.add_argument("--markdown", metavar="FILE", help=HELP["--markdown"])
    parser.add_argument("--report", metavar="PATH", help=HELP["--report"])
    add_floor_option(parser)
    add_db_option(parser)
    parser.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    files = export_files(args.paths)
    expected = _expected(args, files)
    base, head = (_revision(args.repo, expected.get(key, ""), key) for key in merge.IDENTITY_TAGS)
    target = pr.Target(args.github, args.pr, args.markdown)
    github = pr.client(target, head, "merge", say)
    link = pr.check_url(args.report_url, "--report-url") if args.report_url else pr.run_link()
    check_outputs("merge", args.report, args.markdown)
    store = open_store(args)
    chosen = merge.import_shards(store, files, expected, say)
    merged = merge.judge(store, chosen, floors=floors(args))
    for line in merged.lines():
        say(f"merge: {line}")
    outcome = pr.Outcome.of_verdicts(merged.verdicts, merged.not_measured)
    say(f"merge: {outcome.headline()}")
    report = _report(store, merged, args.report) if args.report else None
    notes = merged.comparison.notes if merged.comparison is not None else ()
    measured = f"{plural(merged.plan.count, 'shard')}, {plural(len(merged.plan.cases), 'case')} planned; " + (
        suite.said(notes) or "false alarms counted over the whole suite"
    )
    groups = ", ".join(group.group for group in chosen.values())
    page = pr.Page(base, head, groups, link or report, measured=measured, shards=tuple(merged.lines()))
    pr.deliver(target, github, head, outcome, page, "merge", say)
    return verdicts_exit(merged.verdicts, merged.not_measured)


def _report(store: Store, merged: merge.Merged, path: str) -> str | None:
    """The HTML report of every shard's cases and verdicts, judged together (None: no shard measured a round)."""
    if merged.comparison is None:
        return None
    from daskbench.report import write_report

    say(f"merge: report written to {write_report(store, path, judged=merged.comparison)}")
    return path


def export_files(paths: list[str]) -> list[Path]:
    """The export files given: each file as it is, each folder's ``*.jsonl``; one line for a path that is neither,
    or for none found at all (every shard failed or was cancelled before writing its results)."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found += sorted(path.glob("*.jsonl"))
        elif path.is_file():
            found.append(path)
        else:
            raise DaskbenchError(f"{given!r} is no file or folder: give the shards' export files or their folder")
    if not found:
        raise DaskbenchError(
            f"no shard's results in {', '.join(map(repr, paths))}: every shard failed or was cancelled before "
            "writing its export (daskbench export after daskbench pr --shard K/N); nothing to judge"
        )
    if len(found) > MAX_SHARDS:
        raise DaskbenchError(f"{len(found)} files: a comparison has at most {MAX_SHARDS} shards")
    return found


def _expected(args: argparse.Namespace, files: list[Path]) -> dict[str, str]:
    """The comparison's base and head: as given, else the one every file's shards name (one line otherwise)."""
    asked = zip(merge.IDENTITY_TAGS, (args.base, args.head), strict=True)
    given = {key: _revision(args.repo, value, key).commit or value for key, value in asked if value}
    if len(given) == len(merge.IDENTITY_TAGS):
        return given
    groups = [group for path in files for group in merge.shard_groups(exchange.file_lines(path)(), str(path))]
    named = {group.identity for group in groups if given.items() <= dict(group.identity).items()}
    if len(named) != 1:
        said = "; ".join(merge.describe(dict(identity)) for identity in named)
        what = f"{len(named)} comparisons ({said})" if named else "no shard's runs of such a comparison"
        raise DaskbenchError(f"the files hold {what}: give --base and --head, the commits of the comparison to merge")
    return dict(next(iter(named)))


def _revision(repo: str, commit: str, key: str) -> pr.Revision:
    """A side as the comment names it: the commit resolved in ``repo`` (with its subject) when it is a git
    checkout holding it, else the commit alone."""
    try:
        return pr.resolve(envs.git_checkout(repo, "--repo"), commit, key)
    except DaskbenchError:
        return pr.Revision(commit[:10], commit if len(commit) == 40 else None, Path(repo))
