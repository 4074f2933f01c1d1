"""`daskbench alert --github` (and a confirmation's alert) against the loopback GitHub misbehaving (issue 35).

GitHub failing half-way through the issues of one night leaves nothing a later night misreads: the next
run opens only the issue that is missing, never a second one for the same case. A used-up rate limit
costs the night its issues, never its job summary. A confirmed regression whose case is named with HTML,
mentions and issue references reaches the issue's title and body inert.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from daskbench import alerts
from daskbench.cli import main
from daskbench.github import API_ENV, GitHub
from daskbench.model import ClusterSpec
from daskbench.store import Store
from daskbench.text import ZERO_WIDTH_SPACE
from daskbench.verdicts import Comparison, Verdict
from testing.github_server import FakeGitHub, Misbehaviour
from tests.helpers import GITHUB_TEST_TOKEN, add_results, add_run, make_case

SLOW, OTHER = make_case("shuffle", size="small"), make_case("groupby", size="small")
ISSUES = "/repos/owner/repo/issues"


@pytest.fixture
def slow_night(tmp_path: Path) -> str:
    """A store of twelve steady nights of two cases, then a night where both are twice as slow; its URL."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(url)
    for night in range(13):
        run = add_run(store, night, label=f"night{night:02d}")
        slow = 2.0 if night == 12 else 1.0 + 0.01 * (night % 3)
        add_results(store, run, SLOW, 10.0 * slow)
        add_results(store, run, OTHER, 5.0 * slow)
    return url


def _alert(url: str, summary: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["alert", "--history", "20", "--github", "owner/repo", "--summary", str(summary), "--db", url])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and GITHUB_TEST_TOKEN not in captured.out + captured.err
    return code, captured.err


def test_github_failing_after_the_first_issue_leaves_the_next_run_to_open_only_the_missing_one(
    github: FakeGitHub, slow_night: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two regressions; GitHub opens the first issue, then answers 500 to the second for good: exit 2, one
    line, the job summary holds both. The next run (GitHub well again) comments on the first issue and opens
    the second: two issues, one per case, never a duplicate."""
    github.misbehave.append(Misbehaviour(500, method="POST", path=ISSUES, after=1))
    summary = tmp_path / "summary.md"
    code, err = _alert(slow_night, summary, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "500" in err, err
    assert "shuffle" in summary.read_text() and "groupby" in summary.read_text()
    assert len(github.issues) == 1
    github.misbehave.clear()
    code, _ = _alert(slow_night, summary, capsys)
    assert code == 1
    keys = [re.findall(r"\[daskbench:\w+\]", issue["title"]) for issue in github.issues.values()]
    assert len(github.issues) == 2 and len({key[0] for key in keys}) == 2, keys
    assert github.comments[1][0].startswith("Still regressed.")


def test_a_used_up_rate_limit_costs_the_night_its_issues_never_its_job_summary(
    github: FakeGitHub, slow_night: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """429 with ``Retry-After: 3600`` on the first call: one line saying when to try again, within seconds
    (never an hour's sleep); the regressions are in the job summary all the same; no issue half-made."""
    github.misbehave.append(Misbehaviour(429, b'{"message": "API rate limit exceeded"}', {"Retry-After": "3600"}))
    summary = tmp_path / "summary.md"
    started = time.monotonic()
    code, err = _alert(slow_night, summary, capsys)
    assert code == 2 and time.monotonic() - started < 15
    assert "rate limit" in err and len(err.strip().splitlines()) == 1, err
    assert "shuffle" in summary.read_text() and github.issues == {}


HOSTILE = "<img src=x onerror=alert(1)>@octocat#12"


def _verdict(fingerprint: str, note: str = "") -> Verdict:
    cluster = ClusterSpec("local", 1, 1, 2**30, float("inf")).identity()
    params = {"size": "<b>big</b> @team #7"}
    return Verdict(fingerprint, HOSTILE, params, "runtime_s", "regressed", 3.0, 2.8, 3.2, 1.5, (0.2,) * 3, (0.6,) * 3,
                   cluster, note=note)  # fmt: skip


def _comparison(*verdicts: Verdict) -> Comparison:
    run = add_run(Store("sqlite://"), 0)
    return Comparison("ab", (run,), run, tuple(verdicts), {}, {}, {})


def _outside_code(markdown: str) -> str:
    """The Markdown with its code spans taken out (inside one, HTML and mentions are text)."""
    return re.sub(r"(`+).*?\1", "", markdown, flags=re.DOTALL)


def test_a_confirmed_regression_named_with_html_and_mentions_reaches_github_inert(github: FakeGitHub) -> None:
    """A night's regression re-judged side by side (`alerts.side_by_side`, what ``confirm`` feeds ``alert``),
    its case named with HTML, a mention and an issue reference: the issue's title mentions and references
    nobody, its body holds HTML only inside code spans, and so does the job summary."""
    night = _comparison(_verdict("f" * 16))
    ab = _comparison(_verdict("a" * 16, note="decided after 3 rounds; per-round ratios 3.0, 2.9, 3.1 @octocat"))
    judged, confirmation = alerts.side_by_side(night, ab, reference="g<i>1</i>", good="run0 @team",
                                               versions="standin 1.0 against standin 1.1")  # fmt: skip
    client = GitHub("owner/repo", os.environ["GITHUB_TOKEN"], os.environ[API_ENV])
    alerted = alerts.sync_issues(client, judged, None, confirmation)
    assert alerted.opened == [1]
    title, body = github.issues[1]["title"], github.issues[1]["body"]
    for text in (title, _outside_code(body), _outside_code(alerts.markdown(judged, None, confirmation))):
        assert "@octocat" not in text and "@team" not in text and "#12" not in text, text
    for text in (_outside_code(body), _outside_code(alerts.markdown(judged, None, confirmation))):
        assert "<img" not in text and "<i>" not in text and "<b>" not in text, text
    assert f"@{ZERO_WIDTH_SPACE}octocat" in title
