"""The repository's own workflows: actionlint accepts them, and every step that runs code calls a ci/ script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = str(Path(sys.executable).parent / "actionlint")


def test_both_gate_workflows_exist() -> None:
    """The nightly gate and the A/B workflow are both checked in."""
    assert {path.name for path in WORKFLOWS} >= {"nightly.yml", "ab.yml"}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    """actionlint (with its expression and shell checks) finds nothing in the workflow."""
    result = subprocess.run([ACTIONLINT, str(workflow)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_steps_stay_thin(workflow: Path) -> None:
    """Each `run:` step is one call of an executable script in ci/, so what CI runs is what .ci/run exercises."""
    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    runs = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    assert runs
    for command in runs:
        script = command.split()[0]
        assert script.startswith("ci/") and "\n" not in command.strip(), command
        assert (ROOT / script).is_file() and (ROOT / script).stat().st_mode & 0o111, script


def test_ci_run_exercises_the_quick_nightly_after_readme_command_1() -> None:
    """.ci/run keeps README command 1 first and runs ci/nightly --quick."""
    text = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    quick = next(n for n, line in enumerate(commands) if line.endswith("ci/nightly --quick"))
    assert commands.index("ci/setup && .venv/bin/pytest -m benchmark") < quick
