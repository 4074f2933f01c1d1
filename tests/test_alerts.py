"""daskbench alert against a loopback GitHub stand-in: one issue per regressed case, commented, closed on recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daskbench import alerts
from daskbench.alerts import INFRA_LABEL, REGRESSION_LABEL
from daskbench.cli import main
from daskbench.model import Case, ClusterSpec
from daskbench.store import Store
from daskbench.text import WIDTH
from daskbench.verdicts import Comparison, Verdict
from testing.github_server import FakeGitHub
from tests.helpers import GITHUB_TEST_TOKEN, add_results, add_run, make_case

SLOW, STEADY = make_case("shuffle", size="small"), make_case("groupby", size="small")


@pytest.fixture
def nightly(tmp_path: Path) -> tuple[Store, str]:
    """A store with twelve steady nights of two cases: enough history to judge the next night."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(url)
    for night in range(12):
        run = add_run(store, night, label=f"night{night:02d}")
        add_results(store, run, SLOW, 10.0 * (1 + 0.01 * (night % 3)))
        add_results(store, run, STEADY, 5.0 * (1 + 0.01 * (night % 2)))
    return store, url


def _night(store: Store, url: str, index: int, slow: bool, summary: Path) -> int:
    run = add_run(store, index, label=f"night{index:02d}")
    add_results(store, run, SLOW, 10.0 * (2.0 if slow else 1.01))
    add_results(store, run, STEADY, 5.0)
    return main(["alert", "--history", "20", "--github", "owner/repo", "--summary", str(summary), "--db", url])


def _writes(fake: FakeGitHub) -> list[tuple[str, str]]:
    return [(c["method"], c["path"]) for c in fake.calls if c["method"] != "GET"]


def test_four_nights_open_comment_and_close_one_issue(
    github: FakeGitHub, nightly: tuple[Store, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slow night opens one issue and writes Markdown; a second slow night comments; a normal night closes it."""
    store, url = nightly
    summary = tmp_path / "summary.md"
    assert _night(store, url, 12, slow=False, summary=summary) == 0
    assert _writes(github) == [] and not summary.exists()

    assert _night(store, url, 13, slow=True, summary=summary) == 1
    assert _writes(github) == [("POST", "/repos/owner/repo/issues")]
    issue = github.issues[1]
    assert f"[daskbench:{SLOW.fingerprint}]" in issue["title"] and issue["labels"] == [{"name": REGRESSION_LABEL}]
    assert summary.read_text().count("- `shuffle[size=small]") == 1 and "slower" in summary.read_text()

    assert _night(store, url, 14, slow=True, summary=summary) == 1
    assert _writes(github)[1:] == [("POST", "/repos/owner/repo/issues/1/comments")]
    assert github.comments[1][0].startswith("Still regressed.") and len(github.issues) == 1

    assert _night(store, url, 15, slow=False, summary=summary) == 0
    assert _writes(github)[2:] == [
        ("POST", "/repos/owner/repo/issues/1/comments"),
        ("PATCH", "/repos/owner/repo/issues/1"),
    ]
    assert github.issues[1]["state"] == "closed" and github.comments[1][1].startswith("Recovered")
    assert GITHUB_TEST_TOKEN not in capsys.readouterr().out + summary.read_text() + json.dumps(github.calls)


def test_infrastructure_failure_gets_its_own_label_and_one_issue(github: FakeGitHub, tmp_path: Path) -> None:
    """A run that could not measure is reported on one infrastructure issue, never as a regression."""
    for _ in range(2):
        code = main(["alert", "--infrastructure", "cluster did not start", "--github", "owner/repo",
                     "--summary", str(tmp_path / "s.md"), "--db", f"sqlite:///{tmp_path / 'r.db'}"])  # fmt: skip
        assert code == 0
    assert [i["labels"] for i in github.issues.values()] == [[{"name": INFRA_LABEL}]]
    assert github.comments[1] == ["The nightly could not run: cluster did not start"]


def test_missing_token_fails_in_one_line_before_anything(
    github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--github without GITHUB_TOKEN exits 2 with how to fix it, calling nothing and creating no store."""
    monkeypatch.delenv("GITHUB_TOKEN")
    assert main(["alert", "--github", "owner/repo", "--db", f"sqlite:///{tmp_path / 'r.db'}"]) == 2
    err = capsys.readouterr().err
    assert "needs a token in GITHUB_TOKEN" in err and len(err.strip().splitlines()) == 1
    assert github.calls == [] and not (tmp_path / "r.db").exists()


def test_unreachable_api_is_one_line_without_the_token(
    nightly: tuple[Store, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A GitHub API that cannot be reached exits 2 with one line naming the URL, never the token."""
    store, url = nightly
    monkeypatch.setenv("DASKBENCH_GITHUB_API", "http://127.0.0.1:9")
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TEST_TOKEN)
    run = add_run(store, 12, label="slow")
    add_results(store, run, SLOW, 20.0)
    add_results(store, run, STEADY, 5.0)
    code = main(
        ["alert", "--history", "20", "--github", "owner/repo", "--summary", str(tmp_path / "s.md"), "--db", url]
    )
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach the GitHub API at http://127.0.0.1:9" in err and GITHUB_TEST_TOKEN not in err


def test_a_regression_the_rerun_does_not_confirm_alerts_nothing(
    github: FakeGitHub, nightly: tuple[Store, str], tmp_path: Path
) -> None:
    """--confirm RUN: a slow night whose re-run is back to normal writes no Markdown and opens no issue."""
    store, url = nightly
    night = add_run(store, 12, label="noisy-night")
    add_results(store, night, SLOW, 20.0)
    add_results(store, night, STEADY, 5.0)
    rerun = add_run(store, 13, label="noisy-night-confirm")
    add_results(store, rerun, SLOW, 10.1)
    summary = tmp_path / "s.md"
    args = ["alert", "--history", "20", "--github", "owner/repo", "--summary", str(summary), "--db", url]
    assert main([*args, "--candidate", night.run_id, "--confirm", rerun.run_id]) == 0
    assert _writes(github) == [] and not summary.exists()
    assert main([*args, "--candidate", night.run_id]) == 1  # unconfirmed, the same night would alert
    assert _writes(github) == [("POST", "/repos/owner/repo/issues")]


def test_the_alert_markdown_and_its_terminal_lines_fit_120_columns(
    nightly: tuple[Store, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regressed case with a long label: one regression, as a Markdown list item wrapped at 120 columns
    (a table row cannot wrap), the same lines on the terminal and in the job summary."""
    store, url = nightly
    spec = ClusterSpec("local", 2, 1, 4 * 2**30, 1.1, scheduler_config=(("distributed.worker.memory.target", "0.6"),))
    wide = Case("a_workload_with_a_rather_long_name", {"size": "small", "input": "s3://bucket/" + "x" * 30}, spec)
    for night in range(12):
        add_results(store, store.run(f"run{night:03d}-night{night:02d}"), wide, 10.0 * (1 + 0.01 * (night % 3)))
    run = add_run(store, 12, label="night12")
    add_results(store, run, wide, 20.0)
    summary = tmp_path / "summary.md"
    assert main(["alert", "--history", "20", "--summary", str(summary), "--db", url]) == 1
    out = capsys.readouterr().out
    assert out.startswith("### daskbench: 1 regression in run `run012-n` (night12)")
    assert all(len(line) <= WIDTH for line in out.splitlines() + summary.read_text().splitlines())
    assert "a_workload_with_a_rather_long_name" in out and "x slower (z " in " ".join(out.split())


def _judged(fingerprint: str, metric: str, verdict: str) -> Verdict:
    cluster = ClusterSpec("local", 1, 1, 2**30, float("inf")).identity()
    return Verdict(fingerprint, "resample", {}, metric, verdict, 20.0, 2.0, 170.0, 1.1, (2.0,) * 6, (40.0,) * 6,
                   cluster)  # fmt: skip


def _side(*verdicts: Verdict) -> Comparison:
    run = add_run(Store("sqlite://"), 0)
    return Comparison("history", (run,), run, tuple(verdicts), {}, {}, {})


def test_a_suspect_cases_metric_the_night_left_undecided_is_confirmed_when_side_by_side_shows_it() -> None:
    """The night blamed a case for its client memory and read its runtime inconclusive (a loaded machine); side by
    side the memory is too noisy and the runtime 20x slower: the runtime is confirmed (with the A/B's evidence and a
    note), the memory is not; another case's undecided runtime, not suspect, stays as the night read it."""
    night = _side(_judged("a", "client_peak_memory_above_idle_bytes", "regressed"),
                  _judged("a", "runtime_s", "inconclusive"), _judged("b", "runtime_s", "inconclusive"))  # fmt: skip
    ab = _side(_judged("a", "client_peak_memory_above_idle_bytes", "inconclusive"), _judged("a", "runtime_s", "regressed"),
               _judged("b", "runtime_s", "regressed"))  # fmt: skip
    judged, confirmation = alerts.side_by_side(night, ab, reference="g")
    assert [(v.fingerprint, v.metric) for v in judged.regressions] == [("a", "runtime_s")]
    (runtime,) = judged.regressions
    assert runtime.note == "regressed side by side; the night alone read inconclusive" and confirmation.of(runtime)
    assert {(v.fingerprint, v.metric): v.verdict for v in judged.verdicts}[("b", "runtime_s")] == "inconclusive"
