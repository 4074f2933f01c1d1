"""A pull request's check in shards (issue 43): ``daskbench init --pr-workflow --shards 2`` writes a GitHub Actions
matrix of two runners and a job that merges them; here the matrix's runners are clones of one repository run one
after another (GitHub Actions cannot run here), each its own fresh store, their steps' commands as the workflow
writes them. Then the merge job's command, as written, against the loopback GitHub stand-in: one comment, one status.

The repository is a folder of benchmarks (``daskbench init``'s kind): three cases, head making one of them 3x slower.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from daskbench.store import Store
from testing.github_server import FakeGitHub
from tests.helpers import daskbench_cli, git

WORKFLOW = Path(".github", "workflows", "daskbench-pr.yml")
SESSION = ["--max-rounds", "4", "--", "--size", "tiny", "--workers", "1", "--saturation", "inf"]
SUITE = """import time

import dask
import pytest

pytestmark = pytest.mark.benchmark
SLOWER = {}


def work(which):
    time.sleep(0.15 * SLOWER.get(which, 1))


@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_work(measure, which):
    measure(dask.delayed(work)(which), name="work", params={"which": which})
"""
NUMBER = 7


def _env(**extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DASKBENCH_", "GITHUB_"))}
    return {**kept, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


@pytest.fixture(scope="module")
def sharded_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``daskbench init`` and ``init --pr-workflow --shards 2`` committed on main; feature makes case b 3x slower."""
    repo = tmp_path_factory.mktemp("shards") / "origin"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for command in (["init", "--install", "daskbench==0.1.0"],
                    ["init", "--pr-workflow", "--shards", "2", "--install", "daskbench==0.1.0"]):  # fmt: skip
        done = daskbench_cli(*command, cwd=repo, env=_env())
        assert done.returncode == 0, done.stderr
    (repo / "benchmarks" / "test_daskbench_example.py").unlink()
    (repo / "benchmarks" / "test_work.py").write_text(SUITE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "benchmarks in two shards")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "benchmarks" / "test_work.py").write_text(SUITE.replace("SLOWER = {}", 'SLOWER = {"b": 3}'))
    git(repo, "commit", "-q", "-am", "b sleeps 3x longer")
    git(repo, "checkout", "-q", "main")
    return repo


def _workflow(repo: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((repo / WORKFLOW).read_text())
    return loaded


def _run_step(job: dict[str, Any], starts: str) -> str:
    return str(next(step for step in job["steps"] if step.get("name", "").startswith(starts))["run"]).strip()


def _values(repo: Path) -> dict[str, str]:
    """What GitHub puts in the workflow's env for pull request 7 of owner/origin, from main to feature."""
    return {"BASE_SHA": git(repo, "rev-parse", "main"), "HEAD_SHA": git(repo, "rev-parse", "feature"),
            "PR_NUMBER": str(NUMBER), "REPOSITORY": "owner/origin"}  # fmt: skip


def _job_env(workflow: dict[str, Any], job: str, values: dict[str, str], shard: int = 0) -> dict[str, str]:
    said = {**workflow["env"], **workflow["jobs"][job].get("env", {})}
    return {name: values.get(name, str(shard) if name == "SHARD" else str(value)) for name, value in said.items()}


@pytest.fixture(scope="module")
def shard_runs(sharded_repo: Path) -> dict[int, tuple[subprocess.CompletedProcess[str], Path]]:
    """Each shard of the matrix on a runner of its own (a fresh clone, its own store), one after another: the
    ``pr --shard`` step (the test's rounds and tiny cases added after it) and the export step, as written."""
    workflow, values = _workflow(sharded_repo), _values(sharded_repo)
    shard_job = workflow["jobs"]["shard"]
    assert shard_job["strategy"]["matrix"]["shard"] == [1, 2]
    done = {}
    for shard in (1, 2):
        runner = sharded_repo.parent / f"runner-{shard}"
        subprocess.run(["git", "clone", "-q", str(sharded_repo), str(runner)], check=True)
        env = _env(**_job_env(workflow, "shard", values, shard))
        cache = shlex.join(["--cache-dir", str(sharded_repo.parent / "cache"), *SESSION])
        measured = subprocess.run(["bash", "-c", f"{_run_step(shard_job, 'Shard')} {cache}"], cwd=runner, env=env,
                                  capture_output=True, text=True, timeout=900)  # fmt: skip
        exported = subprocess.run(["bash", "-c", _run_step(shard_job, "This shard's results")], cwd=runner, env=env,
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        done[shard] = (measured, runner / "results" / f"shard-{shard}.jsonl")
    return done


def _merge(repo: Path, files: list[Path], fake_api: str, folder: str) -> subprocess.CompletedProcess[str]:
    """The merge job's command as written, in a fresh clone holding the downloaded shard files."""
    workflow = _workflow(repo)
    runner = repo.parent / folder
    subprocess.run(["git", "clone", "-q", str(repo), str(runner)], check=True)
    (runner / "results" / "shards").mkdir(parents=True)
    for file in files:
        shutil.copy(file, runner / "results" / "shards" / file.name)
    env = _env(**_job_env(workflow, "merge", _values(repo)), GITHUB_TOKEN="ghp_test_token_for_loopback_only",
               DASKBENCH_GITHUB_API=fake_api)  # fmt: skip
    command = _run_step(workflow["jobs"]["merge"], "The shards judged together")
    return subprocess.run(["bash", "-c", command], cwd=runner, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def loopback(github: FakeGitHub) -> tuple[FakeGitHub, str]:
    github.add_pull(NUMBER)
    return github, os.environ["DASKBENCH_GITHUB_API"]


def test_each_shard_measures_its_own_cases_and_together_they_measure_the_suite_once(
    shard_runs: dict[int, tuple[subprocess.CompletedProcess[str], Path]],
) -> None:
    """Two runners split by count (no history): case a on shard 1, b and c on shard 2, each measured on one runner
    only; the shard holding b finds it regressed (exit 1), the other does not."""
    measured: dict[int, set[str]] = {}
    for shard, (done, export) in shard_runs.items():
        assert f"shard {shard}/2 of the suite" in " ".join(done.stderr.split()), done.stderr[-3000:]
        store = Store(f"sqlite:///{export.parent / 'pr.db'}")
        fingerprints = {m.fingerprint for m in store.measurements() if m.outcome == "passed"}
        measured[shard] = {str(case.params["which"]) for case in store.cases(fingerprints).values()}
        assert {run.tags.get("ab_shard") for run in store.runs()} == {f"{shard}/2"}
    assert measured == {1: {"a"}, 2: {"b", "c"}}
    assert shard_runs[2][0].returncode == 1 and shard_runs[1][0].returncode in (0, 3), shard_runs[1][0].stderr[-2000:]


def test_the_merge_job_judges_both_shards_together_on_one_comment_and_status(
    sharded_repo: Path,
    shard_runs: dict[int, tuple[subprocess.CompletedProcess[str], Path]],
    loopback: tuple[FakeGitHub, str],
) -> None:
    """The merge step as written: both files imported, b regressed, a failure status on head, one comment saying
    both shards measured and the suite-level rate of false alarms, linking the one report of every shard's cases."""
    fake, api = loopback
    done = _merge(sharded_repo, [shard_runs[1][1], shard_runs[2][1]], api, "merge-both")
    assert done.returncode == 1, done.stderr[-3000:]
    said = " ".join(done.stderr.split())
    assert "merge: 2 of 2 shards measured; 3 cases planned, every one measured" in said
    (comment,) = fake.comments[NUMBER]
    assert comment == done.stdout and "### daskbench: 1 case regressed" in comment
    assert "Measured in shards" in comment and "false alarms" in comment
    head = _values(sharded_repo)["HEAD_SHA"]
    assert fake.statuses[head][-1]["state"] == "failure"
    assert "report: `results/pr.html`" in comment
    page = (sharded_repo.parent / "merge-both" / "results" / "pr.html").read_text()
    # a section for each case the candidate side measured: shard 1's a and shard 2's b and c, in one report
    assert [f'id="wl-{index}-work"' in page for index in range(4)] == [True, True, True, False]


def test_a_shard_without_results_is_named_and_its_cases_are_not_measured_never_unchanged(
    sharded_repo: Path,
    shard_runs: dict[int, tuple[subprocess.CompletedProcess[str], Path]],
    loopback: tuple[FakeGitHub, str],
) -> None:
    """Shard 2's runner failed before uploading (only shard 1's file is downloaded): the merge names shard 2 and its
    two cases, the state is undecided (exit 3), the status pending, never success."""
    fake, api = loopback
    done = _merge(sharded_repo, [shard_runs[1][1]], api, "merge-one")
    assert done.returncode == 3, done.stderr[-3000:]
    said = " ".join(done.stderr.split())
    assert "1 of 2 shards measured; 3 cases planned, 2 not measured" in said
    assert "shard 2/2: 2 cases not measured (no results: the shard failed or was cancelled)" in said
    (comment,) = fake.comments[NUMBER]
    assert "2 cases not measured" in comment and "shard 2/2" in comment
    head = _values(sharded_repo)["HEAD_SHA"]
    assert [status["state"] for status in fake.statuses[head]] == ["pending"]


def test_a_merge_of_another_comparisons_shards_is_one_line_and_imports_nothing(
    sharded_repo: Path, shard_runs: dict[int, tuple[subprocess.CompletedProcess[str], Path]], tmp_path: Path
) -> None:
    db = tmp_path / "merged.db"
    other = "0" * 40
    done = daskbench_cli("merge", str(shard_runs[1][1]), "--base", other, "--head", other, "--db", f"sqlite:///{db}",
                         cwd=tmp_path, env=_env())  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "not a shard of base 0000000000" in done.stderr
    assert not db.exists() or Store(f"sqlite:///{db}").runs() == []


def test_init_writes_a_matrix_of_n_runners_and_a_merge_job_that_actionlint_accepts(tmp_path: Path) -> None:
    done = daskbench_cli("init", "--pr-workflow", "--shards", "3", "--install", "daskbench==0.1.0", str(tmp_path),
                         env=_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    workflow = _workflow(tmp_path)
    assert workflow["jobs"]["shard"]["strategy"] == {"fail-fast": False, "matrix": {"shard": [1, 2, 3]}}
    assert workflow["jobs"]["merge"]["needs"] == "shard" and "always()" in workflow["jobs"]["merge"]["if"]
    assert '--shard "$SHARD/3"' in _run_step(workflow["jobs"]["shard"], "Shard")
    lint = subprocess.run([str(Path(sys.executable).parent / "actionlint"), str(tmp_path / WORKFLOW)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["pr", "main", "main", "--shard", "3/2"], "--shard '3/2': give K/N, shard K of N"),
        (["pr", "main", "main", "--shard", "1/2", "--github", "o/r", "--pr", "1"], "a shard does not comment"),
        (["merge", "nowhere"], "'nowhere' is no file or folder"),
    ],
)
def test_sharding_mistakes_are_one_line_before_anything_runs(args: list[str], said: str, tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "empty")
    done = daskbench_cli(*args, cwd=tmp_path, env=_env())
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "results").exists()
