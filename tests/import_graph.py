"""daskbench's import graph read from its source with `ast` (not by importing), and its cycles.

Every import statement counts, at module level, inside functions and under ``if TYPE_CHECKING:``
(a cycle through type-only imports is still one a reader has to untangle). ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``; a module has no
implicit edge to its parent package's ``__init__`` (Python runs it, but the author did not write
that dependency). Used by tests/test_imports.py (cycles) and tests/test_layers.py (layer order).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

Graph = dict[str, set[str]]


def import_graph(package: Path) -> Graph:
    """Module name -> the modules of ``package`` it imports (itself excluded)."""
    sources = {_module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    graph: Graph = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets = {t for node in ast.walk(tree) for t in _targets(node, module, is_package, sources)}
        graph[module] = {t for t in targets if t in sources and t != module}
    return graph


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, module: str, is_package: bool, known: Mapping[str, Path]) -> Iterator[str]:
    """The modules one import statement depends on."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(node, module, is_package)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in known else base


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` reads from, relative levels resolved."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def find_cycles(graph: Graph) -> list[list[str]]:
    """One cycle (``[a, b, a]``: a imports b imports a) per strongly connected component."""
    return [_cycle_through(component[0], set(component), graph) for component in _tangled(graph)]


def _tangled(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components that hold a cycle (more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _cycle_through(start: str, component: set[str], graph: Graph) -> list[str]:
    """The shortest import path from ``start`` back to itself inside ``component`` (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & component):
            if nxt == start:
                return [*_path_to(node, start, came_from), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in a strongly connected component but on no cycle")


def _path_to(node: str, start: str, came_from: Mapping[str, str]) -> list[str]:
    path = [node]
    while path[-1] != start:
        path.append(came_from[path[-1]])
    return path[::-1]


def cycles_text(graph: Graph) -> str:
    """One line per tangle: a cycle's path, then any other module caught in the same tangle."""
    lines = []
    for component, cycle in zip(_tangled(graph), find_cycles(graph), strict=True):
        others = sorted(set(component) - set(cycle))
        lines.append(" -> ".join(cycle) + (f"  (also tangled: {', '.join(others)})" if others else ""))
    return "\n".join(lines)


# -- one import path per name: a package's face ----------------------------------------------


def public_names(init: Path) -> set[str]:
    """The names a package's ``__init__`` lists in ``__all__`` (read with `ast`; none without one)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {elt.value for elt in ast.walk(node.value) if isinstance(elt, ast.Constant)}
    return set()


def around_faces(root: Path, files: list[Path], faces: list[str]) -> list[str]:
    """``path:line: the import (the way)`` for each import, from outside a package of ``faces``, that goes
    around the package's face (its ``__init__``): a name from one of its modules, or from the package a name
    its ``__all__`` does not list. A test (a file under ``tests/``) may import a module of the package as a
    module, ``from pkg import module``: a white-box test of that module's private parts."""
    found = []
    for path in files:
        relative = path.relative_to(root)
        module = _module_name(path, root / relative.parts[0])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for line in _around(node, module, root, faces, white_box=relative.parts[0] == "tests"):
                found.append(f"{relative}:{node.lineno}: {line}")
    return found


def _around(node: ast.AST, module: str, root: Path, faces: list[str], *, white_box: bool) -> Iterator[str]:
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        face = _face_of(node.module, faces)
        if face is None or _face_of(module, [face]) is not None:
            return
        names = [alias.name for alias in node.names]
        if node.module != face:
            yield f"from {node.module} import {', '.join(names)} (import it from {face})"
            return
        listed, init = public_names(_init(root, face)), _init(root, face)
        for name in names:
            submodule = (init.parent / f"{name}.py").exists() or (init.parent / name / "__init__.py").exists()
            if name not in listed and not (white_box and submodule):
                yield f"from {face} import {name} ({name} is not in {face}.__all__)"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            face = _face_of(alias.name, faces)
            if face is not None and alias.name != face and _face_of(module, [face]) is None:
                yield f"import {alias.name} (import from {face})"


def _face_of(module: str, faces: list[str]) -> str | None:
    """The longest face ``module`` is or is inside of, or None."""
    return max((face for face in faces if module == face or module.startswith(face + ".")), key=len, default=None)


def _init(root: Path, package: str) -> Path:
    return root.joinpath(*package.split("."), "__init__.py")


def foreign_names(root: Path, face: str) -> list[str]:
    """The names a package's ``__all__`` lists that are defined outside the package (followed through the
    ``from ... import`` chain that brings them in): a second import path to another unit's name."""
    return sorted(
        name for name in public_names(_init(root, face)) if _face_of(_origin(root, face, name), [face]) is None
    )


def _origin(root: Path, module: str, name: str) -> str:
    """The module that defines ``name`` as ``module`` has it: itself, or where an absolute import brought it from."""
    path = root.joinpath(*module.split("."))
    if (path / name).with_suffix(".py").exists() or (path / name / "__init__.py").exists():
        return f"{module}.{name}"
    source = path / "__init__.py" if (path / "__init__.py").exists() else path.with_suffix(".py")
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        if any((alias.asname or alias.name) == name for alias in node.names):
            is_ours = node.module.split(".")[0] == module.split(".")[0]
            return _origin(root, node.module, name) if is_ours else node.module
    return module
