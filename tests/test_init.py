"""daskbench in another repository: `daskbench init`, the plugin's entry point, plain pytest runs.

Everything runs as a user would: the `daskbench` command and pytest in fresh processes of
this venv's Python, in an empty temporary folder, against a real LocalCluster and store.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from daskbench import provenance
from daskbench.cli import build_parser
from daskbench.cli.init import BENCHMARK, LOCAL_WARNING, PR_WORKFLOW, WORKFLOW, install_requirement
from daskbench.store import Store
from testing.readme import own_repository_block
from tests.helpers import daskbench_cli, git

PLAIN_TEST = """
def test_arithmetic():
    assert 1 + 1 == 2
"""


TINY_BENCHMARK = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_tiny_sum(measure):
    assert measure(dask.delayed(sum)([1, 2]), name="tiny_sum", params={"n": 2}) == 3
"""
Capsys = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"
#: A package's pyproject.toml: a build system, so CI installs it (`envs.is_package`).
PACKAGE = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "mine"\nversion = "1"\n'


def _env(**extra: str) -> dict[str, str]:
    """This environment without any DASKBENCH_* setting of the outer run, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("DASKBENCH_")}, **extra}


def run(folder: Path, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=env or _env())  # fmt: skip


def init(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(folder, "daskbench", "init", *args)


def test_init_writes_a_benchmark_the_settings_and_a_workflow(tmp_path: Path) -> None:
    """In an empty folder: the two files, a pyproject.toml with both tables, and the next command."""
    result = init(tmp_path, "repo")
    assert result.returncode == 0, result.stderr
    repo = tmp_path / "repo"
    assert (repo / BENCHMARK).read_text().count("def test_") == 1
    assert "pytest -m benchmark" in (repo / WORKFLOW).read_text()
    tools = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]
    assert tools["daskbench"]["size"] == "small"
    assert tools["pytest"]["ini_options"]["addopts"] == ["-m", "not benchmark"]
    assert f"wrote {BENCHMARK}" in result.stdout and f"wrote {WORKFLOW}" in result.stdout
    assert "next: cd repo && pytest -m benchmark --size tiny" in result.stdout
    ruff = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--select", "E,F,W,I,B,UP",
                           str(repo / BENCHMARK)], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout


def test_init_refuses_to_overwrite_and_force_replaces(tmp_path: Path) -> None:
    """A second init changes nothing and says so in one line (exit 2); --force replaces the files only."""
    assert init(tmp_path).returncode == 0
    (tmp_path / BENCHMARK).write_text("# my own edits\n")
    settings = (tmp_path / "pyproject.toml").read_text()
    refused = init(tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: {BENCHMARK} and {WORKFLOW} already exist in .; nothing written (use --force to replace)"
    ]
    assert (tmp_path / BENCHMARK).read_text() == "# my own edits\n"
    forced = init(tmp_path, "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"replaced {BENCHMARK}" in forced.stdout and "measure(" in (tmp_path / BENCHMARK).read_text()
    assert (tmp_path / "pyproject.toml").read_text() == settings
    assert "has [tool.daskbench] already" in forced.stdout


def test_init_keeps_the_settings_a_repository_has(tmp_path: Path) -> None:
    """Existing pytest settings are not touched (what to add is printed); a package gets installed in CI."""
    own = f'{PACKAGE}\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    (tmp_path / "pyproject.toml").write_text(own)
    result = init(tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith(own) and text.count("[tool.pytest.ini_options]") == 1
    assert tomllib.loads(text)["tool"]["daskbench"]["db"] == "sqlite:///results/daskbench.db"
    assert "has pytest settings already; merge into them:" in result.stdout
    assert 'addopts = ["-m", "not benchmark"]' in result.stdout
    assert "python -m pip install .\n" in (tmp_path / WORKFLOW).read_text()


def test_init_leaves_pyproject_alone_when_pytest_reads_tox_ini(tmp_path: Path) -> None:
    """With pytest settings in tox.ini, a pytest table in pyproject.toml would override them: none is added."""
    (tmp_path / "tox.ini").write_text("[pytest]\naddopts = -q\n")
    result = init(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "pytest" not in tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]
    assert "pytest reads its settings from tox.ini; add there:" in result.stdout
    assert 'addopts = -m "not benchmark"' in result.stdout
    assert (tmp_path / "tox.ini").read_text() == "[pytest]\naddopts = -q\n"


def test_init_with_a_broken_pyproject_writes_nothing(tmp_path: Path) -> None:
    """Invalid TOML is one error line (exit 2), and no file is written."""
    (tmp_path / "pyproject.toml").write_text("[tool.daskbench\n")
    result = init(tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "pyproject.toml is not valid TOML" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pyproject.toml"]


def test_written_workflow_passes_actionlint(tmp_path: Path) -> None:
    """actionlint accepts the written workflow (and rejects it once broken, so the check is real)."""
    assert init(tmp_path, "--install", "daskbench==0.1.0").returncode == 0
    actionlint = str(Path(sys.executable).parent / "actionlint")
    workflow = tmp_path / WORKFLOW
    assert "python -m pip install daskbench==0.1.0\n" in workflow.read_text()
    text = workflow.read_text()  # history carried as an export artifact, never an evictable cache
    assert "actions/cache" not in text and "daskbench export -o results/history.jsonl" in text
    assert "daskbench import results/history.jsonl" in text and "name: daskbench-history" in text
    result = subprocess.run([actionlint, str(workflow)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    workflow.write_text(workflow.read_text().replace("if: always()", "if: always(", 1))
    assert subprocess.run([actionlint, str(workflow)], capture_output=True, timeout=60).returncode == 1


@pytest.mark.parametrize("shards", [1, 3])
def test_the_nightly_goes_from_a_regression_to_its_confirmation_issue_and_culprit_with_commands_that_parse(
    tmp_path: Path, shards: int
) -> None:
    """The written nightly judges against history, and only what it blames is confirmed side by side; only
    what is confirmed is alerted and hunted to its first bad commit (an unconfirmable night alerts on the history
    alone), and the night fails on a confirmed regression. Each ``daskbench`` line of it is parsed by daskbench's
    own parser, its expressions stood in for, so no flag in it is one daskbench does not have. (GitHub Actions
    cannot run here; ci/nightly --quick runs the same commands end to end against a loopback GitHub.)"""
    assert init(tmp_path, "--install", "daskbench==0.1.0", "--shards", str(shards)).returncode == 0
    jobs = yaml.safe_load((tmp_path / WORKFLOW).read_text())["jobs"]
    steps = {step["name"]: step for step in jobs["benchmarks"]["steps"] if "name" in step}
    conditions = {name.split(" (")[0]: step.get("if") for name, step in steps.items()}
    assert conditions["Confirm side by side what regressed"] == "steps.judge.outputs.exit == '1'"
    assert conditions["One issue per confirmed regression"] == "steps.confirm.outputs.exit == '1'"
    assert (
        conditions["The first bad commit of dask or distributed, commented on each issue"]
        == conditions["One issue per confirmed regression"]
    )
    assert conditions["One issue per regression the history shows"] == "steps.confirm.outputs.exit == '2'"
    every = {step["name"]: step for job in jobs.values() for step in job["steps"] if "name" in step}
    commands = [shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "X", line)) for line in _daskbench_lines(every)]
    assert {argv[1] for argv in commands} >= {"compare", "confirm", "alert", "culprit", "report", "export"}
    parser = build_parser()
    for argv in commands:
        parser.parse_args([word for word in argv[1:] if not word.startswith(">")])
    if shards > 1:  # each shard measures its own, and one job after them all carries the night to the history
        assert jobs["benchmarks"]["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
        assert steps["Benchmarks"]["run"] == 'pytest -m benchmark --shard "$SHARD_OF"'
        assert jobs["history"]["needs"] == "benchmarks" and "always()" in jobs["history"]["if"]
        assert all('--candidate "${{ steps.run.outputs.id }}"' in argv_line for argv_line in _daskbench_lines(steps)
                   if argv_line.split()[1] in ("compare", "confirm", "alert", "culprit"))  # fmt: skip
    actionlint = subprocess.run([str(Path(sys.executable).parent / "actionlint"), str(tmp_path / WORKFLOW)],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
    assert actionlint.returncode == 0, actionlint.stdout + actionlint.stderr


def _daskbench_lines(steps: dict[str, Any]) -> list[str]:
    """The ``daskbench ...`` command lines of the steps' scripts, continuations joined, up to a pipe."""
    return [
        line.split(" | ")[0].strip()
        for step in steps.values()
        for line in step.get("run", "").replace("\\\n", " ").splitlines()
        if line.strip().startswith("daskbench ")
    ]


def test_init_pr_writes_only_the_pull_request_workflow_which_actionlint_accepts(tmp_path: Path) -> None:
    """``init --pr-workflow`` in a package: the PR workflow alone (label benchmark, daskbench pr with the inputs from env,
    the store and report uploaded), checked by actionlint; a second time refused, --force replaces it."""
    (tmp_path / "pyproject.toml").write_text(PACKAGE)
    done = init(tmp_path, "--pr-workflow", "--install", "daskbench==0.1.0")
    assert done.returncode == 0, done.stderr
    assert f"wrote {PR_WORKFLOW}" in done.stdout and not (tmp_path / WORKFLOW).exists()
    assert not (tmp_path / BENCHMARK).exists() and "daskbench" not in (tmp_path / "pyproject.toml").read_text()
    text = (tmp_path / PR_WORKFLOW).read_text()
    assert "python -m pip install daskbench==0.1.0\n" in text and "python -m pip install .\n" in text
    assert 'daskbench pr "$BASE_SHA" "$HEAD_SHA" --github "$REPOSITORY" --pr "$PR_NUMBER"' in text
    assert "github.event.label.name == 'benchmark'" in text and "results/pr.db" in text
    actionlint = str(Path(sys.executable).parent / "actionlint")
    result = subprocess.run([actionlint, str(tmp_path / PR_WORKFLOW)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    refused = init(tmp_path, "--pr-workflow", "--install", "daskbench==0.1.0")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--force" in refused.stderr
    assert init(tmp_path, "--pr-workflow", "--force", "--install", "daskbench==0.1.0").returncode == 0


@pytest.mark.parametrize(
    "flags", [(), ("--benchmark-skip",), ("--benchmark-disable",)], ids=["plain", "skip", "disable"]
)
def test_initialised_repository_runs_its_benchmark_and_stores_a_run(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """The real check: pytest -m benchmark runs the example on a LocalCluster and stores it.

    The plugin loads through its entry point (no conftest). pytest-benchmark's flags skip
    or disable only its own benchmarks: the daskbench measurement still runs and is stored.
    """
    assert init(tmp_path).returncode == 0
    db = f"sqlite:///{tmp_path / 'x.db'}"
    result = run(tmp_path, "pytest", "-m", "benchmark", "--size", "tiny", "--workers", "1", "--saturation", "inf",
                 "--db", db, *flags)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 passed" in result.stdout and "skipped" not in result.stdout
    assert "daskbench: cluster=local workers=1 saturation=inf size=tiny" in result.stdout
    (stored,) = Store(db).runs()
    assert [m.outcome for m in Store(db).measurements([stored.run_id])] == ["passed"]
    assert "benchmark: 1 tests" not in result.stdout  # pytest-benchmark's table only on request (--benchmark-columns)
    listed = run(tmp_path, "daskbench", "runs", "--db", db)
    assert listed.returncode == 0 and stored.run_id[:8] in listed.stdout


def test_plain_pytest_run_is_unaffected_by_daskbench(tmp_path: Path) -> None:
    """No daskbench fixture, no daskbench flag: a bad DASKBENCH_* value is ignored and nothing is printed."""
    (tmp_path / "test_plain.py").write_text(PLAIN_TEST)
    result = run(tmp_path, "pytest", env=_env(DASKBENCH_SATURATION="abc"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    plugins = next(line for line in result.stdout.splitlines() if line.startswith("plugins:"))
    assert "daskbench-" in plugins  # loaded through the entry point, and silent
    assert "daskbench:" not in result.stdout and "daskbench" not in result.stderr
    off = run(tmp_path, "pytest", "-p", "no:daskbench", env=_env(DASKBENCH_SATURATION="abc"))
    assert off.returncode == 0 and "daskbench" not in off.stdout


# -- what the workflow installs: daskbench's own install record (PEP 610 direct_url.json) ----


@pytest.mark.parametrize(
    ("record", "requirement"),
    [
        ({"url": "https://git.example/org/daskbench", "vcs_info": {"vcs": "git", "commit_id": COMMIT,
          "requested_revision": "main"}}, f"daskbench @ git+https://git.example/org/daskbench@{COMMIT}"),
        ({"url": "https://git.example/org/tools", "subdirectory": "daskbench", "vcs_info": {"vcs": "git",
          "commit_id": COMMIT}}, f"daskbench @ git+https://git.example/org/tools@{COMMIT}#subdirectory=daskbench"),
        ({"url": "https://files.example/daskbench-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {}}},
         "daskbench @ https://files.example/daskbench-0.1.0-py3-none-any.whl"),
        ({"url": "http://files.example/daskbench-0.1.0.tar.gz", "archive_info": {}},
         "daskbench @ http://files.example/daskbench-0.1.0.tar.gz"),
        (None, "daskbench==0.1.0"),
    ],
    ids=["vcs-pinned-to-its-commit", "vcs-subdirectory", "wheel-url", "sdist-url", "from-an-index"],
)  # fmt: skip
def test_install_requirement_reinstalls_a_reachable_source_without_warning(
    record: dict[str, Any] | None, requirement: str
) -> None:
    """A git install is pinned to its recorded commit, an http(s) archive is its URL, an index install its version."""
    assert install_requirement(record, "0.1.0") == (requirement, None)


@pytest.mark.parametrize(
    "record",
    [
        {"url": "file:///home/me/daskbench", "dir_info": {}},
        {"url": "file:///home/me/daskbench", "dir_info": {"editable": True}},
        {"url": "file:///home/me/dist/daskbench-0.1.0-py3-none-any.whl", "archive_info": {}},
        {"url": "file:///home/me/daskbench", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    ],
    ids=["directory", "editable-directory", "local-wheel", "local-git-clone"],
)
def test_install_requirement_of_a_local_path_keeps_it_and_warns(record: dict[str, Any]) -> None:
    """A local source still gets its line (CI cannot reach it), with the one warning saying how to fix it."""
    requirement, warning = install_requirement(record, "0.1.0")
    assert requirement.startswith("daskbench @ ") and "/home/me/" in requirement
    assert warning == LOCAL_WARNING
    assert "local path" in warning and "CI cannot reach" in warning and "--install 'daskbench @ git+https://" in warning
    assert len(f"warning: {warning}") <= 120


def test_init_from_a_local_checkout_warns_once_and_comments_the_workflow(tmp_path: Path) -> None:
    """This venv's daskbench is an editable install of this checkout: one warning line, a comment at the line."""
    result = init(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"warning: {LOCAL_WARNING}"]
    checkout = ROOT.as_uri()
    lines = (tmp_path / WORKFLOW).read_text().splitlines()
    install = lines.index(f"          python -m pip install 'daskbench @ {checkout}'")
    assert "CI cannot reach this local path" in lines[install - 2] and "git+https://" in lines[install - 2]
    assert f"workflow installs: daskbench @ {checkout}" in result.stdout
    actionlint = str(Path(sys.executable).parent / "actionlint")
    linted = subprocess.run([actionlint, str(tmp_path / WORKFLOW)], capture_output=True, text=True, timeout=60)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_install_flag_overrides_the_record_and_does_not_warn(tmp_path: Path, capsys: Capsys) -> None:
    spec = f"daskbench @ git+https://git.example/org/daskbench@{COMMIT}"
    result = daskbench_cli("init", str(tmp_path), "--install", spec, capsys=capsys)
    assert result.returncode == 0 and result.stderr == ""
    text = (tmp_path / WORKFLOW).read_text()
    assert f"python -m pip install 'daskbench @ git+https://git.example/org/daskbench@{COMMIT}'\n" in text
    assert "CI cannot reach" not in text


# -- results/ in .gitignore ------------------------------------------------------------------


def test_init_ignores_results_once(tmp_path: Path, capsys: Capsys) -> None:
    """A new .gitignore gets results/ and the summary says so; a second init (--force) adds nothing."""
    first = daskbench_cli("init", str(tmp_path), capsys=capsys)
    assert (tmp_path / ".gitignore").read_text() == "results/\n"
    assert "added results/ to .gitignore" in first.stdout
    second = daskbench_cli("init", str(tmp_path), "--force", capsys=capsys)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / ".gitignore").read_text() == "results/\n"
    assert ".gitignore" not in second.stdout


@pytest.mark.parametrize("line", ["/results/", "results", "/results", "results/"])
def test_init_leaves_a_gitignore_that_already_ignores_results(tmp_path: Path, line: str, capsys: Capsys) -> None:
    own = f"*.pyc\n  {line}\n.venv/\n"
    (tmp_path / ".gitignore").write_text(own)
    result = daskbench_cli("init", str(tmp_path), capsys=capsys)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".gitignore").read_text() == own and ".gitignore" not in result.stdout


def test_init_appends_results_to_a_gitignore_without_a_final_newline(tmp_path: Path, capsys: Capsys) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc\nresults.txt")
    assert daskbench_cli("init", str(tmp_path), capsys=capsys).returncode == 0
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\nresults.txt\nresults/\n"


# -- the run's label in a repository with no commit ------------------------------------------


@pytest.fixture
def no_ci_branch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A folder git does not look above, with no GitHub branch variables: what default_label sees locally."""
    for name in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


def test_default_label_says_why_it_falls_back_to_local(no_ci_branch: Path) -> None:
    """Outside git, in a repository with no commit, on a detached HEAD: ``local`` and the reason; a branch: its name."""
    assert provenance.default_label() == ("local", "not in a git repository")
    git(no_ci_branch, "init", "-q", "-b", "trunk")
    assert provenance.default_label() == ("local", "no git commit here")
    git(no_ci_branch, "commit", "-q", "--allow-empty", "-m", "first")
    assert provenance.default_label() == ("trunk", None)
    git(no_ci_branch, "checkout", "-q", "--detach")
    assert provenance.default_label() == ("local", "detached HEAD, no branch")


def test_default_label_is_the_ci_branch(no_ci_branch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_REF_NAME", "release-2")
    assert provenance.default_label() == ("release-2", None)


def test_header_says_the_label_in_a_repository_with_no_commit(tmp_path: Path) -> None:
    """In a fresh `git init` + `daskbench init`: the header names the fallback label and how to set one;
    the run is stored as ``local`` and git does not see results/. A given label gets no note."""
    git(tmp_path, "init", "-q")
    assert init(tmp_path, "--install", "daskbench==0.1.0").returncode == 0
    (tmp_path / "benchmarks" / "test_tiny.py").write_text(TINY_BENCHMARK)
    env = _env(GIT_CEILING_DIRECTORIES=str(tmp_path.parent))
    result = run(tmp_path, "pytest", "-m", "benchmark", "benchmarks/test_tiny.py", "--workers", "1",
                 "--saturation", "inf", "--size", "tiny", env=env)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    note = "daskbench: label=local (no git commit here; --label NAME or DASKBENCH_LABEL names the run)"
    assert note in result.stdout.splitlines()
    (stored,) = Store(f"sqlite:///{tmp_path / 'results' / 'daskbench.db'}").runs()
    assert stored.label == "local"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True, timeout=60, env=env).stdout  # fmt: skip
    assert "results/" not in status and ".gitignore" in status
    named = run(tmp_path, "pytest", "-m", "benchmark", "benchmarks/test_tiny.py", "--collect-only",
                env={**env, "DASKBENCH_LABEL": "nightly"})  # fmt: skip
    assert named.returncode == 0 and "daskbench: cluster=" in named.stdout and "label=" not in named.stdout


# -- the README's install lines, run as written ----------------------------------------------


def readme_install_lines() -> list[str]:
    """The README section's first bash block, up to and including `daskbench init`."""
    lines = own_repository_block()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("daskbench init")) + 1]


def test_readme_install_lines_work_as_written(tmp_path: Path) -> None:
    """The lines run verbatim in bash with a fresh venv first on PATH and the clone where they say
    (``~/daskbench``, a copy of this working tree): uv installs it, and init warns that CI cannot reach it.

    The fresh venv sees this venv's packages (a .pth file) so only daskbench itself is installed."""
    lines = readme_install_lines()
    assert lines[0].startswith("CLONE=~/daskbench ") and "pip install daskbench" not in "\n".join(lines)
    home, project, venv = tmp_path / "home", tmp_path / "project", tmp_path / "venv"
    shutil.copytree(ROOT, home / "daskbench", ignore=shutil.ignore_patterns(
        ".venv", ".git", "results", "build", "*.egg-info", "*_cache", "__pycache__"))  # fmt: skip
    project.mkdir()
    subprocess.run([Path(sys.base_prefix) / "bin" / "python3", "-m", "venv", venv], check=True, timeout=120)
    (next((venv / "lib").glob("python3*/site-packages")) / "parent.pth").write_text(sysconfig.get_paths()["purelib"])
    # the venv activated, as a user's is (uv installs into the active one, VIRTUAL_ENV)
    # (pip sees this venv's uv through the .pth and installs none: its uv is on the PATH after the fresh venv's)
    path = os.pathsep.join([str(venv / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = _env(HOME=str(home), PATH=path, VIRTUAL_ENV=str(venv))
    done = subprocess.run(["bash", "-euc", "\n".join(lines)], cwd=project, capture_output=True, text=True,
                          timeout=300, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "+ daskbench==" in done.stdout + done.stderr, done.stderr[-3000:]  # uv's line for what it installed
    assert f"warning: {LOCAL_WARNING}" in done.stderr.splitlines()
    checkout = (home / "daskbench").as_uri()
    assert f"python -m pip install 'daskbench @ {checkout}'" in (project / WORKFLOW).read_text()
