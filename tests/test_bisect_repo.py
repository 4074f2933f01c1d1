"""`daskbench bisect --repo` over the commits of a git checkout, end to end: real commits, real source
installs (flit, built in isolation), real overlay environments, real lockstep A/B.

The test makes a git repository of the stand-in package, ``standin`` (``tests.helpers.standin_project``, a flit
project): its first commit's ``standin.work()`` sleeps 0.5 s; six commits follow, the fifth of which makes it sleep
1.5x longer, and the third of which does not build (a pyproject.toml no installer can read; the fourth mends it),
the first middle step of the bisection: it is skipped as ``git bisect skip`` does (issue 35; one bisection here
tries both, where test_bisect_faults.py once ran a second for the skip). A benchmark measures
``dask.delayed(standin.work)()``; each step's environment is an overlay over this interpreter (``--inherit``)
holding only that commit's standin. From the first commit to the fourth nothing is slower: the A/A bisection. The
change is hunted with the floor rule, each step against ``--floor runtime=1.3`` as step 0 was (the geometric
midpoint of 1 and the bad end's lower bound, about 1.2, is under the floor; test_bisect.py's 4x takes the
boundary's path). ``--max-rounds 3`` lets a clear step decide at its first look: the sleep is long enough (0.5 s,
not the release test's 0.2 s) and the planted 1.5x far enough past the floor that the scheduling noise of a busy
2-core machine rarely leaves a step undecided (which costs an attempt with twice the rounds: at 1.3x against a
floor of 1.2, 108-178 s in CI).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from daskbench.bisect import plan as bisect_plan
from daskbench.store import Store
from testing.standin import STANDIN_BENCH
from tests.helpers import daskbench_cli, git, standin_checkout

SESSION = ["--floor", "runtime=1.3", "--", "--workers", "1", "--saturation", "inf"]
#: The commit (1 to `COMMITS` after the first) that makes work() 1.5x slower, and the one that does not build.
PLANTED, COMMITS, BROKEN = 5, 6, 3
SUBJECTS = {note: f"note {note}: nothing that matters" for note in range(1, COMMITS + 1)} | {
    PLANTED: "work(): sleep 1.5x longer"
}


def standin_repo(repo: Path) -> list[str]:
    """The checkout: the first commit, then `COMMITS`, the `PLANTED`-th 1.5x slower from then on, the `BROKEN`-th
    with a pyproject.toml that does not parse; their ids."""
    return standin_checkout(repo, COMMITS, PLANTED, 1.5, SUBJECTS, broken=BROKEN)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, quiet_machine: None) -> Path:
    """The benchmark suite, the checkout and the store of this module's bisections."""
    root = tmp_path_factory.mktemp("bisect-repo")
    (root / "test_bench.py").write_text(STANDIN_BENCH)
    standin_repo(root / "standin")
    return root


@pytest.fixture(scope="module")
def commits(folder: Path) -> list[str]:
    """The checkout's commits, oldest first."""
    return git(folder / "standin", "rev-list", "--reverse", "HEAD").split()


def _bisect(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``daskbench bisect --repo standin ... --inherit`` in a fresh process in ``folder``."""
    flags = ["--repo", str(folder / "standin"), "--inherit", "--cache-dir", str(folder / "cache"),
             "--db", f"sqlite:///{folder / 'bisect.db'}", "--max-rounds", "3"]  # fmt: skip
    command = [sys.executable, "-m", "daskbench", "bisect", *flags, *args, *SESSION]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def found(folder: Path, commits: list[str]) -> subprocess.CompletedProcess[str]:
    """The bisection ``found``: the first commit (good) to the last (bad)."""
    return _bisect(folder, "--good", commits[0], "--bad", "main", "--group", "found")


def _steps(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("step ")]


def test_bisect_repo_names_the_commit_that_planted_the_slowdown_within_four_steps(
    found: subprocess.CompletedProcess[str], commits: list[str]
) -> None:
    """Exit 1: the planted commit, full id and subject, in at most 4 steps after step 0, each shown with
    its commit (short id, subject) and verdict; the culprit carries its step's evidence."""
    assert found.returncode == 1, found.stdout[-2000:] + found.stderr[-3000:]
    steps = _steps(found)
    assert 2 <= len(steps) <= 5, found.stdout
    assert steps[0].startswith(f"step 0  {commits[-1][:12]} note {COMMITS}: nothing that matters  regressed")
    assert all(any(f"  {word}  " in line for word in ("regressed", "unchanged", "improved")) for line in steps)
    assert f"first bad commit: {commits[PLANTED]} work(): sleep 1.5x longer" in found.stdout
    assert "each step against the floor 1.30" in found.stderr, found.stderr[-3000:]
    assert "standin_work regressed" in found.stdout and "rounds" in found.stdout
    assert max(len(line) for line in found.stdout.splitlines()) <= 120
    assert "Traceback" not in found.stderr


def test_a_middle_commit_that_does_not_build_is_said_once_skipped_and_measured_nothing(
    found: subprocess.CompletedProcess[str], folder: Path, commits: list[str]
) -> None:
    """The unbuildable commit (the first middle step) is said once, naming it and the installer's own words, and
    skipped as ``git bisect skip`` does: its neighbour is measured instead, the planted commit still named (the test
    above), and no run of the bisection is tagged with the skipped commit."""
    said = [line for line in found.stdout.splitlines() if "does not build, skipped" in line]
    assert len(said) == 1 and commits[BROKEN][:10] in said[0], found.stdout
    runs = [run for run in Store(f"sqlite:///{folder / 'bisect.db'}").runs() if run.tags.get("bisect") == "found"]
    measured = {run.tags["bisect_commit"] for run in runs if "bisect_commit" in run.tags}
    assert commits[BROKEN] not in measured and commits[BROKEN - 1] in measured, measured


def test_every_commit_step_is_tagged_and_a_resume_reuses_them(
    found: subprocess.CompletedProcess[str], folder: Path, commits: list[str]
) -> None:
    """Each step's runs carry the commit, its subject and the checkout; ``--resume found`` (checkout and
    ends read back from the tags) runs nothing new and names the planted commit again."""
    runs = [run for run in Store(f"sqlite:///{folder / 'bisect.db'}").runs() if run.tags.get("bisect") == "found"]
    assert {run.tags["bisect_repo"] for run in runs} == {str(folder / "standin")}
    # a step's last attempt holds its verdict (an undecided first attempt is raised on a busy machine: CI run 11)
    attempts = sorted(runs, key=lambda run: (run.tags["bisect_step"], int(run.tags["bisect_attempt"])))
    steps = {run.tags["bisect_commit"]: run.tags["bisect_verdict"] for run in attempts}
    assert steps[commits[-1]] == "regressed" and steps[commits[PLANTED]] == "regressed"
    again = subprocess.run([sys.executable, "-m", "daskbench", "bisect", "--group", "found", "--inherit",
                            "--cache-dir", str(folder / "cache"), "--db", f"sqlite:///{folder / 'bisect.db'}",
                            *SESSION], cwd=folder, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert again.returncode == 1, again.stderr[-2000:]
    assert f"first bad commit: {commits[PLANTED]}" in again.stdout and "(stored)" in again.stdout
    assert "bisect: step" not in again.stderr


def test_an_a_a_bisection_of_commits_says_no_regression(
    found: subprocess.CompletedProcess[str], folder: Path, commits: list[str]
) -> None:
    """The first commit to the fourth, none slower: step 0 finds no regression; exit 0, no culprit."""
    done = _bisect(folder, "--good", commits[0], "--bad", commits[PLANTED - 1], "--group", "flat")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "no regression between good and bad" in done.stdout and "first bad" not in done.stdout
    assert [line[:20] for line in _steps(done)] == [f"step 0  {commits[PLANTED - 1][:12]}"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--repo", "{tmp}", "--good", "HEAD~1", "--bad", "HEAD"], "--repo {tmp}: not a git checkout"),
        (["--repo", "{tmp}/nowhere", "--good", "HEAD~1", "--bad", "HEAD"], "--repo {tmp}/nowhere: no such folder"),
        (["--repo", "{repo}", "--good", "v9", "--bad", "HEAD"], "--good 'v9': {repo} has no such branch, tag"),
        (["--repo", "{repo}", "--good", "main", "--bad", "HEAD"], "are the same commit"),
        (["--repo", "{repo}", "--good", "HEAD", "--bad", "HEAD~3"], "is not an ancestor of"),
        (["--repo", "{repo}", "--good", "HEAD~3", "--bad", "HEAD", "--only", "standin"], "--only names packages"),
    ],
)  # fmt: skip
def test_bad_repo_input_is_one_line_before_anything_is_built_or_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """Not a checkout, no such folder, an unknown ref, identical ends, good not an ancestor of bad, --only:
    exit 2, one line, and no environment cache made."""
    repo = tmp_path / "standin"
    standin_repo(repo)
    db, cache = f"sqlite:///{tmp_path / 'bad.db'}", tmp_path / "cache"
    filled = [arg.format(tmp=tmp_path, repo=repo) for arg in args]
    done = daskbench_cli("bisect", *filled, "--inherit", "--cache-dir", str(cache), "--db", db, capsys=capsys)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said.format(tmp=tmp_path, repo=repo) in done.stderr, done.stderr
    assert not cache.exists()


def test_a_commit_candidate_shows_its_short_id_and_its_subject_escaped_and_cut() -> None:
    """Label: the 12-char id; description: id and subject, control characters escaped, cut to 40."""
    candidate = bisect_plan.Candidate(commit="1a2b3c4d5e6f7a8b9c0d" * 2, subject="fix \x1b[31mred\x1b[0m " + "x" * 60)
    assert candidate.label() == "1a2b3c4d5e6f"
    described = candidate.describe()
    assert described.startswith("1a2b3c4d5e6f fix \\x1b[31mred") and described.endswith("...")
    assert "\x1b" not in described and len(described) == 12 + 1 + bisect_plan.SUBJECT_WIDTH
