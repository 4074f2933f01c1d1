"""Undecided said as such everywhere: ``ab``, ``pr`` and ``confirm`` exit 3 when some case has no verdict (or
nothing was measured), and a pull request's status is then pending, never success.

Each command runs in this process (`tests.helpers.daskbench_cli` with capsys) with its sessions stubbed: the
stub stores the lockstep group the sessions would have stored (`tests.helpers.add_lockstep_group`), and the
command judges it from the store, as after real sessions."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daskbench import confirm, pr
from daskbench.cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from daskbench.lockstep.parts import GroupPlan, Spent
from daskbench.model import Case
from daskbench.store import Store
from daskbench.verdicts import Verdict
from testing.github_server import FakeGitHub
from tests.helpers import add_lockstep_group, add_results, add_run, daskbench_cli, git, make_case

SLOW, STEADY = make_case("slow_work"), make_case("steady_work")
#: Per-round ratios B/A of one part: decided unchanged, decided regressed (2x), not decided (wide, 4 rounds).
SAME, DOUBLE, WIDE = [1.0] * 5, [2.0] * 8, [1.3, 0.8, 1.25, 0.85]

Rounds = list[tuple[Case, list[list[float]]]]


def _stub_sessions(rounds: Rounds, others: float | None = None) -> Callable[..., Spent]:
    """A stand-in for `run_group`: the group its sessions would have stored, at once (``others``: the cores other
    work used during each measurement)."""

    def run_group(plan: GroupPlan, say: Any) -> Spent:
        add_lockstep_group(Store(plan.db), plan.group, rounds, others=others)
        return Spent()

    return run_group


@pytest.mark.parametrize(
    ("rounds", "code"),
    [([(SLOW, [SAME]), (STEADY, [SAME])], EXIT_OK), ([(SLOW, [DOUBLE]), (STEADY, [SAME])], EXIT_REGRESSION),
     ([(SLOW, [WIDE]), (STEADY, [SAME])], EXIT_UNDECIDED)],
)  # fmt: skip
def test_ab_exits_0_1_or_3_and_says_what_is_undecided_and_the_suite_level_rate(
    rounds: Rounds, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("daskbench.cli.ab.run_group", _stub_sessions(rounds))
    monkeypatch.setattr("daskbench.cli.ab.check_side", lambda side: None)
    done = daskbench_cli("ab", "--db", f"sqlite:///{tmp_path / 'ab.db'}", "--group", "g", capsys=capsys)
    assert done.returncode == code, done.stdout + done.stderr
    assert "false alarms counted per suite: an unchanged suite gets any of its" in " ".join(done.stdout.split())
    assert ("ab: 1 case undecided (exit 3)" in done.stderr) == (code == EXIT_UNDECIDED), done.stderr


def test_a_1_5x_change_read_on_a_busy_machine_is_undecided_until_a_fresh_pair_of_sessions_repeats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stored group is judged again from its rows: other work's 1.2 cores at each measurement (busy) make the
    1.5x of one pair of sessions (counted at once on a quiet machine) wait for its repeat, and ``compare --group``
    reads it so too."""
    rounds = [(SLOW, [[1.5] * 8]), (STEADY, [SAME])]
    monkeypatch.setattr("daskbench.cli.ab.run_group", _stub_sessions(rounds, 1.2))
    monkeypatch.setattr("daskbench.cli.ab.check_side", lambda side: None)
    db = f"sqlite:///{tmp_path / 'ab.db'}"
    done = daskbench_cli("ab", "--db", db, "--group", "g", capsys=capsys)
    assert done.returncode == EXIT_UNDECIDED, done.stdout + done.stderr
    again = daskbench_cli("compare", "--db", db, "--group", "g", capsys=capsys)
    said = " ".join(again.stdout.split())
    assert "regressed 1.50x" in said and "in one pair of sessions on a busy machine" in said, said
    monkeypatch.setattr("daskbench.cli.ab.run_group", _stub_sessions(rounds, 0.1))
    quiet = daskbench_cli("ab", "--db", f"sqlite:///{tmp_path / 'quiet.db'}", "--group", "q", capsys=capsys)
    assert quiet.returncode == EXIT_REGRESSION, quiet.stdout + quiet.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git checkout with branches main and head (one commit apart)."""
    folder = tmp_path / "project"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "README").write_text("one\n")
    git(folder, "add", "README")
    git(folder, "commit", "-q", "-m", "one")
    git(folder, "checkout", "-q", "-b", "head")
    (folder / "README").write_text("two\n")
    git(folder, "commit", "-q", "-am", "two")
    return folder


def _pr(repo: Path, rounds: Rounds, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Any:  # fmt: skip
    """``daskbench pr main head --github o/p --pr 7``, nothing built, the sessions stubbed."""
    github.add_pull(7)
    monkeypatch.setattr(pr, "exported", lambda repo, revision, cache, say: revision)
    monkeypatch.setattr(pr, "dependency_changes", lambda base, head, say: ())
    monkeypatch.setattr(pr, "side_python", lambda *args, **kwargs: sys.executable)
    monkeypatch.setattr(pr, "measure", lambda plan, say: _stub_sessions(rounds)(plan, say))
    db = f"sqlite:///{repo.parent / 'pr.db'}"
    return daskbench_cli("pr", "main", "head", "--repo", str(repo), "--db", db, "--no-report", "--github",
                         "owner/project", "--pr", "7", capsys=capsys)  # fmt: skip


def test_an_undecided_pull_request_exits_3_its_status_pending_and_its_comment_says_undecided(
    repo: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _pr(repo, [(SLOW, [WIDE]), (STEADY, [SAME])], github, monkeypatch, capsys)
    assert done.returncode == EXIT_UNDECIDED, done.stdout + done.stderr
    head = git(repo, "rev-parse", "head")
    final = github.statuses[head][-1]
    assert final["state"] == "pending" and final["description"].startswith("undecided: no regression, 1 case undecided")
    assert "**Undecided**" in done.stdout and "the status is pending, not success" in done.stdout
    assert "false alarms counted per suite" in github.comments[7][0]


def test_a_decided_pull_request_is_a_success_and_a_regressed_one_a_failure(
    repo: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    decided = _pr(repo, [(SLOW, [SAME]), (STEADY, [SAME])], github, monkeypatch, capsys)
    head = git(repo, "rev-parse", "head")
    assert decided.returncode == EXIT_OK and github.statuses[head][-1]["state"] == "success", decided.stderr
    regressed = _pr(repo, [(SLOW, [DOUBLE]), (STEADY, [SAME])], github, monkeypatch, capsys)
    assert regressed.returncode == EXIT_REGRESSION and github.statuses[head][-1]["state"] == "failure"


def _verdict(kind: str) -> Verdict:
    return Verdict("fp", "w", {}, "runtime_s", kind, 1.05, 0.9, 1.2, 1.1, (1.0,) * 6, (1.05,) * 6)  # type: ignore[arg-type]


def test_a_comparison_that_measured_nothing_is_pending_never_success() -> None:
    """No verdict at all (every case lost on both sides): undecided, "nothing measured"; only one commit on both
    sides (decided without measuring) is a success."""
    nothing = pr.Outcome.of_verdicts(())
    assert nothing.state == "inconclusive" and nothing.headline() == "nothing measured"
    assert pr.status_of(nothing) == ("pending", pr.status_of(nothing)[1])
    assert "nothing measured on both sides" in pr.status_of(nothing)[1]
    assert pr.status_of(pr.Outcome("unchanged", (), ()))[0] == "success"
    undecided = pr.Outcome.of_verdicts((_verdict("inconclusive"),))
    state, description = pr.status_of(undecided)
    assert (undecided.state, state) == ("inconclusive", "pending") and description.startswith("undecided:")
    assert "not running" in description


def test_cases_a_shard_never_measured_make_a_decided_suite_undecided_and_are_named_in_the_comment() -> None:
    """Every verdict unchanged but 2 cases of a failed shard not measured: inconclusive, pending, the headline
    and the lead say so, and the comment's Shards lines name the shard (`daskbench merge`)."""
    outcome = pr.Outcome.of_verdicts((_verdict("unchanged"),), not_measured=2)
    assert outcome.state == "inconclusive" and outcome.headline() == "no regression, 2 cases not measured"
    assert pr.status_of(outcome)[0] == "pending"
    revision = pr.Revision("main", "a" * 40, Path("."))
    lines = ("1 of 2 shards measured; 3 cases planned, 2 not measured", "shard 2/2: 2 cases not measured (why)")
    markdown = pr.comment_markdown(outcome, pr.Page(revision, revision, "g", shards=lines))
    assert "had no result (a shard failed or was cancelled" in markdown and "Measured in shards" in markdown
    assert "Shards: 1 of 2 shards measured; 3 cases planned, 2 not measured." in markdown
    assert "- shard 2/2: 2 cases not measured (why)" in markdown
    assert pr.Outcome.of_verdicts((_verdict("unchanged"),)).state == "unchanged"


@pytest.mark.parametrize(("rounds", "code"), [([DOUBLE], EXIT_REGRESSION), ([WIDE], EXIT_UNDECIDED), ([SAME], EXIT_OK)])
def test_confirm_exits_3_when_a_suspect_is_undecided_side_by_side(
    rounds: list[list[float]], code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """A night 3x slower than three good ones (other versions); the side-by-side A/B of its suspect reads
    regressed (exit 1), undecided (exit 3) or unchanged (exit 0)."""
    db = f"sqlite:///{tmp_path / 'confirm.db'}"
    store = Store(db)
    good = [add_run(store, night, versions={"standin": "1.0", "python": "3.11.7"}) for night in range(3)]
    for run in good:
        add_results(store, run, SLOW, 0.2)
    store.set_baseline("main", [run.run_id for run in good])
    tonight = add_run(store, 3, label="tonight", versions={"standin": "1.1", "python": "3.11.7"})
    add_results(store, tonight, SLOW, 0.6)

    def run(self: confirm.Runner, plan: confirm.ConfirmPlan, group: str, good_python: str, tonight: str) -> Spent:
        add_lockstep_group(self.store, group, [(SLOW, rounds)], first=10)
        self.tag(plan, group)
        return Spent()

    monkeypatch.setattr(confirm, "build_good", lambda plan, options, say: sys.executable)
    monkeypatch.setattr(confirm.Runner, "run", run)
    done = daskbench_cli("confirm", "--baseline", "main", "--candidate", tonight.run_id, "--group", "c", "--db", db,
                         capsys=capsys)  # fmt: skip
    assert done.returncode == code, done.stdout + done.stderr
    assert ("a suspect is undecided side by side (exit 3)" in done.stdout) == (code == EXIT_UNDECIDED)


def test_a_cases_runtime_and_cost_that_read_alike_share_one_row_of_the_comment() -> None:
    """Runtime and cost of one case undecided with the same interval and rounds (cost is the runtime at one
    price): one row naming both metrics and both medians; another case's runtime keeps a row of its own."""
    runtime = _verdict("inconclusive")
    other = dataclasses.replace(runtime, fingerprint="fp2", workload="v")
    cost = dataclasses.replace(
        runtime, metric="cost_usd", baseline_values=(0.001,) * 6, candidate_values=(0.00105,) * 6
    )
    outcome = pr.Outcome.of_verdicts((cost, runtime, other))  # cost first: the row still says runtime first
    revision = pr.Revision("main", "a" * 40, Path("."))
    rows = [line for line in pr.comment_markdown(outcome, pr.Page(revision, revision, "g")).splitlines()
            if line.startswith("| **inconclusive**")]  # fmt: skip
    assert len(rows) == 2, rows
    cells = [cell.strip() for cell in rows[0].split("|")]
    assert cells[3] == "runtime, cost" and " / " in cells[4] and "$" in cells[4]
    assert cells[6] == "1.05x slower / 1.05x dearer" and cells[7] == "1.05 (0.90-1.20)" and cells[8] == "6"
    assert [cell.strip() for cell in rows[1].split("|")][3] == "runtime"
