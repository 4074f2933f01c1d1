"""The checkout's top folders keep to their kind: ci/ holds CI steps only (each file run by .ci/run or a
workflow, or by a step they run), measure/ the measurement scripts, each listed in measure/README.md's index
with its shell and Python halves named alike, and the wheel ships daskbench alone (testing/, tools/, measure/
and ci/ stay in the checkout). Files are read as text, never run."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
#: A use of a file of ci/: a path ``ci/nightly``, ``$ROOT/ci/quick/test_quick.py`` or a module
#: ``ci.quick.standin`` (``python -m``); not ``.ci/run``.
CI_USE = re.compile(r"(?<![\w.-])ci([/.])([\w-]+(?:\1[\w-]+)*(?:\.py)?)")
#: Files in measure/ that are not measurement scripts.
NOT_SCRIPTS = {"README.md", "__init__.py"}


def _code(text: str) -> str:
    """A shell or Python file's text without its comment lines and trailing comments (a name in a comment
    calls nothing)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines())


def _entry_points(root: Path) -> str:
    """What CI runs: .ci/run's commands and each workflow's ``run:`` steps."""
    runs = [_code((root / ".ci" / "run").read_text())]
    for workflow in sorted((root / ".github" / "workflows").glob("*.yml")):
        jobs = yaml.safe_load(workflow.read_text()).get("jobs", {})
        runs += [step["run"] for job in jobs.values() for step in job.get("steps", []) if "run" in step]
    return "\n".join(runs)


def _used_files(text: str, root: Path) -> set[Path]:
    """The files of ci/ that ``text`` names by path or by module."""
    found = set()
    for separator, rest in CI_USE.findall(text):
        parts = rest.removesuffix(".py").split(separator) if separator == "." else rest.split("/")
        path = root.joinpath("ci", *parts)
        for candidate in (path, path.with_name(path.name + ".py")):
            if candidate.is_file():
                found.add(candidate)
    return found


def unreached_ci_files(root: Path) -> list[str]:
    """Files of ``root``/ci that neither .ci/run nor a workflow runs, directly or through a ci/ file they run."""
    reached: set[Path] = set()
    todo = _used_files(_entry_points(root), root)
    while todo:
        path = todo.pop()
        reached.add(path)
        todo |= _used_files(_code(path.read_text(encoding="utf-8")), root) - reached
    files = {p for p in (root / "ci").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return sorted(str(p.relative_to(root)) for p in files - reached)


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_ci_check_follows_calls_and_finds_a_file_nothing_runs(tmp_path: Path) -> None:
    """Planted: .ci/run runs ci/setup (not .ci/other), a workflow ci/nightly, which runs ``-m ci.quick.stand``
    and copies ci/quick/bench.py; ci/measure-me is named only in a comment, ci/stray nowhere."""
    _plant(tmp_path, {
        ".ci/run": "#!/bin/bash\n# also ci/measure-me, by hand\nci/setup --test\n.ci/other\n",
        ".github/workflows/nightly.yml": "jobs:\n  night:\n    steps:\n      - run: ci/nightly\n",
        "ci/setup": "echo set up\n",
        "ci/nightly": 'cp "$ROOT/ci/quick/bench.py" .\n.venv/bin/python -m ci.quick.stand "$work"  # ci/stray\n',
        "ci/quick/stand.py": "print('stand-in')\n",
        "ci/quick/bench.py": "def test_bench(): ...\n",
        "ci/measure-me": "echo an hour of measuring\n",
        "ci/stray": "echo nothing runs me\n",
    })  # fmt: skip
    assert unreached_ci_files(tmp_path) == ["ci/measure-me", "ci/stray"]


def test_every_file_in_ci_is_a_ci_step_or_run_by_one() -> None:
    """ci/ keeps what CI runs; a script a person runs by hand belongs in measure/ or tools/."""
    assert (ROOT / "ci" / "nightly").is_file()
    assert unreached_ci_files(ROOT) == [], "not run by .ci/run or a workflow: move to measure/, tools/ or testing/"


def _index_names() -> set[str]:
    """The file names in the first column of measure/README.md's table."""
    rows = [line for line in (ROOT / "measure" / "README.md").read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([^`]+)`", row.split(" | ")[0])}


def test_every_measurement_script_is_in_the_index_and_each_row_names_one() -> None:
    """measure/README.md's index has a row for each file of measure/, and names no file that is not there."""
    files = {p.name for p in (ROOT / "measure").iterdir() if p.is_file()} - NOT_SCRIPTS
    listed = _index_names()
    assert len(files) > 20, sorted(files)
    assert files - listed == set(), f"add these to measure/README.md's index: {sorted(files - listed)}"
    assert listed - files == set(), f"measure/README.md lists files that are not in measure/: {sorted(listed - files)}"


def test_a_python_half_in_measure_has_a_shell_half_of_the_same_name() -> None:
    """``measure/power.py`` beside an executable ``measure/power``: the pair is found by its name."""
    halves = [p for p in (ROOT / "measure").glob("*.py") if p.name not in NOT_SCRIPTS]
    assert halves
    for half in halves:
        shell = half.with_name(half.stem.replace("_", "-"))
        assert shell.is_file() and shell.stat().st_mode & 0o111, f"{half.name} has no executable {shell.name}"
        assert re.search(rf"measure[/.]{half.stem}\b", shell.read_text()), f"{shell.name} does not run {half.name}"


def test_the_wheel_ships_daskbench_alone_and_daskbench_imports_none_of_the_checkouts_folders() -> None:
    """pyproject's package discovery includes daskbench only, and no module of daskbench imports ci, measure,
    testing, tools or tests (they are not installed with it)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["daskbench*"]
    outside = {"ci", "measure", "testing", "tools", "tests"}
    found = []
    for path in sorted((ROOT / "daskbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in outside]
    assert found == []
