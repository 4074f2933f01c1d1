"""`daskbench pr` on the repositories teams have (issue 42): not a package, but a folder of benchmarks. End to end:
real git repositories, real lockstep sessions, real uv installs.

- **The README's repository**: the section "Using daskbench in your own repository" as a user runs it (its
  ``daskbench init`` line, in a fresh git repository), plus ``daskbench init --pr``, committed on ``main``; branch
  ``feature`` changes the example benchmark. The ``pr`` step of the workflow ``init --pr`` wrote runs as written
  there, from the workflow's own env (GitHub's values filled in; no token, so the job summary takes the table), with
  only the test's budget added (``--max-rounds 3``, the cache) and a tiny case (``-- --size tiny --workers 1
  --saturation inf``). Nothing is built (the tree is no package), and each side's session runs in that side's
  exported tree: its runs record that commit.
- **A folder of benchmarks with a requirements.txt** (no pyproject.toml): head adds a vendored package to it and
  imports it. The sides' requirements differ, so each side runs in an environment built from its own
  requirements: head's has the package, base's has not (each benchmark checks it).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from daskbench.store import Store
from testing.standin import standin_project
from tests.helpers import daskbench_cli, git

ROOT = Path(__file__).resolve().parent.parent
SESSION = ["--", "--size", "tiny", "--workers", "1", "--saturation", "inf"]
BUDGET = ["--max-rounds", "3"]
PR_WORKFLOW = Path(".github", "workflows", "daskbench-pr.yml")
BASE_WORK = """import importlib.util
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def work():
    time.sleep(0.2)


def test_work(measure):
    assert importlib.util.find_spec("standin") is None, "base's environment holds head's requirement"
    measure(dask.delayed(work)(), name="work", params={})
"""
HEAD_WORK = """import dask
import pytest
import standin

pytestmark = pytest.mark.benchmark


def test_work(measure):
    assert measure(dask.delayed(standin.work)(), name="work", params={}) == "1.1"
"""


def _env(**extra: str) -> dict[str, str]:
    """This environment without the outer run's daskbench or GitHub settings, plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DASKBENCH_", "GITHUB_"))}
    return {**kept, **extra}


def _readme_init() -> list[str]:
    """The ``daskbench init`` line of the README's section "Using daskbench in your own repository", as written."""
    section = (ROOT / "README.md").read_text().split("## Using daskbench in your own repository", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    line = next(line for line in block.group(1).splitlines() if line.startswith("daskbench init"))
    return shlex.split(line, comments=True)


def _commits(repo: Path, db: Path) -> dict[str, set[str | None]]:
    """The commits each side's runs recorded (side A: base, B: head): what git said in the session's folder."""
    found: dict[str, set[str | None]] = {}
    for run in Store(f"sqlite:///{db}").runs():
        found.setdefault(run.tags.get("ab_side", "?"), set()).add(run.git_sha)
    return found


def _workflow(repo: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((repo / PR_WORKFLOW).read_text())
    return loaded


def _step(workflow: dict[str, Any], starts: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = workflow["jobs"]["benchmarks"]["steps"]
    return next(step for step in steps if step.get("name", "").startswith(starts))


@pytest.fixture(scope="module")
def readme_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """git init, the README's ``daskbench init``, ``daskbench init --pr``, committed on main; branch feature
    changes the example benchmark (its assertion's tolerance)."""
    repo = tmp_path_factory.mktemp("own") / "my-benchmarks"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for command in (_readme_init()[1:], ["init", "--pr-workflow", "--install", "daskbench==0.1.0"]):
        done = daskbench_cli(*command, cwd=repo, env=_env())
        assert done.returncode == 0, done.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "daskbench init")
    git(repo, "checkout", "-q", "-b", "feature")
    example = repo / "benchmarks" / "test_daskbench_example.py"
    example.write_text(example.read_text().replace("atol=1e-9", "atol=1e-8"))
    git(repo, "commit", "-q", "-am", "a looser tolerance")
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.fixture(scope="module")
def workflow_pr(readme_repo: Path, quiet_machine: None) -> subprocess.CompletedProcess[str]:
    """The workflow's ``daskbench pr`` step in the README's repository, as written, in its job's env."""
    workflow = _workflow(readme_repo)
    values = {"BASE_SHA": git(readme_repo, "rev-parse", "main"), "HEAD_SHA": git(readme_repo, "rev-parse", "feature"),
              "PR_NUMBER": "7", "REPOSITORY": "owner/my-benchmarks"}  # fmt: skip
    job_env = {name: values.get(name, str(value)) for name, value in workflow["jobs"]["benchmarks"]["env"].items()}
    summary = readme_repo.parent / "summary.md"
    env = _env(**job_env, GITHUB_STEP_SUMMARY=str(summary), GITHUB_TOKEN="")
    command = _step(workflow, "Base and head")["run"].strip()
    extra = shlex.join([*BUDGET, "--cache-dir", str(readme_repo.parent / "cache"), *SESSION])
    return subprocess.run(["bash", "-c", f"{command} {extra}"], cwd=readme_repo, env={**env, "PATH": _path()},
                          capture_output=True, text=True, timeout=900)  # fmt: skip


def _path() -> str:
    """PATH with this venv's bin first: ``daskbench`` as the workflow calls it."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def test_the_readme_repositorys_workflow_installs_daskbench_alone_and_warns_of_nothing(readme_repo: Path) -> None:
    """init's settings make no package: the install step is daskbench's line alone (no ``pip install .``, which
    failed: no [build-system]); ``init --pr`` finds nothing that would not work in CI."""
    run = _step(_workflow(readme_repo), "Install daskbench")["run"]
    assert run.split("\n") == ["python -m pip install daskbench==0.1.0", ""]
    again = daskbench_cli(
        "init", "--pr-workflow", "--force", "--install", "daskbench==0.1.0", cwd=readme_repo, env=_env()
    )
    assert again.returncode == 0 and again.stderr == "", again.stderr
    said = " ".join(again.stdout.split())  # wrapped at 120 columns
    assert "installs: daskbench==0.1.0 alone: a folder of benchmarks (no [build-system]" in said
    assert git(readme_repo, "status", "--porcelain") == ""  # the same file, written again


def test_pr_measures_each_commits_files_in_the_readmes_repository(
    readme_repo: Path, workflow_pr: subprocess.CompletedProcess[str]
) -> None:
    """The workflow's ``pr`` ends with a verdict (exit 0 unchanged, 3 still undecided at 3 rounds, or 1: beside the
    other tests an unchanged side's session was once 1.5x slower than its twin for all 3 rounds, so the verdict is
    not this test's subject), builds nothing, says why, and each side's runs recorded its own commit: the session
    ran in that side's tree."""
    assert workflow_pr.returncode in (0, 1, 3), workflow_pr.stderr[-3000:]
    assert "pr: measured in " in workflow_pr.stderr, workflow_pr.stderr[-3000:]
    assert (workflow_pr.returncode == 3) == ("1 case undecided" in workflow_pr.stderr), workflow_pr.stderr[-3000:]
    err = " ".join(workflow_pr.stderr.split())
    assert "Failed to parse metadata" not in err and "env: building" not in err
    assert "is a folder of benchmarks (no [build-system] in pyproject.toml, no setup.py or setup.cfg)" in err
    assert "no GITHUB_TOKEN" in err and "### daskbench:" in (readme_repo.parent / "summary.md").read_text()
    main, feature = git(readme_repo, "rev-parse", "main"), git(readme_repo, "rev-parse", "feature")
    assert _commits(readme_repo, readme_repo / "results" / "pr.db") == {"A": {main}, "B": {feature}}


@pytest.fixture(scope="module")
def requirements_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """benchmarks/test_work.py and requirements.txt (toolz), no pyproject.toml; feature vendors the stand-in
    package, adds it to requirements.txt (``./vendor/standin``) and measures its ``work()``."""
    repo = tmp_path_factory.mktemp("reqs") / "folder-of-benchmarks"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "test_work.py").write_text(BASE_WORK)
    (repo / "requirements.txt").write_text("# what the benchmarks import besides daskbench\ntoolz\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "benchmarks")
    git(repo, "checkout", "-q", "-b", "feature")
    standin_project(repo / "vendor" / "standin", "1.1", 0.2)
    (repo / "benchmarks" / "test_work.py").write_text(HEAD_WORK)
    (repo / "requirements.txt").write_text("toolz\n./vendor/standin\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "work() from the vendored stand-in")
    git(repo, "checkout", "-q", "main")
    return repo


def test_pr_builds_each_side_of_a_requirements_folder_from_its_own_requirements(requirements_repo: Path) -> None:
    """The sides' requirements differ: said, each side built from its own (head's holds the vendored package,
    base's not: each benchmark asserts it), both measured, each in its own commit's tree; ``init --pr`` writes
    the requirements' install line, not the package's."""
    db = requirements_repo.parent / "pr.db"
    done = daskbench_cli("pr", "main", "feature", *BUDGET, "--db", f"sqlite:///{db}", "--no-report", "--cache-dir",
                         str(requirements_repo.parent / "cache"), *SESSION, cwd=requirements_repo, env=_env(),
                         timeout=900)  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr[-3000:]
    err = " ".join(done.stderr.split())
    assert "head's declared dependencies differ (./vendor/standin: added (any version))" in err
    assert "env: building" in err and " for base " in err and " for head " in err
    main, feature = git(requirements_repo, "rev-parse", "main"), git(requirements_repo, "rev-parse", "feature")
    assert _commits(requirements_repo, db) == {"A": {main}, "B": {feature}}
    store = Store(f"sqlite:///{db}")
    outcomes = {run.tags["ab_side"]: {m.outcome for m in store.measurements([run.run_id])} for run in store.runs()}
    assert outcomes == {"A": {"passed"}, "B": {"passed"}}, done.stdout
    written = daskbench_cli("init", "--pr-workflow", "--install", "daskbench==0.1.0", cwd=requirements_repo, env=_env())
    assert written.returncode == 0, written.stderr
    run = _step(_workflow(requirements_repo), "Install daskbench")["run"]
    assert run.split("\n") == [
        "python -m pip install daskbench==0.1.0",
        "python -m pip install -r requirements.txt",
        "",
    ]
