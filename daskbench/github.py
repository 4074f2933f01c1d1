"""The few GitHub REST calls daskbench makes, against GitHub's API or a stand-in (``DASKBENCH_GITHUB_API``).

Issues (list open by label, create, comment, close) for the nightly's alerts; a pull request's
comments (list, create, edit) and a commit's status for ``daskbench pr``. The token goes in a header
only, never into a message or a log.

A redirect is followed only to the same scheme, host and port, the method and body sent again (GitHub moves a
renamed repository's calls so), at most `REDIRECTS` times; one to another host is never followed, so the token
never leaves the host it was meant for, and is named as the redirect it is (`redirect_line`).

GitHub's answers are told apart, each one line with its fix (`answer_line`): a bad token (401), a missing
permission (403), no such repository, issue or pull request (404), a request refused as invalid (422,
GitHub's own words shown), the rate limit used up (429, or 403 with no requests left: its reset time said,
waited for only when it is `WAIT_LIMIT_S` or less), a server error or a broken connection (retried
`ATTEMPTS` times in all, with doubling backoff) and a body that is not the JSON asked for.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from daskbench.errors import DaskbenchError
from daskbench.redact import MASK

API_ENV = "DASKBENCH_GITHUB_API"
DEFAULT_API = "https://api.github.com"
#: The key of an alert's issue, in its title: ``[daskbench:<fingerprint>]``.
_KEY = re.compile(r"\[daskbench:([0-9a-z-]+)\]")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
#: The states a commit status may have (GitHub's REST API).
STATUS_STATES = ("success", "failure", "pending", "error")
#: GitHub's limit on a status description, in characters.
STATUS_DESCRIPTION_LIMIT = 140
#: Attempts of a call GitHub answered with a server error (5xx) or whose connection broke mid-answer.
ATTEMPTS = 3
#: Seconds before the second attempt, doubled before each later one.
BACKOFF_S = 1.0
#: The longest wait for GitHub's rate limit (``Retry-After``, ``X-RateLimit-Reset``) the call makes itself;
#: a longer one ends the command with one line saying when the limit resets.
WAIT_LIMIT_S = 10.0
#: Redirects to the same host followed for one call (a renamed repository needs one).
REDIRECTS = 3
#: Seconds one request may take.
TIMEOUT_S = 30.0
#: How much of GitHub's own message (or of a body that is not JSON) a line shows.
_SHOWN = 160


def check_repo(repo: str) -> str:
    """``repo`` when it reads as ``owner/repo``; one line otherwise."""
    if not _REPO.match(repo):
        raise DaskbenchError(f"--github {repo!r} is not owner/repo, e.g. --github dask/daskbench")
    return repo


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: its status, reason, headers (names lower-cased) and body."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes

    def message(self) -> str:
        """GitHub's ``message`` (and its validation ``errors``) on one line, or the start of a body not JSON."""
        try:
            found = json.loads(self.body)
        except ValueError:
            return _cut(self.body.decode(errors="replace"))
        if not isinstance(found, dict):
            return ""
        errors = [e.get("message") or e.get("code") for e in found.get("errors") or [] if isinstance(e, dict)]
        said = "; ".join(str(part) for part in [found.get("message"), *errors] if part)
        return _cut(said)

    def wait(self, now: float) -> float | None:
        """Seconds until a used-up rate limit resets (``Retry-After``, else ``X-RateLimit-Reset``); None when
        this answer is no rate limit."""
        spent = self.headers.get("x-ratelimit-remaining") == "0" or "retry-after" in self.headers
        if self.status != 429 and not (self.status == 403 and (spent or "rate limit" in self.message().lower())):
            return None
        after, reset = self.headers.get("retry-after", ""), self.headers.get("x-ratelimit-reset", "")
        if after.strip().isdigit():
            return float(after)
        if reset.strip().isdigit():
            return max(0.0, float(reset) - now)
        return 60.0  # GitHub's advice when it names no time: wait at least a minute


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


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
        """``method path`` with ``body``, tried again after a server error, a broken connection or a short
        rate-limit wait (`ATTEMPTS` in all); GitHub's JSON answer (None when empty). One line for the rest."""
        waited: list[float] = []
        while True:
            answer = self._follow(method, path, body, last=len(waited) + 1 == ATTEMPTS)
            if answer is not None and 200 <= answer.status < 300:
                return self._json(method, path, answer)
            pause = self._pause(answer, len(waited))
            if answer is not None and (pause is None or len(waited) + 1 == ATTEMPTS):
                line = answer_line(f"GitHub API {method} {path}", answer, waited, time.time())
                raise DaskbenchError(line.replace(self._token, MASK))  # a proxy may echo it back
            time.sleep(pause or 0.0)
            waited.append(pause or 0.0)

    def _follow(self, method: str, path: str, body: Mapping[str, Any] | None, *, last: bool) -> Answer | None:
        """`_send` to ``path``, then to where a redirect points while it stays on the API's host (at most
        `REDIRECTS` times); a redirect to another host is one line and is never sent the token."""
        url = f"{self.base}/repos/{self.repo}{path}"
        for _ in range(REDIRECTS + 1):
            answer = self._send(method, path, url, body, last=last)
            if answer is None or not 300 <= answer.status < 400 or "location" not in answer.headers:
                return answer
            target = urllib.parse.urljoin(url, answer.headers["location"])
            if _origin(target) != _origin(self.base):
                raise DaskbenchError(redirect_line(f"GitHub API {method} {path}", answer.status, target, self.base))
            url = target
        raise DaskbenchError(
            f"GitHub API {method} {path} was redirected more than {REDIRECTS} times (last to "
            f"{_shown_url(url)}); check --github OWNER/REPO and {API_ENV}"
        )

    def _send(self, method: str, path: str, url: str, body: Mapping[str, Any] | None, *, last: bool) -> Answer | None:
        """One request to ``url`` (never following a redirect): its answer, or None when the connection broke
        mid-answer (and may be retried)."""
        request = urllib.request.Request(
            url,
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
            with _OPENER.open(request, timeout=TIMEOUT_S) as response:
                return Answer(response.status, response.reason, _lower(response.headers), response.read())
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, str(exc.reason), _lower(exc.headers), _read(exc))
        except (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionResetError) as exc:
            if last:
                raise DaskbenchError(
                    f"the GitHub API at {self.base} broke off its answer to {method} {path} {ATTEMPTS} times "
                    f"({type(exc).__name__}); check the network or a proxy, then run again"
                ) from None
            return None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            reason = str(reason) or type(reason).__name__
            raise DaskbenchError(f"cannot reach the GitHub API at {self.base} ({reason}); check the network") from None

    @staticmethod
    def _pause(answer: Answer | None, tried: int) -> float | None:
        """Seconds to wait before trying again after ``tried`` retries, None when the answer is final."""
        if answer is None or answer.status >= 500:
            return BACKOFF_S * 2**tried
        wait = answer.wait(time.time())
        return wait if wait is not None and wait <= WAIT_LIMIT_S else None

    def _json(self, method: str, path: str, answer: Answer) -> Any:
        if not answer.body.strip():
            return None
        try:
            return json.loads(answer.body)
        except ValueError:
            raise DaskbenchError(
                f"the GitHub API at {self.base} answered {method} {path} with {answer.status} and a body that is not "
                f"JSON ({answer.message().replace(self._token, MASK)!r}); is {self.base} GitHub's API? ({API_ENV} sets it)"
            ) from None

    def _shaped(self, method: str, path: str, found: Any, shape: type, what: str) -> Any:
        """``found`` when it is the JSON ``shape`` GitHub answers with; one line otherwise."""
        if isinstance(found, shape):
            return found
        raise DaskbenchError(
            f"the GitHub API at {self.base} answered {method} {path} without {what} "
            f"({_cut(json.dumps(found)).replace(self._token, MASK)!r}); "
            f"is {self.base} GitHub's API? ({API_ENV} sets it)"
        )

    def _listing(self, path: str) -> list[dict[str, Any]]:
        found = self._shaped("GET", path, self.call("GET", path) or [], list, "a list")
        return [item for item in found if isinstance(item, dict)]

    def _created(self, path: str, body: Mapping[str, Any], key: str) -> int:
        """The ``key`` (number, id) of what ``POST path`` created."""
        found = self.call("POST", path, body)
        number = found.get(key) if isinstance(found, dict) else None
        return int(self._shaped("POST", path, number if isinstance(number, int) else found, int, f"the new {key}"))

    def open_issues(self, label: str) -> dict[str, dict[str, Any]]:
        """Open issues with ``label`` by their daskbench key (pull requests left out)."""
        found: dict[str, dict[str, Any]] = {}
        for page in range(1, 11):
            batch = self._listing(f"/issues?state=open&labels={label}&per_page=100&page={page}")
            for issue in batch:
                keys = _KEY.findall(str(issue.get("title", "")))  # the last: a case label may hold a look-alike
                if keys and "pull_request" not in issue and isinstance(issue.get("number"), int):
                    found.setdefault(keys[-1], issue)
            if len(batch) < 100:
                break
        return found

    def create_issue(self, title: str, body: str, labels: Sequence[str]) -> int:
        return self._created("/issues", {"title": title, "body": body, "labels": list(labels)}, "number")

    def comment(self, number: int, body: str) -> int:
        """Comment on issue or pull request ``number``; the new comment's id."""
        return self._created(f"/issues/{number}/comments", {"body": body}, "id")

    def comments(self, number: int) -> list[dict[str, Any]]:
        """The comments of issue or pull request ``number``, oldest first (at most 1000)."""
        found: list[dict[str, Any]] = []
        for page in range(1, 11):
            batch = self._listing(f"/issues/{number}/comments?per_page=100&page={page}")
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


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    """Hands every redirect back as the answer it is (`GitHub._follow` decides), so urllib never re-sends the
    token to where a redirect points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_Unfollowed)


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url`` (the port its scheme implies when none is written)."""
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), _port(parts) or default


def _shown_url(url: str) -> str:
    """``url`` without its query or any user information, cut to fit a line (a redirect's target is text
    from elsewhere)."""
    parts = urllib.parse.urlsplit(url)
    port = _port(parts)
    shown = f"{parts.scheme}://{parts.hostname or ''}{f':{port}' if port else ''}{parts.path}"
    return _cut("".join(ch if ch.isprintable() else "?" for ch in shown))


def _port(parts: urllib.parse.SplitResult) -> int | None:
    """The port written in ``parts``; None when none is, or it is not a number."""
    try:
        return parts.port
    except ValueError:
        return None


def redirect_line(call: str, status: int, target: str, base: str) -> str:
    """One line for a redirect off the API's host: where it pointed, that the token was not sent there."""
    return (
        f"{call} answered {status}, a redirect to another host ({_shown_url(target)}); daskbench sends GITHUB_TOKEN "
        f"only to {_shown_url(base)} and did not follow it: check {API_ENV} (or a proxy) and --github OWNER/REPO"
    )


def _lower(headers: Any) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in (headers.items() if headers is not None else ())}


def _read(exc: urllib.error.HTTPError) -> bytes:
    """An error answer's body (empty when it cannot be read)."""
    try:
        return exc.read() or b""
    except (OSError, http.client.HTTPException):
        return b""


#: Each refusal's fix, by status.
_FIXES = {
    401: "GITHUB_TOKEN is invalid, expired or revoked (bad credentials); set a valid token",
    403: "forbidden: GITHUB_TOKEN may not do this; give it the permission (in Actions: permissions: issues: write, "
    "pull-requests: write, statuses: write)",
    404: "not found: check --github OWNER/REPO and the issue or pull request number (a private repository reads as "
    "not found to a token that cannot see it)",
    422: "GitHub refused the request as invalid; fix what it names",
}
#: What a refusal of a commit status (``POST /statuses/SHA``) most often means, added to its fix.
_STATUS_HINT = " (a commit status needs the commit pushed to GitHub)"


def answer_line(call: str, answer: Answer, waited: Sequence[float], now: float) -> str:
    """One line for GitHub's final answer to ``call``: what it means and what to do, GitHub's words in brackets."""
    said = f" ({answer.message()})" if answer.message() else ""
    wait = answer.wait(now)
    if wait is not None:
        resets = datetime.fromtimestamp(now + wait, UTC).strftime("%H:%M:%S UTC")
        return (
            f"{call} answered {answer.status}: GitHub's rate limit for this token is used up{said}; it resets at "
            f"{resets} (in {_duration(wait)}): run again then"
        )
    if answer.status >= 500:
        tries = f" {len(waited) + 1} times (waiting {', '.join(f'{w:g} s' for w in waited)} between)" if waited else ""
        return (
            f"{call} answered {answer.status} {answer.reason}{tries}{said}: GitHub has trouble "
            "(www.githubstatus.com); run again later"
        )
    fix = _FIXES.get(answer.status, "GitHub did not take the request")
    if answer.status == 422 and " /statuses/" in call:
        fix += _STATUS_HINT
    return f"{call} answered {answer.status} {answer.reason}{said}: {fix}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
