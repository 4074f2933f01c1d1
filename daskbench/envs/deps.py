"""What a project's source tree declares it depends on, and how two trees differ in it.

`declared` reads a package's ``pyproject.toml``: its ``[project] dependencies``, or, when they are dynamic, the
requirements files the build backend reads for them (setuptools' ``[tool.setuptools.dynamic] dependencies =
{file = [...]}``, hatch's ``[tool.hatch.metadata.hooks.requirements_txt] files``); a package that declares them
elsewhere (``setup.py``) gives None: not known. A folder of benchmarks (no build system, `trees.is_package`)
declares its ``requirements*.txt`` and ``[project] dependencies`` (`trees.requirement_lines`). `changes` says,
one line per package, how two trees' requirements differ (``numpy >=1.24 -> >=1.26``, ``pyarrow: added
(>=13)``); ``daskbench pr`` builds each side from its own requirements when they do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from daskbench.envs import trees
from daskbench.envs.specs import normalized
from daskbench.errors import DaskbenchError


def declared(tree: Path) -> tuple[str, ...] | None:
    """The requirements ``tree`` declares (sorted, one per line as written): a package's in ``pyproject.toml`` or
    the files it names (None when they are declared elsewhere: a ``setup.py`` package), a folder of benchmarks'
    in its requirements files and ``[project] dependencies``. One line for a ``pyproject.toml`` that does not
    parse."""
    found = trees.shape(tree)
    if not found.package:
        return tuple(sorted(trees.requirement_lines(tree, found)))
    data = trees.read_pyproject(tree)
    if data is None:
        return None
    project = _table(data, "project")
    if "dependencies" not in project.get("dynamic", ()):
        listed = project.get("dependencies", [])
        return tuple(sorted(str(line) for line in listed)) if isinstance(listed, list) else None
    files = _requirement_files(data)
    if files is None:
        return None
    return tuple(sorted(line for name in files for line in _file_lines(tree / name)))


def _table(data: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """``data[keys[0]][keys[1]]...``, an empty mapping where a key is missing or not a table."""
    found: Any = data
    for key in keys:
        found = found.get(key, {}) if isinstance(found, Mapping) else {}
    return found if isinstance(found, Mapping) else {}


def _requirement_files(data: Mapping[str, Any]) -> list[str] | None:
    """The requirements files dynamic dependencies are read from (setuptools or hatch); None: none named."""
    setuptools = _table(data, "tool", "setuptools", "dynamic", "dependencies").get("file")
    hatch = _table(data, "tool", "hatch", "metadata", "hooks", "requirements_txt").get("files")
    for named in (setuptools, hatch):
        if isinstance(named, str):
            return [named]
        if isinstance(named, list) and all(isinstance(name, str) for name in named):
            return list(named)
    return None


def _file_lines(path: Path) -> list[str]:
    """The requirements of one file: comments, blank lines and installer options (``-r``, ``--index-url``) left out."""
    if not path.is_file():
        raise DaskbenchError(f"{path} is named by pyproject.toml for its dependencies but is not in the tree")
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def changes(base: Sequence[str], head: Sequence[str], *, lenient: bool = False) -> list[str]:
    """One line per package whose requirement differs between ``base`` and ``head`` (by name; extras, versions
    and markers compared as PEP 508 reads them), sorted: ``numpy >=1.24 -> >=1.26``, ``pyarrow: added (>=13)``,
    ``toolz: removed (was >=0.10)``. ``lenient`` (a requirements file, where pip takes a URL or a path too): a
    line that is no PEP 508 requirement is compared as its text."""
    before, after = _by_name(base, lenient), _by_name(head, lenient)
    found = []
    for name in sorted({*before, *after}):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            found.append(f"{name}: added ({new or 'any version'})")
        elif new is None:
            found.append(f"{name}: removed (was {old or 'any version'})")
        else:
            found.append(f"{name} {old or 'any version'} -> {new or 'any version'}")
    return found


def _by_name(lines: Iterable[str], lenient: bool = False) -> dict[str, str]:
    """Each package's requirements without its name (``[array]>=2024.1; python_version < "3.12"``), several
    joined by `` | ``; one line for a requirement that does not parse (``lenient``: keyed by its own text)."""
    from packaging.requirements import InvalidRequirement, Requirement

    found: dict[str, list[str]] = {}
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            if lenient:
                found.setdefault(line, []).append("")
                continue
            raise DaskbenchError(f"the declared dependency {line!r} is not a PEP 508 requirement") from None
        name = normalized(requirement.name)
        text = str(requirement)
        found.setdefault(name, []).append(text[len(requirement.name) :].strip())
    return {name: " | ".join(sorted(texts)) for name, texts in found.items()}


def changed_dependencies(base: Path, head: Path) -> list[str] | None:
    """`changes` from the requirements ``base``'s tree declares to ``head``'s; None when a tree's are not known."""
    before, after = declared(base), declared(head)
    if before is None or after is None:
        return None
    return changes(before, after, lenient=not (trees.shape(base).package and trees.shape(head).package))


def project_name(tree: Path) -> str | None:
    """The package ``tree`` builds, as its ``pyproject.toml`` names it (normalized); None when it names none
    (no ``pyproject.toml``, or a ``setup.py`` package)."""
    name = _table(trees.read_pyproject(tree) or {}, "project").get("name")
    return normalized(name) if isinstance(name, str) and name.strip() else None


def exact_pins(tree: Path) -> dict[str, str]:
    """The packages ``tree`` pins to one release (``NAME == X``, no wildcard) in its dependencies or in an extra,
    by normalized name, its own name left out: the package released in lockstep with it (dask's ``distributed``
    extra pins ``distributed == 2024.8.0``, distributed requires ``dask == 2024.8.0``). Empty for a tree whose
    requirements are not known (a ``setup.py`` package)."""
    from packaging.requirements import InvalidRequirement, Requirement

    data = trees.read_pyproject(tree) or {}
    extras = _table(data, "project", "optional-dependencies").values()
    lines = [*(declared(tree) or ()), *(str(line) for group in extras if isinstance(group, list) for line in group)]
    own, found = project_name(tree), {}
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        specs = list(requirement.specifier)
        name = normalized(requirement.name)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version and name != own:
            found[name] = specs[0].version
    return found
