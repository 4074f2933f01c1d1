"""Where a pull request's verdicts go: stdout, a Markdown file, the job summary, the one comment and the status.

``daskbench pr`` (one machine) and ``daskbench merge`` (every shard of a sharded check, judged once) deliver
alike: `client` makes the GitHub client ``--github``/``--pr`` ask for (none without a token in GitHub Actions,
as said: a fork's pull request), `run_link` the link the comment gives, and `deliver` prints the comment's
Markdown, writes it where asked and, with a client, keeps the comment and sets the head's status.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from daskbench.errors import DaskbenchError
from daskbench.github import API_ENV, DEFAULT_API, GitHub, check_repo
from daskbench.pr.comment import Outcome, Page, comment_markdown, is_link, publish
from daskbench.pr.sides import Revision, Say

#: Actions sets this to a file whose Markdown the job's summary page shows.
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
NO_TOKEN = (
    "no GITHUB_TOKEN (a pull request from a fork gets none that may write): no comment and no commit "
    "status, the verdict table is in the job summary only"
)


@dataclass(frozen=True)
class Target:
    """Where the comment goes: ``--github`` (OWNER/REPO, None: not asked), ``--pr`` and ``--markdown``."""

    repo: str | None
    number: int | None
    markdown: str | None = None


def client(target: Target, head: Revision, command: str, say: Say) -> GitHub | None:
    """The client for ``--github`` (None: not asked, or no token where a job summary takes the table); one line
    for ``--pr`` without ``--github``, or the reverse, or a head that is no commit."""
    if target.repo is None:
        if target.number is not None:
            raise DaskbenchError("--pr needs --github OWNER/REPO (the repository the pull request is in)")
        return None
    check_repo(target.repo)
    if target.number is None:
        raise DaskbenchError(f"--github {target.repo} needs --pr N, the pull request to comment on")
    if head.commit is None:
        raise DaskbenchError(f"HEAD {head.given!r} is a folder; a commit status needs a commit: give HEAD as a commit")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token and os.environ.get(SUMMARY_ENV):
        say(f"{command}: {NO_TOKEN}")
        return None
    return GitHub(target.repo, token, os.environ.get(API_ENV, DEFAULT_API))


def run_link() -> str | None:
    """This workflow run's page in GitHub Actions (its artifacts hold the reports); None elsewhere."""
    parts = [os.environ.get(name, "") for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if all(parts):
        url = f"{parts[0].rstrip('/')}/{parts[1]}/actions/runs/{parts[2]}"
        return url if is_link(url) else None
    return None


def deliver(
    target: Target, github: GitHub | None, head: Revision, outcome: Outcome, page: Page, command: str, say: Say
) -> None:
    """Print the Markdown, write it where asked (file, job summary), keep the comment and set the status."""
    if target.repo and github is None:
        page = dataclasses.replace(page, note="; ".join(filter(None, (page.note, NO_TOKEN))))
    markdown = comment_markdown(outcome, page)
    print(markdown, end="", flush=True)
    if target.markdown:
        Path(target.markdown).write_text(markdown, encoding="utf-8")
    summary = os.environ.get(SUMMARY_ENV)
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(markdown + "\n")
    if github is not None and head.commit is not None and target.number is not None:
        link = page.report if is_link(page.report) else None
        done = publish(github, target.number, head.commit, markdown, outcome, link)
        verb = "created" if done.created else "edited"
        say(f"{command}: {verb} comment {done.comment_id} on pull request #{target.number}; status {done.state} on "
            f"{head.short}")  # fmt: skip
