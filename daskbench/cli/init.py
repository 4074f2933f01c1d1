"""``daskbench init [DIR]``: an example benchmark, settings and a nightly workflow for a repository.

Writes ``benchmarks/test_daskbench_example.py`` and ``.github/workflows/daskbench-nightly.yml``
(an existing one is replaced only with ``--force``) and appends ``[tool.daskbench]`` and
``[tool.pytest.ini_options]`` to ``pyproject.toml`` (created if missing) where the repository
has no such settings yet. Settings a repository already has are never touched: what to add
by hand is printed instead. Everything is checked before the first file is written.
"""

from __future__ import annotations

import argparse
import shlex
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from daskbench.errors import DaskbenchError

BENCHMARK = Path("benchmarks", "test_daskbench_example.py")
WORKFLOW = Path(".github", "workflows", "daskbench-nightly.yml")
PYPROJECT = "pyproject.toml"
#: Other files pytest reads its settings from, with the section it reads (pytest.ini: even
#: when empty). pytest takes the first it finds, pyproject.toml before tox.ini and setup.cfg,
#: so a pytest table added to pyproject.toml would silently override these.
OTHER_PYTEST_FILES = (("pytest.ini", None), (".pytest.ini", None), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))
DESCRIPTIONS = {
    BENCHMARK: "an example benchmark (ocean anomaly, its result checked at every size)",
    WORKFLOW: "nightly: pytest -m benchmark, daskbench compare, daskbench report (uploaded)",
}


@dataclass
class SettingsPlan:
    """What happens to pyproject.toml: its new text (None: unchanged), and what to add by hand."""

    text: str | None = None
    added: list[str] = field(default_factory=list)
    manual: list[tuple[str, str]] = field(default_factory=list)  # (what to do, snippet)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "init",
        help="add an example benchmark, settings and a nightly workflow to a repository",
        description="Write benchmarks/test_daskbench_example.py and .github/workflows/daskbench-nightly.yml, "
        "and add [tool.daskbench] and [tool.pytest.ini_options] to pyproject.toml unless the repository "
        "has such settings already (then what to add is printed). Existing files are never overwritten "
        "without --force.",
    )
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR",
                        help="the repository's top folder (default: the current one; created if missing)")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="replace an existing example benchmark or workflow")
    parser.add_argument("--install", default="daskbench", metavar="SPEC",
                        help="what the workflow pip-installs as daskbench (default: daskbench; "
                        "e.g. daskbench==0.1.0 or a git+https:// URL)")  # fmt: skip
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        raise DaskbenchError(f"{root} is not a directory; give the repository's top folder")
    pyproject = _read_pyproject(root)
    files = {BENCHMARK: _template("test_daskbench_example.py.tmpl"), WORKFLOW: _workflow(root, pyproject, args.install)}
    replaced = _check_overwrite(root, files, force=args.force)
    plan = _plan_settings(root, pyproject)
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    if plan.text is not None:
        (root / PYPROJECT).write_text(plan.text)
    _print_summary(root, files, replaced, plan)
    return 0


def _template(name: str) -> str:
    return resources.files("daskbench").joinpath("templates", name).read_text()


def _read_pyproject(root: Path) -> dict[str, Any] | None:
    """The parsed pyproject.toml of ``root``; None if there is none."""
    path = root / PYPROJECT
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DaskbenchError(f"{path} is not valid TOML ({exc}); fix it, then run daskbench init again") from None


def _workflow(root: Path, pyproject: dict[str, Any] | None, install: str) -> str:
    """The nightly workflow; it also installs the repository itself when it is a Python package."""
    if not install.strip() or "\n" in install:
        raise DaskbenchError(f"--install: {install!r} is not a pip requirement (example: --install daskbench==0.1.0)")
    lines = [f"python -m pip install {shlex.quote(install.strip())}"]
    if (root / "setup.py").is_file() or "project" in (pyproject or {}):
        lines.append("python -m pip install .")
    return _template("daskbench-nightly.yml.tmpl").replace("__INSTALL__", "\n".join(" " * 10 + line for line in lines))


def _check_overwrite(root: Path, files: dict[Path, str], *, force: bool) -> list[Path]:
    """The files that exist already; refuses to go on unless ``force``."""
    existing = [relative for relative in files if (root / relative).exists()]
    if existing and not force:
        names = " and ".join(str(relative) for relative in existing)
        verb = "exists" if len(existing) == 1 else "exist"
        raise DaskbenchError(f"{names} already {verb} in {root}; nothing written (use --force to replace)")
    return existing


def _plan_settings(root: Path, pyproject: dict[str, Any] | None) -> SettingsPlan:
    """Append the tables the repository lacks; for settings it has, say what to add by hand."""
    tools = (pyproject or {}).get("tool", {})
    plan, snippets = SettingsPlan(), []
    daskbench_table = _template("tool-daskbench.toml")
    if "daskbench" in tools:
        plan.manual.append((f"{PYPROJECT} has [tool.daskbench] already; the settings init would add", daskbench_table))
    else:
        snippets.append(daskbench_table)
    other = _other_pytest_file(root)
    if other is not None:
        ini = f"[{other[1]}]\n{_template('tool-pytest.ini')}" if other[1] else _template("tool-pytest.ini")
        plan.manual.append((f"pytest reads its settings from {other[0]}; add there", ini))
    elif "pytest" in tools:
        plan.manual.append((f"{PYPROJECT} has pytest settings already; merge into them", _template("tool-pytest.toml")))
    else:
        snippets.append(_template("tool-pytest.toml"))
    if snippets:
        plan.text = _appended(root / PYPROJECT, snippets)
        plan.added = [snippet.splitlines()[0] for snippet in snippets]
    return plan


def _other_pytest_file(root: Path) -> tuple[str, str | None] | None:
    """The first of pytest.ini, .pytest.ini, tox.ini [pytest], setup.cfg [tool:pytest] in ``root``."""
    for name, section in OTHER_PYTEST_FILES:
        path = root / name
        if path.is_file() and (section is None or f"[{section}]" in path.read_text().splitlines()):
            return name, section
    return None


def _appended(path: Path, snippets: list[str]) -> str:
    old = path.read_text() if path.is_file() else ""
    text = (old.rstrip("\n") + "\n\n" if old.strip() else "") + "\n".join(snippets)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # e.g. a dotted key that already defines tool.daskbench
        raise DaskbenchError(f"{path}: adding the daskbench tables would break it ({exc}); add them by hand") from None
    return text


def _print_summary(root: Path, files: dict[Path, str], replaced: list[Path], plan: SettingsPlan) -> None:
    print(f"daskbench init: in {root.resolve()}")
    for relative in files:
        verb = "replaced" if relative in replaced else "wrote"
        print(f"  {verb} {relative}: {DESCRIPTIONS[relative]}")
    if plan.added:
        print(f"  added {' and '.join(plan.added)} to {PYPROJECT}")
    for note, snippet in plan.manual:
        print(f"  not changed: {note}:")
        print("".join(f"    {line}\n" for line in snippet.splitlines()), end="")
    where = "" if root.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(root))} && "
    print(f"next: {where}pytest -m benchmark --size tiny   (then: daskbench runs)")
