"""What a benchmark repository's tree is, and what installing it means: one rule for ``pr`` and ``init``.

A tree is a **package** when an installer can build it: its ``pyproject.toml`` has a ``[build-system]`` table,
or a ``setup.py`` or ``setup.cfg`` is there (pip and uv then build it with setuptools). Anything else is a
**folder of benchmarks**: what ``daskbench init`` writes (a ``pyproject.toml`` holding settings only), or
benchmarks beside a ``requirements.txt``. Building such a tree fails (uv: "Failed to parse metadata from built
wheel"), so only its requirements are installed: the ``requirements*.txt`` files at its top (their ``-r``
includes followed), and the ``[project] dependencies`` a ``pyproject.toml`` declares without a build system.

`is_package` is the rule. ``daskbench pr`` asks `side_sources` what a side's environment installs from its
tree (`deps.declared` reads a folder's requirements with `requirement_lines`); ``daskbench init`` asks
`install_lines` what its workflows install, and `ci_warnings` what would not work in CI.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daskbench.errors import DaskbenchError

#: The requirements files of a folder of benchmarks: at its top, by this pattern.
REQUIREMENTS_GLOB = "requirements*.txt"
#: Files whose presence makes a tree a package setuptools builds (with or without a ``pyproject.toml``).
SETUPTOOLS_FILES = ("setup.py", "setup.cfg")
#: Folders never searched for benchmark files (`has_benchmarks`): virtualenvs, caches, results.
_NOT_SEARCHED = frozenset({"node_modules", "results", "build", "dist", "site-packages", "__pycache__"})
#: How many test files `has_benchmarks` reads at most (a huge repository is not read through).
_MOST_FILES = 2000
#: The ``[tool.daskbench]`` key naming the client fixtures of a suite brought as it is: its tests are measured
#: without the benchmark mark in their files, so `ci_warnings` does not look for it then.
CLIENT_FIXTURES = "client-fixtures"


@dataclass(frozen=True)
class Shape:
    """A tree as an installer sees it: a package (built and installed) or a folder of benchmarks whose
    requirements alone are installed. ``why`` says which file decided it; ``files`` are the folder's
    requirements files (names at its top), ``project`` the ``[project] dependencies`` it declares (None: no
    ``[project]`` table lists them statically)."""

    package: bool
    why: str
    files: tuple[str, ...] = ()
    project: tuple[str, ...] | None = None

    def describe(self) -> str:
        """``a package (pyproject.toml has [build-system])`` or ``a folder of benchmarks (...)``."""
        return f"{'a package' if self.package else 'a folder of benchmarks'} ({self.why})"


def read_pyproject(tree: Path) -> Mapping[str, Any] | None:
    """``tree``'s parsed ``pyproject.toml``; None when there is none; one line when it does not parse."""
    path = tree / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise DaskbenchError(f"{path} is not valid TOML ({error}); fix it, then run the command again") from None


def is_package(tree: Path, pyproject: Mapping[str, Any] | None) -> tuple[bool, str]:
    """Whether an installer can build ``tree`` (``pyproject`` is its parsed ``pyproject.toml``), and why."""
    if isinstance((pyproject or {}).get("build-system"), Mapping):
        return True, "pyproject.toml has [build-system]"
    for name in SETUPTOOLS_FILES:
        if (tree / name).is_file():
            return True, f"it has {name}"
    return False, "no [build-system] in pyproject.toml, no setup.py or setup.cfg"


def shape(tree: Path) -> Shape:
    """What ``tree`` is (`is_package`), with a folder's requirements files and ``[project] dependencies``."""
    pyproject = read_pyproject(tree)
    package, why = is_package(tree, pyproject)
    if package:
        return Shape(True, why)
    files = tuple(sorted(path.name for path in tree.glob(REQUIREMENTS_GLOB) if path.is_file()))
    return Shape(False, why, files, _project_dependencies(pyproject))


def _project_dependencies(pyproject: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """The ``[project] dependencies`` listed statically (as written); None when none are listed."""
    project = (pyproject or {}).get("project")
    if not isinstance(project, Mapping) or "dependencies" in project.get("dynamic", ()):
        return None
    listed = project.get("dependencies")
    return tuple(str(line) for line in listed) if isinstance(listed, list) else None


def requirement_lines(tree: Path, found: Shape) -> tuple[str, ...]:
    """The requirements a folder of benchmarks declares, as written: each requirements file's lines (comments,
    blank lines and options left out, ``-r`` includes followed), then its ``[project] dependencies``. Empty for
    a package (its own metadata says what it needs)."""
    if found.package:
        return ()
    lines = [line for name in found.files for line in _file_requirements(tree / name, tree, set())]
    return tuple(dict.fromkeys([*lines, *(found.project or ())]))


def _file_requirements(path: Path, tree: Path, seen: set[Path]) -> list[str]:
    """One requirements file's requirements (its includes' first, where they stand); a missing include is one
    line naming it."""
    if not path.is_file():
        raise DaskbenchError(f"{path} is named by a requirements file (-r) of {tree} but is not there")
    if path.resolve() in seen:
        return []
    seen.add(path.resolve())
    found: list[str] = []
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        include = _include(line)
        if include is not None:
            found += _file_requirements(path.parent / include, tree, seen)
        elif line and not line.startswith("-"):
            found.append(line.split(" --", 1)[0].strip())  # per-line options (--hash) are the installer's
    return found


def _include(line: str) -> str | None:
    """The file a ``-r FILE``, ``-rFILE``, ``--requirement FILE`` or ``--requirement=FILE`` line includes; None
    for any other line."""
    if line.startswith("--requirement") and line[len("--requirement") : len("--requirement") + 1] in (" ", "="):
        return line[len("--requirement") + 1 :].strip(" =\t") or None
    if line.startswith("-r") and not line.startswith("-r-"):
        return line[2:].strip(" =\t") or None
    return None


def side_sources(tree: Path, *, editable: bool, full: bool) -> tuple[str, ...]:
    """What ``daskbench pr`` installs from one side's tree: a package itself (``-e`` for a folder side, whose
    current files count; only it in an overlay, with ``full`` with its dependencies); a folder of benchmarks
    its requirements when ``full`` (the sides declare different ones), else nothing: its files are measured as
    they are, over this interpreter's packages."""
    found = shape(tree)
    if found.package:
        return ("-e", str(tree)) if editable else (str(tree),)
    if not full:
        return ()
    return tuple(_in_tree(tree, line) for line in requirement_lines(tree, found))


def _in_tree(tree: Path, requirement: str) -> str:
    """A requirement as an installer argument: a ``./path`` (pip reads it from the folder it runs in, the
    repository's top in CI) made the absolute path of that folder in ``tree``."""
    return str((tree / requirement).resolve()) if requirement.startswith(("./", "../")) else requirement


# -- what a workflow installs ----------------------------------------------------------------------

#: uv reads ``[project] dependencies`` from ``pyproject.toml`` without building it; pip cannot (daskbench
#: depends on uv, so it is there once daskbench is installed).
PROJECT_DEPENDENCIES_LINE = "python -m uv pip install --python python -r pyproject.toml"


def install_lines(tree: Path) -> list[str]:
    """The shell lines a workflow runs, after installing daskbench, to install what ``tree``'s benchmarks need:
    the package itself, or a folder's requirements files and ``[project] dependencies`` (nothing when it
    declares none)."""
    found = shape(tree)
    if found.package:
        return ["python -m pip install ."]
    lines = [f"python -m pip install {' '.join(f'-r {name}' for name in found.files)}"] if found.files else []
    return lines + ([PROJECT_DEPENDENCIES_LINE] if found.project else [])


def ci_warnings(tree: Path) -> list[str]:
    """What would not work when a workflow benchmarks ``tree`` in CI, one line each (empty: nothing found)."""
    tree = tree.resolve()
    warnings = []
    pyproject = read_pyproject(tree)
    project = (pyproject or {}).get("project")
    dynamic = isinstance(project, Mapping) and "dependencies" in project.get("dynamic", ())
    if dynamic and not is_package(tree, pyproject)[0]:
        warnings.append(
            "pyproject.toml has dynamic [project] dependencies but no [build-system] to compute them: CI installs "
            "none of them; list them, or put them in requirements.txt"
        )
    top = _git_top(tree)
    if top is None:
        warnings.append(f"{tree} is not in a git checkout yet: git init, commit, then push it for CI to run")
    elif top != tree:
        warnings.append(f"{tree} is not the top of its git checkout: GitHub runs only {top}/.github/workflows")
    if not has_benchmarks(tree) and CLIENT_FIXTURES not in _table(pyproject, "tool", "daskbench"):
        warnings.append(
            "no test file here marks a benchmark (pytest.mark.benchmark): daskbench would measure nothing; add one "
            "(daskbench init writes an example)"
        )
    return warnings


def _table(data: Mapping[str, Any] | None, *keys: str) -> Mapping[str, Any]:
    """``data[keys[0]][keys[1]]...``, empty where a key is missing or not a table."""
    found: Any = data or {}
    for key in keys:
        found = found.get(key, {}) if isinstance(found, Mapping) else {}
    return found if isinstance(found, Mapping) else {}


def _git_top(tree: Path) -> Path | None:
    """The top folder of the git checkout ``tree`` is in; None when it is in none (or git is missing)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


def has_benchmarks(tree: Path) -> bool:
    """Whether a test file under ``tree`` (``test_*.py``, ``*_test.py``; hidden folders, virtualenvs and
    `_NOT_SEARCHED` left out) names the benchmark marker: what ``pytest -m benchmark`` selects. Past
    `_MOST_FILES` files it stops reading and says yes: a warning must not be wrong."""
    for read, path in enumerate(_test_files(tree)):
        if read >= _MOST_FILES:
            return True
        try:
            if "mark.benchmark" in path.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


def _test_files(tree: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [name for name in dirs if _searched(Path(folder, name))]
        yield from (Path(folder, name) for name in files if _is_test_file(name))


def _searched(folder: Path) -> bool:
    return not folder.name.startswith(".") and folder.name not in _NOT_SEARCHED and not (folder / "pyvenv.cfg").exists()


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
