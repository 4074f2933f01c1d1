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
