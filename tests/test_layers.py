"""The layer order of docs/architecture.md holds in the code: imports point down only.

The order is declared once, in the ```layers block of docs/architecture.md; this test reads it
and the import graph (`tests.import_graph`, every import statement read with `ast`), and fails
when a module imports a module of a higher layer or of another unit of its own layer. It also
checks the block itself: every daskbench module belongs to a unit, and every unit exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.import_graph import Graph, import_graph

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "daskbench"

#: layer name -> its units, top layer first.
Layers = list[tuple[str, list[str]]]


def read_layers(text: str) -> Layers:
    """The ```layers block: one ``name: unit unit ...`` line per layer, top first."""
    found = re.search(r"^```layers\n(.*?)^```", text, flags=re.M | re.S)
    if found is None:
        raise AssertionError("docs/architecture.md has no ```layers block")
    layers = []
    for line in found.group(1).splitlines():
        name, _, units = line.partition(":")
        layers.append((name.strip(), units.split()))
    return layers


def unit_of(module: str, units: list[str]) -> str | None:
    """The longest unit that names ``module`` (itself, or a package it is in)."""
    owners = [unit for unit in units if module == unit or module.startswith(unit + ".")]
    return max(owners, key=len, default=None)


def violations(graph: Graph, layers: Layers) -> list[str]:
    """``a -> b`` for every import of a higher layer, or of a sibling unit of the same layer."""
    rank = {unit: -index for index, (_name, units) in enumerate(layers) for unit in units}
    units = list(rank)
    found = []
    for module, imports in sorted(graph.items()):
        here = unit_of(module, units)
        for target in sorted(imports):
            there = unit_of(target, units)
            if here is None or there is None or here == there:
                continue
            if rank[there] >= rank[here]:
                found.append(f"{module} -> {target} ({here} may not import {there})")
    return found


# -- the checker on planted graphs ------------------------------------------------------------

PLANTED: Layers = [("top", ["pkg.cli"]), ("middle", ["pkg.store", "pkg.judge"]), ("bottom", ["pkg.model"])]


def test_the_checker_allows_imports_down_and_inside_a_unit() -> None:
    graph = {"pkg.cli": {"pkg.store"}, "pkg.store.rows": {"pkg.model", "pkg.store.schema"}, "pkg.model": set()}
    assert violations(graph, PLANTED) == []


def test_the_checker_names_an_upward_import() -> None:
    graph = {"pkg.model": {"pkg.store.rows"}}
    assert violations(graph, PLANTED) == ["pkg.model -> pkg.store.rows (pkg.model may not import pkg.store)"]


def test_the_checker_names_an_import_between_units_of_one_layer() -> None:
    graph = {"pkg.judge.compare": {"pkg.store"}}
    assert violations(graph, PLANTED) == ["pkg.judge.compare -> pkg.store (pkg.judge may not import pkg.store)"]


def test_the_block_is_read_top_first_with_its_units() -> None:
    text = "intro\n```layers\ntop: a.b a.c\nbottom:   a.d\n```\nmore\n"
    assert read_layers(text) == [("top", ["a.b", "a.c"]), ("bottom", ["a.d"])]


# -- daskbench itself ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def layers() -> Layers:
    return read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE)


def test_daskbench_imports_point_down_the_declared_layers(graph: Graph, layers: Layers) -> None:
    found = violations(graph, layers)
    assert not found, "imports against the layers of docs/architecture.md:\n" + "\n".join(found)


def test_every_daskbench_module_belongs_to_a_declared_unit(graph: Graph, layers: Layers) -> None:
    units = [unit for _name, names in layers for unit in names]
    orphans = sorted(module for module in graph if unit_of(module, units) is None)
    assert not orphans, f"modules in no layer of docs/architecture.md: {orphans}"


def test_every_declared_unit_is_a_daskbench_module_or_package(graph: Graph, layers: Layers) -> None:
    missing = [unit for _name, names in layers for unit in names if unit not in graph]
    assert not missing, f"docs/architecture.md names units that do not exist: {missing}"
