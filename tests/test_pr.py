"""`daskbench pr`, end to end: a stand-in project in a real git repository, real overlays, real lockstep A/B.

The project ``standin`` (flit) has ``work()`` and ``steady()``, each sleeping 0.4 s, and a benchmark file
measuring both. Branch ``head`` makes ``work()`` 1.3x slower; branch ``fix`` (on head) restores it, so
``fix``'s tree is ``main``'s: a measured A/A (of ``work`` alone, to save time). Both measured runs talk to the loopback stand-in for GitHub
(`testing.github_server`), the second after the first, so the comment is created once and then edited. The
benchmark file refuses to run with a GitHub token in its environment: the sessions run the pull request's
code and never get it. ``--max-rounds 10 --floor 1.2`` (a planted 1.3x still reaches past it) lets
the cases decide in a few rounds even on a busy machine; a measurement costs about 3 s (restart, warm-up).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from daskbench import pr
from daskbench.judge.compare import compare_group
from daskbench.store import Store
from daskbench.verdicts import Verdict
from testing.github_server import FakeGitHub
from testing.standin import standin_project
from tests.helpers import GITHUB_TEST_TOKEN, PULL_NUMBER, daskbench_cli, git

NUMBER = PULL_NUMBER
BENCH = """
import os

import dask
import pytest
import standin

assert "GITHUB_TOKEN" not in os.environ, "a session running the pull request's code got the token"
pytestmark = pytest.mark.benchmark


def test_work(measure):
    assert measure(dask.delayed(standin.work)(), name="standin_work", params={}) == standin.VERSION


def test_steady(measure):
    assert measure(dask.delayed(standin.steady)(), name="standin_steady", params={}) == standin.VERSION
"""
SESSION = ["--", "--workers", "1", "--saturation", "inf"]
HOSTILE_SUBJECT = "make work() 1.3x slower <img src=x onerror=alert(1)> @maintainer #1 | `$(rm -rf ~)`"


def _commit(repo: Path, seconds: float, message: str) -> None:
    standin_project(repo, "0.1", seconds)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, quiet_machine: None) -> Path:
    """main (work 0.4 s), head (work 0.52 s: 1.3x slower) and fix on head (work 0.4 s again)."""
    root = tmp_path_factory.mktemp("pr")
    repo = root / "standin-project"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "test_standin.py").write_text(BENCH)
    git(repo, "init", "-q", "-b", "main")
    _commit(repo, 0.4, "the stand-in")
    git(repo, "checkout", "-q", "-b", "head")
    _commit(repo, 0.52, HOSTILE_SUBJECT)
    git(repo, "checkout", "-q", "-b", "fix")
    _commit(repo, 0.4, "work() as fast as before")
    git(repo, "checkout", "-q", "main")
    return repo


def _env(api: str | None = None, **extra: str) -> dict[str, str]:
    """This environment without GitHub Actions' or daskbench's settings, plus the stand-in's API and token."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DASKBENCH_", "GITHUB_"))}
    github = {"DASKBENCH_GITHUB_API": api, "GITHUB_TOKEN": GITHUB_TEST_TOKEN} if api else {}
    return {**kept, **github, **extra}


def _pr(project: Path, env: dict[str, str], *args: str, selected: tuple[str, ...] = (),
        as_documented: bool = False) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``daskbench pr ARGS`` in a fresh process in the project's folder, its store and cache beside it;
    ``selected``: more pytest arguments. ``as_documented``: in the form the docs show, ``pr [OPTIONS] BASE
    HEAD -- PYTEST_ARGS`` (``--`` right after the sides); else the options follow the sides."""
    flags = ["--cache-dir", str(project.parent / "cache"), "--db", f"sqlite:///{project.parent / 'pr.db'}",
             "--max-rounds", "10", "--floor", "1.2"]  # fmt: skip
    ordered = [*flags, *args[2:], *args[:2]] if as_documented else [*args, *flags]
    command = [sys.executable, "-m", "daskbench", "pr", *ordered, *SESSION, *selected]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300, env=env)


def _runtime(project: Path, group: str) -> dict[str, Verdict]:
    """The group's runtime verdicts, judged as `_pr` ran it (``--floor 1.2``)."""
    comparison = compare_group(Store(f"sqlite:///{project.parent / 'pr.db'}"), group, floors={"runtime_s": 1.2})
    return {v.workload: v for v in comparison.verdicts if v.metric == "runtime_s"}


def _group(stdout: str) -> str:
    return stdout.split("group `", 1)[1].split("`", 1)[0]


@pytest.fixture(scope="module")
def first(project: Path, pull_github: tuple[FakeGitHub, str]) -> subprocess.CompletedProcess[str]:
    """``daskbench pr --github o/r --pr 7 --report report.html main head -- ...`` (as the docs show it: ``--``
    right after the sides): the slower head, the first run on the pull request."""
    return _pr(project, _env(pull_github[1]), "main", "head", "--github", "owner/project", "--pr", str(NUMBER),
               "--report", str(project.parent / "report.html"), as_documented=True)  # fmt: skip


@pytest.fixture(scope="module")
def second(
    project: Path, pull_github: tuple[FakeGitHub, str], first: subprocess.CompletedProcess[str]
) -> subprocess.CompletedProcess[str]:
    """The pull request after its fix commit (head's tree is main's again): the second run, no report."""
    return _pr(project, _env(pull_github[1]), "main", "fix", "--github", "owner/project", "--pr", str(NUMBER),
               "--no-report", selected=("-k", "test_work"))  # fmt: skip


def test_pr_finds_the_slower_function_and_leaves_the_untouched_one_unchanged(
    project: Path, first: subprocess.CompletedProcess[str]
) -> None:
    """Exit 1; the Markdown lists standin_work's runtime as regressed (effect, interval, rounds) and counts
    standin_steady with the unchanged, memory as well as time; the report is written."""
    assert first.returncode == 1, first.stdout[-2000:] + first.stderr[-3000:]
    verdicts = _runtime(project, _group(first.stdout))
    assert verdicts["standin_work"].verdict == "regressed", verdicts
    assert 1.15 < (verdicts["standin_work"].ratio or 0) < 1.5
    assert verdicts["standin_steady"].verdict == "unchanged", verdicts
    rows = [line for line in first.stdout.splitlines() if line.startswith("| **")]
    assert any("**regressed** | `standin_work" in row and "| runtime" in row and "x slower" in row for row in rows)
    assert not any("standin_steady" in row for row in rows)
    assert first.stdout.startswith(pr.MARKER + "\n### daskbench: 1 case regressed")
    unchanged = next(line for line in first.stdout.splitlines() if line.startswith("Unchanged"))
    assert "runtime 1 case" in unchanged and "memory" in unchanged
    assert (project.parent / "report.html").stat().st_size > 10_000
    assert "Traceback" not in first.stderr and GITHUB_TEST_TOKEN not in first.stdout + first.stderr


def test_the_first_run_creates_one_comment_and_a_failure_status(
    project: Path, pull_github: tuple[FakeGitHub, str], first: subprocess.CompletedProcess[str]
) -> None:
    """One comment (the Markdown printed, behind the hidden marker) and the head commit: pending, then failure."""
    github = pull_github[0]
    head = git(project, "rev-parse", "head")
    assert [call["method"] for call in github.calls if call["path"].endswith("/comments")][:2] == ["GET", "POST"]
    assert github.comments[NUMBER][0] == first.stdout
    states = [status["state"] for status in github.statuses[head]]
    assert states[0] == "pending" and states[-1] == "failure"
    assert github.statuses[head][-1]["context"] == pr.STATUS_CONTEXT
    # the biggest effect: runtime (cost, runtime times a price, ties with it and comes after it)
    assert re.match(r"1 case regressed \(biggest: runtime 1\.\d+x slower\)$", github.statuses[head][-1]["description"])


def test_hostile_commit_text_reaches_the_comment_inert(first: subprocess.CompletedProcess[str]) -> None:
    """The head's subject (HTML, a mention, an issue reference, a pipe, backticks) is escaped prose."""
    side = next(line for line in first.stdout.splitlines() if line.startswith("base `main`"))
    assert "<img" not in first.stdout and "&lt;img src=x onerror=alert(1)&gt;" in side
    assert "@\u200bmaintainer" in side and "\\#\u200b1" in side and "\\|" in side and "\\`$(rm \\-rf \\~)\\`" in side


def test_a_fix_commit_edits_the_same_comment_and_sets_success(
    project: Path, pull_github: tuple[FakeGitHub, str], second: subprocess.CompletedProcess[str]
) -> None:
    """The second run (fix: main's tree again, a measured A/A) finds no regression, edits the one comment
    (no second appears) and sets success on the fix commit."""
    github = pull_github[0]
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    verdicts = _runtime(project, _group(second.stdout))
    assert not any(v.is_regression for v in verdicts.values()), verdicts
    assert "### daskbench: no regression" in second.stdout or "### daskbench: nothing changed" in second.stdout
    assert len(github.comments[NUMBER]) == 1 and github.comments[NUMBER][0] == second.stdout
    assert [c["method"] for c in github.calls if "/comments" in c["path"]] == ["GET", "POST", "GET", "PATCH"]
    fixed = git(project, "rev-parse", "fix")
    assert github.statuses[fixed][-1]["state"] == "success"
    assert "edited comment" in second.stderr


def test_pr_runs_are_never_the_latest_run_of_plain_compare(project: Path, first: subprocess.CompletedProcess[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Both sides' runs are tagged as a lockstep group and a pull request's; plain compare skips them."""
    db = f"sqlite:///{project.parent / 'pr.db'}"
    runs = Store(db).runs()
    assert runs and all(run.tags.get("ab_group") and run.tags.get(pr.TAG) for run in runs)
    assert {run.tags[pr.NUMBER_TAG] for run in runs} == {str(NUMBER)}
    done = daskbench_cli("compare", "--db", db, capsys=capsys)
    assert done.returncode == 2 and "made by daskbench ab" in done.stderr


def test_base_against_itself_says_nothing_changed(project: Path) -> None:
    """One commit on both sides: nothing measured, exit 0, "nothing changed"."""
    done = _pr(project, _env(), "main", "main")
    assert done.returncode == 0, done.stderr
    assert "### daskbench: nothing changed" in done.stdout and "nothing was measured" in done.stdout


def test_uncommitted_edits_are_said_to_be_unmeasured_in_the_terminal_and_the_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pr main HEAD`` in a checkout whose tracked files hold edits no commit has: a commit is measured as
    committed, so the edits are named as not measured, with the two ways to measure them, on stderr and in
    the Markdown (here base and head are one commit: nothing measured, exit 0). An untracked file is no
    edit; the checkout's folder as HEAD is the working tree, and then nothing is said."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    _commit(repo, 0.1, "the stand-in")
    (repo / "standin" / "__init__.py").write_text("VERSION = 'edited'\n")
    (repo / "results.html").write_text("untracked")
    monkeypatch.chdir(repo)
    for name in ("GITHUB_TOKEN", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    flags = ["--cache-dir", str(tmp_path / "cache"), "--db", f"sqlite:///{tmp_path / 'x.db'}", "--no-report"]
    done = daskbench_cli("pr", "main", "HEAD", *flags, capsys=capsys)
    assert done.returncode == 0, done.stderr
    said = "has uncommitted edits (1 file: standin/__init__.py); they are not measured"
    assert said in " ".join(done.stderr.split()), done.stderr
    markdown = " ".join(done.stdout.replace("\\", "").split())  # the note is escaped Markdown prose
    assert said in markdown and "give the checkout's folder as HEAD" in markdown, done.stdout
    assert "results.html" not in done.stderr + done.stdout
    git(repo, "checkout", "-q", "--", "standin/__init__.py")
    clean = daskbench_cli("pr", "main", "HEAD", *flags, capsys=capsys)
    assert clean.returncode == 0 and "uncommitted" not in clean.stderr + clean.stdout


def test_without_a_token_a_fork_writes_the_job_summary_only_and_says_so(project: Path, tmp_path: Path) -> None:
    """--github with no GITHUB_TOKEN in Actions (a fork's pull request): no API call, the summary says why."""
    summary = tmp_path / "summary.md"
    env = _env(None, GITHUB_STEP_SUMMARY=str(summary), DASKBENCH_GITHUB_API="http://127.0.0.1:9")
    done = _pr(project, env, "main", "main", "--github", "owner/project", "--pr", str(NUMBER))
    assert done.returncode == 0, done.stderr
    assert "no GITHUB_TOKEN" in done.stderr and "job summary only" in summary.read_text()
    assert summary.read_text().startswith(pr.MARKER)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["main", "nosuch"], "HEAD 'nosuch': "),
        (["main", "head", "--pr", "7"], "--pr needs --github"),
        (["main", "head", "--github", "owner/project"], "needs --pr N"),
        (["main", "head", "--github", "not a repo", "--pr", "7"], "is not owner/repo"),
        (["main", "head", "--github", "owner/project", "--pr", "7"], "--github needs a token in GITHUB_TOKEN"),
        (["main", "head", "--report-url", "javascript:alert(1)"], "--report-url 'javascript:alert(1)': give an http"),
        (["main", "head", "--repo", "/"], "--repo /: not a git checkout"),
        (["main", "head", "--report", "benchmarks"], "--report benchmarks is a folder"),
    ],
)
def test_bad_input_is_one_line_before_anything_is_built(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], said: str,
) -> None:  # fmt: skip
    """A ref that is nothing, --pr without --github and the reverse, a bad repository, no token outside
    Actions, a report URL that is no http(s) link, no checkout, a report path that is a folder: exit 2,
    one line, no environment built."""
    monkeypatch.chdir(project)
    for name in ("GITHUB_TOKEN", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "cache"
    done = daskbench_cli("pr", *args, "--cache-dir", str(cache), "--db", f"sqlite:///{tmp_path / 'x.db'}",
                         capsys=capsys)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert not cache.exists()


def test_an_inconclusive_comparison_is_a_pending_status_that_says_undecided() -> None:
    """Commit statuses have no neutral: undecided is pending (never success), its description "undecided:"."""
    undecided = Verdict("fp", "w", {}, "runtime_s", "inconclusive", 1.05, 0.9, 1.2, 1.1, (1.0,) * 6, (1.05,) * 6)
    outcome = pr.Outcome.of_verdicts((undecided,))
    state, description = pr.status_of(outcome)
    assert (outcome.state, state) == ("inconclusive", "pending") and description.startswith("undecided:")


def test_hostile_case_names_and_refs_keep_the_table_whole_and_inert(tmp_path: Path) -> None:
    """A case named with a pipe, HTML and a mention, and a branch and subject built to break out: each row keeps
    its 8 cells, HTML stands only inside code spans (shown as text), nobody is mentioned, the newline stays
    one line."""
    hostile = "evil|case <b>@root</b> `x`"
    verdict = Verdict("fp", hostile, {"k": "|"}, "runtime_s", "regressed", 1.3, 1.2, 1.4, 1.1, (1.0,) * 3, (1.3,) * 3)
    base = pr.Revision("main", "a" * 40, tmp_path, "fine")
    head = pr.Revision("x`|<img src=x>@owner", "b" * 40, tmp_path, "line one\n## line two <script>")
    text = pr.comment_markdown(pr.Outcome.of_verdicts((verdict,)), pr.Page(base, head, "g", "https://e.org/r"))
    row = next(line for line in text.splitlines() if line.startswith("| **regressed**"))
    assert len(row.replace("\\|", "").split("|")) == len(("", *pr.COLUMNS, "")) and "x slower" in row
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text.split("\n", 1)[1])  # code spans show HTML as text
    assert "<" not in prose and "&lt;script&gt;" in text and "``x`|<img src=x>@\u200bowner``" in text
    assert "@root" not in text and "@owner" not in text and "\n## line two" not in text
    assert "[report](https://e.org/r)" in text


def test_the_verdict_table_says_its_intervals_are_95_percent_for_a_case_alone_and_surer_for_a_suite(
    tmp_path: Path,
) -> None:
    """The column is "head/base (interval)", not "95%": a change counted for the whole suite cleared a surer
    interval (judge/suite.py); the line under the table says so."""
    verdict = Verdict("fp", "w", {}, "runtime_s", "regressed", 1.3, 1.2, 1.4, 1.1, (1.0,) * 3, (1.3,) * 3)
    side = pr.Revision("main", "a" * 40, tmp_path, "fine")
    text = pr.comment_markdown(pr.Outcome.of_verdicts((verdict,)), pr.Page(side, side, "g"))
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| verdict"))
    row = next(line for line in lines if line.startswith("| **regressed**"))
    said = lines[lines.index(row) + 2]
    assert "head/base (interval)" in header and "95%" not in header and "1.30 (1.20-1.40)" in row
    assert said.startswith("*Each interval holds at 95% for its case alone;") and "counted per suite" in said
