"""What daskbench keeps on GitHub, for ``daskbench pr`` and ``daskbench alert`` alike.

Why one place: a bot that writes a new comment on every push, or a new issue every night, is muted by
everybody, so each thing daskbench writes is found again and updated instead. Three kinds:

- one comment on a pull request, found again by a hidden marker as its first line (`keep_comment`):
  created the first time, edited on every later run (``pr``);
- a commit status whose description is shown as it is and fits GitHub's limit (`status_description`),
  set with `GitHub.set_status` (``pr``);
- one issue per alert, found again by its key in the title, ``[daskbench:<key>]`` (`alert_key`,
  `open_alerts`): opened (`open_alert`), commented on (`GitHub.comment`), closed with a last comment
  (`close_alert`) (``alert``: a regressed case's fingerprint, or the one infrastructure key).

What goes into a comment or an issue is the command's own Markdown, made inert by `daskbench.text`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from daskbench.github.api import STATUS_DESCRIPTION_LIMIT, GitHub
from daskbench.text import terminal_safe

#: The key of an alert's issue, in its title: ``[daskbench:<fingerprint>]``.
_KEY = re.compile(r"\[daskbench:([0-9a-z-]+)\]")


@dataclass(frozen=True)
class Kept:
    """What `keep_comment` did: the comment's id, and whether it was created (else edited)."""

    comment_id: int
    created: bool


def find_comment(github: GitHub, number: int, marker: str) -> int | None:
    """The id of the comment daskbench keeps on issue or pull request ``number``: the oldest whose body
    starts with ``marker`` (written by a bot, when any such is)."""
    marked = [c for c in github.comments(number) if str(c.get("body", "")).startswith(marker) and _has_id(c)]
    bots = [c for c in marked if (c.get("user") or {}).get("type") == "Bot"]
    chosen = (bots or marked)[:1]
    return int(chosen[0]["id"]) if chosen else None


def _has_id(comment: Mapping[str, Any]) -> bool:
    return isinstance(comment.get("id"), int)


def keep_comment(github: GitHub, number: int, body: str, marker: str) -> Kept:
    """Create the comment the first time, edit that one later (``body`` starts with ``marker``)."""
    found = find_comment(github, number, marker)
    if found is None:
        return Kept(github.comment(number, body), True)
    github.edit_comment(found, body)
    return Kept(found, False)


def status_description(text: str) -> str:
    """``text`` as a commit status description: control characters escaped, cut to GitHub's limit with
    ``...`` (GitHub refuses a longer one)."""
    text = terminal_safe(text)
    return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[: STATUS_DESCRIPTION_LIMIT - 3] + "..."


def alert_key(key: str) -> str:
    """The stable key of an alert's issue, as it appears in the issue title."""
    return f"[daskbench:{key}]"


def open_alerts(github: GitHub, label: str) -> dict[str, dict[str, Any]]:
    """The open issues with ``label`` by their alert key (`alert_key` in the title; the last one there, as a
    case label in the title may hold a look-alike); issues without a key are not daskbench's."""
    found: dict[str, dict[str, Any]] = {}
    for issue in github.open_issues(label):
        keys = _KEY.findall(str(issue.get("title", "")))
        if keys:
            found.setdefault(keys[-1], issue)
    return found


def open_alert(github: GitHub, title: str, key: str, body: str, label: str) -> int:
    """Open the issue of alert ``key`` (its `alert_key` ends the title); the new issue's number."""
    return github.create_issue(f"{title} {alert_key(key)}", body, [label])


def close_alert(github: GitHub, number: int, body: str) -> None:
    """Say why on the alert's issue, then close it."""
    github.comment(number, body)
    github.close(number)
