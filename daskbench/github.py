"""The few GitHub REST calls daskbench makes, against GitHub's API or a stand-in (``DASKBENCH_GITHUB_API``).

Issues (list open by label, create, comment, close) for the nightly's alerts; a pull request's
comments (list, create, edit) and a commit's status for ``daskbench pr``. The token goes in a header
only, never into a message or a log.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from daskbench.errors import DaskbenchError

API_ENV = "DASKBENCH_GITHUB_API"
DEFAULT_API = "https://api.github.com"
#: The key of an alert's issue, in its title: ``[daskbench:<fingerprint>]``.
_KEY = re.compile(r"\[daskbench:([0-9a-z-]+)\]")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
#: The states a commit status may have (GitHub's REST API).
STATUS_STATES = ("success", "failure", "pending", "error")
#: GitHub's limit on a status description, in characters.
STATUS_DESCRIPTION_LIMIT = 140


def check_repo(repo: str) -> str:
    """``repo`` when it reads as ``owner/repo``; one line otherwise."""
    if not _REPO.match(repo):
        raise DaskbenchError(f"--github {repo!r} is not owner/repo, e.g. --github dask/daskbench")
    return repo


class GitHub:
    """The REST calls alerts and ``daskbench pr`` need, against ``base`` (GitHub's API or a stand-in)."""

    def __init__(self, repo: str, token: str, base: str = DEFAULT_API) -> None:
        check_repo(repo)
        if not token:
            raise DaskbenchError(
                "--github needs a token in GITHUB_TOKEN (in Actions: env GITHUB_TOKEN: ${{ github.token }})"
            )
        self.repo, self._token, self.base = repo, token, base.rstrip("/")

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.base}/repos/{self.repo}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={
                "Authorization": f"Bearer {self._token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise DaskbenchError(
                f"GitHub API {method} {path} answered {exc.code} {exc.reason}; check GITHUB_TOKEN's permissions"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DaskbenchError(f"cannot reach the GitHub API at {self.base} ({reason}); check the network") from None
        return json.loads(payload) if payload else None

    def open_issues(self, label: str) -> dict[str, dict[str, Any]]:
        """Open issues with ``label`` by their daskbench key (pull requests left out)."""
        found: dict[str, dict[str, Any]] = {}
        for page in range(1, 11):
            batch = self.call("GET", f"/issues?state=open&labels={label}&per_page=100&page={page}") or []
            for issue in batch:
                keys = _KEY.findall(issue.get("title", ""))  # the last: a case label may hold a look-alike
                if keys and "pull_request" not in issue:
                    found.setdefault(keys[-1], issue)
            if len(batch) < 100:
                break
        return found

    def create_issue(self, title: str, body: str, labels: Sequence[str]) -> int:
        return int(self.call("POST", "/issues", {"title": title, "body": body, "labels": list(labels)})["number"])

    def comment(self, number: int, body: str) -> int:
        """Comment on issue or pull request ``number``; the new comment's id."""
        return int(self.call("POST", f"/issues/{number}/comments", {"body": body})["id"])

    def comments(self, number: int) -> list[dict[str, Any]]:
        """The comments of issue or pull request ``number``, oldest first (at most 1000)."""
        found: list[dict[str, Any]] = []
        for page in range(1, 11):
            batch = self.call("GET", f"/issues/{number}/comments?per_page=100&page={page}") or []
            found += batch
            if len(batch) < 100:
                break
        return found

    def edit_comment(self, comment_id: int, body: str) -> None:
        self.call("PATCH", f"/issues/comments/{int(comment_id)}", {"body": body})

    def set_status(self, sha: str, state: str, description: str, context: str, target_url: str | None = None) -> None:
        """A commit status on ``sha``: ``state`` one of `STATUS_STATES`, the description cut to GitHub's limit."""
        if state not in STATUS_STATES or not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise ValueError(f"set_status: state {state!r} or commit {sha!r} is not one GitHub takes")
        body = {"state": state, "description": description[:STATUS_DESCRIPTION_LIMIT], "context": context}
        self.call("POST", f"/statuses/{sha}", {**body, **({"target_url": target_url} if target_url else {})})

    def close(self, number: int) -> None:
        self.call("PATCH", f"/issues/{number}", {"state": "closed", "state_reason": "completed"})
