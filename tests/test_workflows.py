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


def _rendered_pr_template() -> dict[str, object]:
    """The workflow ``daskbench init --pr-workflow`` writes, with a placeholder install line."""
    from daskbench.cli.init import _template

    text = _template("daskbench-pr.yml.tmpl").replace("__INSTALL__", " " * 10 + "python -m pip install daskbench")
    return yaml.safe_load(text)


def test_this_repositorys_pr_workflow_is_the_one_init_writes() -> None:
    """pr.yml has the template's trigger, permissions, concurrency, label condition, env and artifact; only its
    install and measure steps are ci/ scripts (the thin-steps rule)."""
    ours, written = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text()), _rendered_pr_template()
    for key in (True, "permissions", "concurrency"):  # YAML 1.1 reads the key `on` as True
        assert ours[key] == written[key], key
    job, template = ours["jobs"]["benchmarks"], written["jobs"]["benchmarks"]  # type: ignore[index]
    assert job["if"] == template["if"] and job["env"] == template["env"]
    assert job["steps"][-1] == template["steps"][-1]
    measure = [[step for step in steps if step.get("name", "").startswith("Base and head")] for steps in
               (job["steps"], template["steps"])]  # fmt: skip
    assert measure[0][0]["env"] == measure[1][0]["env"] and "GITHUB_TOKEN" in measure[0][0]["env"]


@pytest.mark.parametrize("name", ["pr.yml", "template"])
def test_pull_request_text_reaches_no_script_but_through_env(name: str) -> None:
    """No ``${{ }}`` expression is spliced into a ``run:`` script of the pull-request workflows."""
    loaded = (
        _rendered_pr_template()
        if name == "template"
        else yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    )
    steps = [step for job in loaded["jobs"].values() for step in job["steps"]]  # type: ignore[attr-defined]
    assert [step["run"] for step in steps if "run" in step and "${{" in step["run"]] == []
