"""GitHub failing in every way it fails, against the loopback stand-in told to misbehave (issue 35, class 2).

Each answer is a real HTTP answer from `testing.github_server` (a `Misbehaviour`): a status with its headers and
body, an answer held back past the time limit, a connection broken mid-answer. ``daskbench alert`` and
``daskbench pr`` meet them through `daskbench.github`, and each is told apart in one line with its fix:
a bad token, a missing permission, nothing found, a request refused as invalid (GitHub's words shown),
the rate limit (when it resets, never slept out for an hour), a server error (retried a bounded number
of times, with backoff) and a body that is not the JSON asked for. The token is never shown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench.cli import main
from daskbench.github import api
from testing.github_server import FakeGitHub, Misbehaviour, serve
from testing.standin import standin_project
from tests.helpers import GITHUB_TEST_TOKEN, git

ISSUES = "/repos/owner/repo/issues"


def _alert(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[int, str, float]:
    """``daskbench alert --infrastructure ... --github owner/repo`` (it lists the open issues, then opens
    one): its exit code, its error output, and the seconds it took."""
    started = time.monotonic()
    code = main(["alert", "--infrastructure", "the cluster did not start", "--github", "owner/repo",
                 "--summary", str(tmp_path / "summary.md")])  # fmt: skip
    seconds = time.monotonic() - started
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and GITHUB_TEST_TOKEN not in captured.out + captured.err
    return code, captured.err, seconds


def _one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: GitHub API "), err
    return lines[0]


@pytest.mark.parametrize(
    ("status", "body", "means", "not_said"),
    [
        (401, {"message": "Bad credentials"}, "GITHUB_TOKEN is invalid, expired or revoked (bad credentials)",
         "permission"),
        (403, {"message": "Resource not accessible by integration"}, "give it the permission (in Actions: permissions:",
         "rate limit"),
        (404, {"message": "Not Found"}, "not found: check --github OWNER/REPO", "permission"),
        (422, {"message": "Validation Failed", "errors": [{"resource": "Issue", "code": "custom",
                                                          "message": "title is too long"}]},
         "(Validation Failed; title is too long): GitHub refused the request as invalid", "permission"),
    ],
)  # fmt: skip
def test_each_refusal_is_told_apart_in_one_line_with_its_fix(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    status: int, body: dict[str, object], means: str, not_said: str,
) -> None:  # fmt: skip
    """401, 403, 404 and 422 each get their own meaning and fix (GitHub's words in brackets), exit 2, asked
    once: a refusal is not tried again."""
    github.misbehave.append(Misbehaviour(status, json.dumps(body).encode()))
    code, err, _ = _alert(capsys, tmp_path)
    line = _one_error(err)
    assert code == 2 and f"answered {status} " in line and means in line and not_said not in line.lower()
    assert len(github.calls) == 1


def test_a_used_up_rate_limit_says_when_it_resets_and_does_not_sleep_an_hour(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """429 with ``Retry-After: 3600``: one line naming the rate limit and the time it resets (in 60 min),
    at once, after one call."""
    github.misbehave.append(Misbehaviour(429, b'{"message": "API rate limit exceeded"}', {"Retry-After": "3600"}))
    code, err, seconds = _alert(capsys, tmp_path)
    line = _one_error(err)
    assert code == 2 and "rate limit for this token is used up" in line and "(in 60 min 0 s): run again then" in line
    assert seconds < 10 and len(github.calls) == 1


def test_a_primary_rate_limit_403_reads_its_reset_time_from_the_headers(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """403 with ``X-RateLimit-Remaining: 0`` and ``X-RateLimit-Reset`` two hours on: the rate limit (not a
    missing permission), with the reset time as a UTC clock time."""
    reset = int(time.time()) + 7200
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
    github.misbehave.append(Misbehaviour(403, b'{"message": "API rate limit exceeded for installation"}', headers))
    code, err, seconds = _alert(capsys, tmp_path)
    line = _one_error(err)
    assert code == 2 and "rate limit" in line and "permission" not in line and seconds < 10
    assert time.strftime("%H:%M", time.gmtime(reset)) in line and ("(in 119 min" in line or "(in 120 min" in line)


def test_a_short_retry_after_is_waited_for_and_the_call_goes_through(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A secondary rate limit of ``Retry-After: 1``, once: waited for, then the issue is opened; exit 0."""
    github.misbehave.append(Misbehaviour(429, b'{"message": "secondary rate limit"}', {"Retry-After": "1"}, times=1))
    code, err, seconds = _alert(capsys, tmp_path)
    assert code == 0 and err == "" and len(github.issues) == 1 and 1 <= seconds < 10


def test_server_errors_are_retried_with_backoff_and_a_passing_one_costs_nothing(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """500 twice, then the real answer: three attempts of the listing, waiting 1 s then 2 s; the issue opened."""
    github.misbehave.append(Misbehaviour(500, b'{"message": "Server Error"}', times=2))
    code, err, seconds = _alert(capsys, tmp_path)
    assert code == 0 and err == "" and len(github.issues) == 1
    assert [call["method"] for call in github.calls] == ["GET", "GET", "GET", "POST"] and 3 <= seconds < 15


def test_a_server_error_that_lasts_is_one_line_after_a_bounded_number_of_attempts(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """502 on every call: `ATTEMPTS` attempts, then one line saying GitHub has trouble and the waits made."""
    github.misbehave.append(Misbehaviour(502, b"<html><body>Bad Gateway</body></html>"))
    code, err, seconds = _alert(capsys, tmp_path)
    line = _one_error(err)
    assert code == 2 and f"answered 502 Bad Gateway {api.ATTEMPTS} times (waiting 1 s, 2 s between)" in line
    assert "githubstatus.com" in line and len(github.calls) == api.ATTEMPTS and seconds < 15


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<!DOCTYPE html><html><body>Sign in to the proxy</body></html>", "a body that is not JSON"),
        (b'{"message": "a dict where a list belongs"}', "without a list"),
    ],
)
def test_a_success_whose_body_is_not_the_json_asked_for_is_one_line(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: bytes, said: str
) -> None:
    """200 with an HTML page (a proxy's sign-in), or JSON of another shape: one line asking whether the
    address is GitHub's API, never a JSONDecodeError or KeyError."""
    github.misbehave.append(Misbehaviour(200, body, {"Content-Type": "text/html"}, method="GET"))
    code, err, _ = _alert(capsys, tmp_path)
    line = err.strip()
    assert code == 2 and said in line and "GitHub's API? (DASKBENCH_GITHUB_API sets it)" in line
    assert line.count("\n") == 0


def test_a_created_issue_answered_without_its_number_is_one_line(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """201 to the POST that opens the issue, without a ``number``: one line, not a KeyError."""
    github.misbehave.append(Misbehaviour(201, b'{"created": true}', method="POST"))
    code, err, _ = _alert(capsys, tmp_path)
    assert code == 2 and "without the new number" in err and err.strip().count("\n") == 0


def test_a_connection_broken_mid_answer_is_retried_then_named(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An answer cut short once (more bytes promised than sent): tried again, the issue opened. Cut short
    every time: one line saying the answer broke off, after `ATTEMPTS` attempts."""
    github.misbehave.append(Misbehaviour(200, b"[]", cut=True, times=1))
    code, err, _ = _alert(capsys, tmp_path)
    assert code == 0 and err == "" and len(github.issues) == 1
    github.misbehave.append(Misbehaviour(200, b"[]", cut=True))
    code, err, _ = _alert(capsys, tmp_path)
    assert code == 2 and "broke off its answer to GET /issues?state=open" in err and f"{api.ATTEMPTS} times" in err


def test_an_answer_held_back_past_the_time_limit_is_one_line(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in holds its answer 3 s, the time limit (cut to 1 s for the test) runs out: one line."""
    monkeypatch.setattr(api, "TIMEOUT_S", 1.0)
    github.misbehave.append(Misbehaviour(200, b"[]", delay=3.0))
    code, err, seconds = _alert(capsys, tmp_path)
    assert code == 2 and "cannot reach the GitHub API at http://127.0.0.1:" in err and "timed out" in err
    assert seconds < 10


def test_a_server_that_echoes_the_token_never_gets_it_shown(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An error body that repeats the token it was sent (a misconfigured proxy): the line masks it."""
    echo = json.dumps({"message": f"token {GITHUB_TEST_TOKEN} is not allowed here"}).encode()
    github.misbehave.append(Misbehaviour(403, echo))
    code, err, _ = _alert(capsys, tmp_path)  # _alert checks the token is nowhere in the output
    assert code == 2 and "is not allowed here" in err


def test_pr_publishing_against_a_failing_github_is_one_line_and_exit_2(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``daskbench pr main main --github o/r --pr 7`` (nothing to measure, straight to publishing) while
    GitHub answers 200 with HTML, then 500 for good: one line each, exit 2, the Markdown still printed."""
    repo = tmp_path / "project"
    repo.mkdir()
    standin_project(repo, "0.1", 0.1)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the stand-in")
    github.add_pull(7)
    args = ["pr", "main", "main", "--repo", str(repo), "--github", "owner/repo", "--pr", "7", "--no-report",
            "--db", f"sqlite:///{tmp_path / 'pr.db'}", "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    github.misbehave.append(Misbehaviour(200, b"<html>maintenance</html>", times=1))
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert "not JSON" in err.splitlines()[-1] and "daskbench: nothing changed" in out
    github.misbehave.append(Misbehaviour(500, b'{"message": "Server Error"}'))
    assert main(args) == 2
    _, err = capsys.readouterr()
    assert f"answered 500 Internal Server Error {api.ATTEMPTS} times" in err and "Traceback" not in err
    assert github.comments == {}


@pytest.fixture
def elsewhere() -> Iterator[tuple[FakeGitHub, str]]:
    """A second stand-in on another port: another host, as far as a token is concerned; and its URL."""
    fake = FakeGitHub()
    server = serve(fake)
    yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_host_never_gets_the_token_and_is_named(
    github: FakeGitHub, elsewhere: tuple[FakeGitHub, str], capsys: pytest.CaptureFixture[str], tmp_path: Path,
    status: int,
) -> None:  # fmt: skip
    """``alert --github``: the API answers a redirect to another host; nothing is sent there (no token, no
    request at all), and the one line names the redirect and where it pointed, exit 2."""
    other, url = elsewhere
    github.misbehave.append(Misbehaviour(status, b"", {"Location": f"{url}/repos/owner/repo/issues"}))
    code, err, _ = _alert(capsys, tmp_path)
    line = _one_error(err)
    assert code == 2 and other.calls == []
    assert f"answered {status}, a redirect to another host ({url}/repos/owner/repo/issues)" in line
    assert "did not follow it" in line and len(github.calls) == 1


def test_pr_comment_redirected_to_another_host_sends_it_nothing(
    github: FakeGitHub, elsewhere: tuple[FakeGitHub, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``pr --github``: the comment's POST answered 302 to another host: that host gets no request (the token
    stays home), the line names the redirect, exit 2, and no comment is left anywhere."""
    other, url = elsewhere
    repo = tmp_path / "project"
    repo.mkdir()
    standin_project(repo, "0.1", 0.1)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the stand-in")
    github.add_pull(7)
    github.misbehave.append(Misbehaviour(302, b"", {"Location": f"{url}/steal"}, method="POST"))
    args = ["pr", "main", "main", "--repo", str(repo), "--github", "owner/repo", "--pr", "7", "--no-report",
            "--db", f"sqlite:///{tmp_path / 'pr.db'}", "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert other.calls == [] and f"a redirect to another host ({url}/steal)" in err.splitlines()[-1]
    assert GITHUB_TEST_TOKEN not in out + err and github.comments.get(7, []) == []


def test_a_redirect_on_the_same_host_is_followed_with_its_method_and_body(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A renamed repository: GitHub answers 307 to the new name on its own host; the call is made again there,
    the same method, body and token, and goes through (exit 0)."""
    github.misbehave.append(Misbehaviour(307, b"", {"Location": "/repos/owner/renamed/issues"}, method="POST", times=1))
    code, err, _ = _alert(capsys, tmp_path)
    posts = [call for call in github.calls if call["method"] == "POST"]
    assert code == 0, err
    assert [call["path"] for call in posts] == ["/repos/owner/repo/issues", "/repos/owner/renamed/issues"]
    assert posts[1]["token"] and posts[1]["body"] == posts[0]["body"] and len(github.issues) == 1


def test_a_422_names_the_commit_status_only_for_a_commit_status(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``alert`` sets no commit status, so its 422 says nothing of one; a 422 to ``POST /statuses/SHA`` says a
    status needs the commit pushed."""
    github.misbehave.append(Misbehaviour(422, b'{"message": "Validation Failed"}'))
    code, err, _ = _alert(capsys, tmp_path)
    assert code == 2 and "refused the request as invalid" in err and "commit" not in err
    refused = api.Answer(422, "Unprocessable Entity", {}, b'{"message": "No commit found for SHA"}')
    line = api.answer_line("GitHub API POST /statuses/" + "a" * 40, refused, [], time.time())
    assert line.endswith("fix what it names (a commit status needs the commit pushed to GitHub)")
