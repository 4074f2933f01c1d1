"""A loopback stand-in for the few GitHub REST endpoints `daskbench.alerts` uses, recording every call.

GitHub cannot be reached from tests, so this speaks: list issues (state, labels), create
an issue, comment on one, and update one (close); for ``daskbench pr``, list an issue's (a pull
request's) comments, edit a comment, and create a commit status. It answers 401 without a token.
The harness's tests start it in a thread (`serve`); ``ci/nightly --quick`` runs it as a process:
``python -m testing.github_server --port-file P --log calls.jsonl``.

It misbehaves when told to (`Misbehaviour`, in ``FakeGitHub.misbehave``): any status with any headers and
body (a 429 with ``Retry-After``, a 502, a 200 whose body is HTML), an answer held back for seconds, or a
connection broken mid-answer, for some calls or all, a number of times or for good.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

_ISSUES = re.compile(r"^/repos/[^/]+/[^/]+/issues$")
_ISSUE = re.compile(r"^/repos/[^/]+/[^/]+/issues/(\d+)$")
_COMMENTS = re.compile(r"^/repos/[^/]+/[^/]+/issues/(\d+)/comments$")
_COMMENT = re.compile(r"^/repos/[^/]+/[^/]+/issues/comments/(\d+)$")
_STATUSES = re.compile(r"^/repos/[^/]+/[^/]+/statuses/([0-9a-f]{40})$")
#: Who the stand-in says wrote a comment made with the token.
BOT = {"login": "github-actions[bot]", "type": "Bot"}


@dataclass
class Misbehaviour:
    """A wrong answer given instead of the right one to the calls that match (``method``, and ``path`` a part
    of the URL's path; empty matches any), ``times`` times, then the right answers again: ``status`` with
    ``headers`` and the raw ``body``, after ``delay`` seconds; with ``cut``, the answer promises more bytes
    than it sends and the connection is closed. The first ``after`` matching calls are answered right."""

    status: int = 500
    body: bytes = b'{"message": "Server Error"}'
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 10**9
    method: str = ""
    path: str = ""
    delay: float = 0.0
    cut: bool = False
    after: int = 0  # the first ``after`` matching calls are answered right

    def matches(self, method: str, path: str) -> bool:
        return self.times > 0 and self.method in ("", method) and self.path in path


@dataclass(frozen=True)
class Reply:
    """What the stand-in sends: a status, headers, a raw body; ``cut``: broken off mid-body."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    cut: bool = False
    delay: float = 0.0


@dataclass
class FakeGitHub:
    """Issues, comments and the calls made, as the server saw them; ``comments`` holds each issue's
    comment bodies in order (edits included), ``comment_ids`` each comment's (issue, index) by its id,
    ``statuses`` each commit's statuses in the order they were set."""

    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[str]] = field(default_factory=dict)
    comment_ids: dict[int, tuple[int, int]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    log: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    misbehave: list[Misbehaviour] = field(default_factory=list)

    def handle(self, method: str, url: str, body: dict[str, Any] | None, token: str) -> Reply:
        parsed = urlparse(url)
        with self.lock:
            call = {"method": method, "path": parsed.path, "query": parsed.query, "body": body, "token": bool(token)}
            self.calls.append(call)
            if self.log:
                with self.log.open("a") as out:
                    out.write(json.dumps(call) + "\n")
            wrong = next((m for m in self.misbehave if m.matches(method, parsed.path)), None)
            if wrong is not None and wrong.after > 0:
                wrong.after -= 1
            elif wrong is not None:
                wrong.times -= 1
                return Reply(wrong.status, wrong.body, dict(wrong.headers), wrong.cut, wrong.delay)
            if not token.startswith("Bearer ") or len(token) < 8:
                status, payload = 401, {"message": "Requires authentication"}
            else:
                status, payload = self._route(method, parsed.path, parse_qs(parsed.query), body or {})
            return Reply(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

    def add_pull(self, number: int, title: str = "a pull request") -> None:
        """Pull request ``number`` (GitHub's issues API serves a pull request as an issue)."""
        self.issues[number] = {"number": number, "title": title, "body": "", "labels": [], "state": "open",
                               "pull_request": {"url": f"/pulls/{number}"}}  # fmt: skip

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> tuple[int, Any]:
        if _ISSUES.match(path) and method == "GET":
            state, labels = query.get("state", ["open"])[0], set(query.get("labels", [""])[0].split(",")) - {""}
            found = [i for i in self.issues.values() if i["state"] == state and labels <= _names(i)]
            page, per_page = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
            return 200, found[(page - 1) * per_page : page * per_page]
        if _ISSUES.match(path) and method == "POST":
            number = len(self.issues) + 1
            named = [{"name": name} for name in body.get("labels", [])]
            self.issues[number] = {"number": number, "title": body["title"], "body": body.get("body", ""),
                                   "labels": named, "state": "open"}  # fmt: skip
            return 201, self.issues[number]
        if (match := _COMMENTS.match(path)) and method == "POST" and int(match[1]) in self.issues:
            bodies = self.comments.setdefault(int(match[1]), [])
            bodies.append(body["body"])
            comment_id = 1000 + len(self.comment_ids)
            self.comment_ids[comment_id] = (int(match[1]), len(bodies) - 1)
            return 201, self._comment(comment_id)
        if (match := _COMMENTS.match(path)) and method == "GET" and int(match[1]) in self.issues:
            found = [self._comment(i) for i, (issue, _) in self.comment_ids.items() if issue == int(match[1])]
            page, per_page = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
            return 200, found[(page - 1) * per_page : page * per_page]
        if (match := _COMMENT.match(path)) and method == "PATCH" and int(match[1]) in self.comment_ids:
            issue, index = self.comment_ids[int(match[1])]
            self.comments[issue][index] = body["body"]
            return 200, self._comment(int(match[1]))
        if (match := _STATUSES.match(path)) and method == "POST" and body.get("state") in _STATES:
            self.statuses.setdefault(match[1], []).append(body)
            return 201, {"id": len(self.calls), **body}
        if (match := _ISSUE.match(path)) and method == "PATCH" and int(match[1]) in self.issues:
            self.issues[int(match[1])].update({k: v for k, v in body.items() if k == "state"})
            return 200, self.issues[int(match[1])]
        return 404, {"message": "Not Found"}

    def _comment(self, comment_id: int) -> dict[str, Any]:
        issue, index = self.comment_ids[comment_id]
        return {"id": comment_id, "body": self.comments[issue][index], "user": BOT}


_STATES = ("success", "failure", "pending", "error")


def _names(issue: dict[str, Any]) -> set[str]:
    return {label["name"] for label in issue["labels"]}


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            reply = fake.handle(self.command, self.path, body, self.headers.get("Authorization", ""))
            time.sleep(reply.delay)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body) * (2 if reply.cut else 1) + reply.cut))
            self.end_headers()
            self.wfile.write(reply.body)
            if reply.cut:
                self.close_connection = True

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the calls are recorded, not printed."""

    return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet when the client went away (it gave up on an answer held back): that is no error of the server's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(fake: FakeGitHub, port: int = 0) -> ThreadingHTTPServer:
    """Start serving ``fake`` on 127.0.0.1 in a daemon thread; the caller shuts it down."""
    server = _Server(("127.0.0.1", port), _handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a loopback GitHub issues API stand-in until killed.")
    parser.add_argument("--port-file", type=Path, required=True, help="write the chosen port here once listening")
    parser.add_argument("--log", type=Path, required=True, help="append every call here as a JSON line")
    args = parser.parse_args()
    server = _Server(("127.0.0.1", 0), _handler(FakeGitHub(log=args.log)))
    args.port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
