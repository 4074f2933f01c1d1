"""daskbench in another repository: `daskbench init`, the plugin's entry point, plain pytest runs.

Everything runs as a user would: the `daskbench` command and pytest in fresh processes of
this venv's Python, in an empty temporary folder, against a real LocalCluster and store.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from daskbench.cli.init import BENCHMARK, WORKFLOW
from daskbench.store import Store

PLAIN_TEST = """
def test_arithmetic():
    assert 1 + 1 == 2
"""


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
    own = '[project]\nname = "mine"\nversion = "1"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
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
