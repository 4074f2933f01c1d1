"""`daskbench pr` when the pull request changes its project's declared dependencies: what a source tree
declares (``pyproject.toml`` or the requirements files it names), how two trees differ, and what the
comment says. Real files in real folders; the environments themselves are `envs.build`'s (tests/test_envs.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench import envs, pr
from daskbench.envs import deps
from daskbench.errors import DaskbenchError

STATIC = """[project]
name = "demo"
version = "1.0"
dependencies = [{deps}]
"""
SETUPTOOLS_FILE = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "demo"
version = "1.0"
dynamic = ["dependencies"]

[tool.setuptools.dynamic]
dependencies = {file = ["requirements.txt"]}
"""
HATCH_FILES = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "demo"
version = "1.0"
dynamic = ["dependencies"]

[tool.hatch.metadata.hooks.requirements_txt]
files = ["requirements/base.txt", "requirements/extra.txt"]
"""


def tree(folder: Path, pyproject: str | None, files: dict[str, str] | None = None) -> Path:
    """A project folder with ``pyproject.toml`` (None: a setup.py project) and the given files."""
    folder.mkdir(parents=True)
    if pyproject is None:
        (folder / "setup.py").write_text("from setuptools import setup\nsetup(install_requires=['numpy'])\n")
    else:
        (folder / "pyproject.toml").write_text(pyproject)
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def revision(folder: Path) -> pr.Revision:
    return pr.Revision(folder.name, None, folder)


def test_static_dependencies_are_read_from_pyproject(tmp_path: Path) -> None:
    """``[project] dependencies`` as written, sorted; none declared is an empty tuple, not unknown."""
    folder = tree(tmp_path / "a", STATIC.format(deps='"numpy>=1.24", "dask[array]>=2024.1"'))
    assert envs.declared(folder) == ("dask[array]>=2024.1", "numpy>=1.24")
    assert envs.declared(tree(tmp_path / "b", STATIC.format(deps=""))) == ()


def test_dynamic_dependencies_are_read_from_the_requirements_files_the_backend_reads(tmp_path: Path) -> None:
    """setuptools' ``file`` and hatch's ``files``: comments, blank lines and installer options left out."""
    setuptools = tree(
        tmp_path / "st", SETUPTOOLS_FILE, {"requirements.txt": "# runtime\nnumpy >= 1.24  # arrays\n\n-r more.txt\n"}
    )
    assert envs.declared(setuptools) == ("numpy >= 1.24",)
    hatch = tree(
        tmp_path / "hatch", HATCH_FILES, {"requirements/base.txt": "toolz\n", "requirements/extra.txt": "pyarrow>=13\n"}
    )
    assert envs.declared(hatch) == ("pyarrow>=13", "toolz")


def test_dependencies_declared_elsewhere_are_unknown_and_a_broken_file_is_one_line(tmp_path: Path) -> None:
    """A setup.py project, or dynamic dependencies without a named file, are not known (None); a
    pyproject.toml that does not parse, or a named file that is missing, is one line naming it."""
    assert envs.declared(tree(tmp_path / "setup", None)) is None
    dynamic = SETUPTOOLS_FILE.split("[tool.setuptools.dynamic]")[0]
    assert envs.declared(tree(tmp_path / "dyn", dynamic)) is None
    with pytest.raises(DaskbenchError, match=r"pyproject.toml is not valid TOML"):
        envs.declared(tree(tmp_path / "bad", "[project\n"))
    with pytest.raises(DaskbenchError, match=r"requirements.txt is named by pyproject.toml .* not in the tree"):
        envs.declared(tree(tmp_path / "missing", SETUPTOOLS_FILE))


def test_changes_are_one_line_per_package_by_meaning_not_spelling() -> None:
    """A changed bound, an added and a removed package, each a line; spelling alone (spaces, case,
    ``_`` for ``-``) is no change."""
    base = ["numpy>=1.24", "toolz>=0.10", "Dask_Expr >= 1.0"]
    head = ["numpy>=1.26", "pyarrow>=13", "dask-expr>=1.0"]
    assert deps.changes(base, head) == [
        "numpy >=1.24 -> >=1.26",
        "pyarrow: added (>=13)",
        "toolz: removed (was >=0.10)",
    ]
    assert deps.changes(base, list(reversed(base))) == []
    with pytest.raises(DaskbenchError, match=r"'numpy >>> 1' is not a PEP 508 requirement"):
        deps.changes(["numpy >>> 1"], [])


def test_pr_says_how_the_sides_dependencies_differ_and_the_comment_lists_them(tmp_path: Path) -> None:
    """Base and head differing in a bound: said in one line, each side built from its own requirements
    (`side_python`'s ``full``), and the comment lists the differences as code; the same declarations say
    nothing; a setup.py side says the sides run over this environment's packages."""
    base = tree(tmp_path / "base", STATIC.format(deps='"numpy>=1.24"'))
    head = tree(tmp_path / "head", STATIC.format(deps='"numpy>=1.26", "rich"'))
    said: list[str] = []
    found = pr.dependency_changes(revision(base), revision(head), said.append)
    assert found == ("numpy >=1.24 -> >=1.26", "rich: added (any version)")
    assert said == [
        "pr: head's declared dependencies differ (numpy >=1.24 -> >=1.26; rich: added (any version)): each side is "
        "built from its own"
    ]
    page = pr.Page(revision(base), revision(head), "g1", dependencies=found)
    markdown = pr.comment_markdown(pr.Outcome.of_verdicts(()), page)
    assert "Dependencies differ (each side built from its own requirements): `numpy >=1.24 -> >=1.26`; " in markdown
    assert pr.dependency_changes(revision(base), revision(base), said.append) == () and len(said) == 1
    assert pr.dependency_changes(revision(base), revision(tree(tmp_path / "old", None)), said.append) == ()
    assert said[-1].startswith("pr: a side declares its dependencies outside pyproject.toml")
    assert "Dependencies differ" not in pr.comment_markdown(
        pr.Outcome.of_verdicts(()), pr.Page(page.base, page.head, "g1")
    )
