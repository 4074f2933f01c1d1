"""The import graph of daskbench has no cycles, and its bottom layers import nothing above them.

The graph is read from the source with `ast`, not by importing: every import statement counts,
at module level, inside functions and under ``if TYPE_CHECKING:`` (a cycle through type-only
imports is still one a reader has to untangle). ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg``; a module has no implicit edge to its parent
package's ``__init__`` (Python runs it, but the author did not write that dependency).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import daskbench.cli as cli
from tests.import_graph import Graph, around_faces, cycles_text, find_cycles, foreign_names, import_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "daskbench"
#: The bottom of the graph: modules that import no other daskbench module.
BOTTOM = ("daskbench.text", "daskbench.errors")


# -- the checker on planted packages ---------------------------------------------------------


def _write_package(root: Path, files: Mapping[str, str]) -> Path:
    package = root / "pkg"
    for name, source in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return package


def test_the_checker_finds_a_two_module_cycle_and_names_its_path(tmp_path: Path) -> None:
    package = _write_package(tmp_path, {"a.py": "from pkg import b\n", "b.py": "import pkg.a\n"})
    assert find_cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_the_checker_counts_relative_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    files = {
        "a.py": "def f():\n    from .b import thing\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.c import C\nthing = 1\n",
        "sub/__init__.py": "",
        "sub/c.py": "from .. import a\n",
    }
    package = _write_package(tmp_path, files)
    assert find_cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]


def test_the_checker_passes_a_package_without_cycles(tmp_path: Path) -> None:
    files = {"a.py": "from pkg.b import thing\nimport os\n", "b.py": "from pkg import c\nthing = 1\n", "c.py": ""}
    package = _write_package(tmp_path, files)
    graph = import_graph(package)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert find_cycles(graph) == []


def test_the_checker_adds_no_edge_from_a_submodule_to_its_parent_package(tmp_path: Path) -> None:
    """``pkg/__init__`` imports ``pkg.a``; ``pkg.a`` importing ``pkg.b`` is not an edge back to ``pkg``."""
    files = {"__init__.py": "from pkg.a import A\n", "a.py": "from pkg import b\nA = 1\n", "b.py": ""}
    package = _write_package(tmp_path, files)
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.b"}
    assert find_cycles(graph) == []


def test_the_checker_reports_each_separate_cycle(tmp_path: Path) -> None:
    files = {"a.py": "import pkg.b\n", "b.py": "import pkg.a\n", "c.py": "import pkg.d\n", "d.py": "import pkg.c\n"}
    package = _write_package(tmp_path, files)
    assert find_cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.c", "pkg.d", "pkg.c"]]


def test_the_failure_text_names_the_cycle_and_the_rest_of_its_tangle(tmp_path: Path) -> None:
    files = {"a.py": "import pkg.b\nimport pkg.c\n", "b.py": "import pkg.a\n", "c.py": "import pkg.a\n"}
    package = _write_package(tmp_path, files)
    assert cycles_text(import_graph(package)) == "pkg.a -> pkg.b -> pkg.a  (also tangled: pkg.c)"


def test_the_face_check_finds_names_taken_around_a_packages_face(tmp_path: Path) -> None:
    """From a module of the package, an unlisted name from the package, ``import pkg.face.module``: each found;
    the face's own names, and a test's import of a module as a module (white box), are not."""
    files = {
        "face/__init__.py": 'from pkg.face.engine import url_of\n__all__ = ["url_of"]\n',
        "face/engine.py": "def url_of(): ...\ndef private(): ...\n",
        "face/inside.py": "from pkg.face.engine import private\n",
        "user.py": "from pkg.face import url_of\nfrom pkg.face.engine import url_of\nfrom pkg.face import private\n"
        "import pkg.face.engine\nfrom pkg.face import engine\n",
    }
    package = _write_package(tmp_path, files)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from pkg.face import engine, url_of\n", encoding="utf-8")
    found = around_faces(tmp_path, [*sorted(package.rglob("*.py")), tmp_path / "tests" / "test_x.py"], ["pkg.face"])
    assert found == [
        "pkg/user.py:2: from pkg.face.engine import url_of (import it from pkg.face)",
        "pkg/user.py:3: from pkg.face import private (private is not in pkg.face.__all__)",
        "pkg/user.py:4: import pkg.face.engine (import from pkg.face)",
        "pkg/user.py:5: from pkg.face import engine (engine is not in pkg.face.__all__)",
    ]


def test_the_face_check_finds_a_name_a_face_lists_of_another_unit(tmp_path: Path) -> None:
    files = {
        "sizes.py": "SIZES = ()\n",
        "face/__init__.py": 'from pkg.face.values import SIZES, parse\n__all__ = ["SIZES", "parse"]\n',
        "face/values.py": "from pkg.sizes import SIZES\ndef parse(): ...\n",
    }
    _write_package(tmp_path, files)
    assert foreign_names(tmp_path, "pkg.face") == ["SIZES"]


# -- daskbench itself ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE)


def test_the_daskbench_graph_is_read_from_its_source(graph: Graph) -> None:
    """A guard for the tests below: the walk found daskbench's modules and their known imports."""
    assert {"daskbench", "daskbench.model", "daskbench.text", "daskbench.report.content"} <= graph.keys()
    assert "daskbench.text" in graph["daskbench.report.content"]


def test_daskbench_has_no_import_cycles(graph: Graph) -> None:
    assert not find_cycles(graph), f"import cycles in daskbench (a imports b imports ... a):\n{cycles_text(graph)}"


@pytest.mark.parametrize("module", BOTTOM)
def test_the_bottom_modules_import_no_other_daskbench_module(graph: Graph, module: str) -> None:
    assert graph[module] == set(), f"{module} must stay at the bottom; it imports {sorted(graph[module])}"


def test_model_imports_only_the_bottom_and_modules_built_on_the_bottom_alone(graph: Graph) -> None:
    """`daskbench.model` may use text, errors, and declaration modules that import only those."""
    allowed = set(BOTTOM) | {module for module, deps in graph.items() if deps <= set(BOTTOM)}
    assert graph["daskbench.model"] <= allowed, f"model imports {sorted(graph['daskbench.model'] - allowed)}"


#: What the command line does not load to build its parser: each takes a tenth of a second to seconds to
#: import, and only the commands that compute (report, publish, data prepare, A/B, a cluster) need them.
HEAVY = (
    "scipy", "bokeh", "dask", "distributed", "pandas", "xarray", "pytest", "daskbench.report", "daskbench.site",
)  # fmt: skip


def _loaded_by(code: str) -> set[str]:
    """The modules loaded after running ``code`` in a fresh interpreter (its last line of output)."""
    code += "\nimport sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines()[-1].split())


def test_the_command_line_parser_loads_none_of_the_heavy_libraries() -> None:
    """`daskbench --help` (every command's parser) starts without scipy, bokeh, dask, pandas, xarray or
    pytest: a CLI call in a script or a test pays a fraction of a second, not seconds."""
    loaded = _loaded_by("from daskbench.cli import build_parser; build_parser()")
    assert [name for name in HEAVY if name in loaded] == []


def test_listing_runs_loads_only_its_own_command_and_not_the_statistics(tmp_path: Path) -> None:
    """`daskbench runs` imports its command's module alone (not every command's; the shared app, common_args,
    output and values of course) and no numpy: its start-up is the store's library and the listing."""
    from daskbench.store import Store
    from tests.helpers import add_run, make_case, make_measurement

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store, case = Store(url), make_case("wordcount")
    store.add_case(case)
    store.add_measurement(make_measurement(add_run(store, 0), case))
    store.close()
    loaded = _loaded_by(f"from daskbench.cli import main; assert main(['runs', '--db', {url!r}]) == 0")
    assert [name for name in (*HEAVY, "numpy", "daskbench.judge.stats") if name in loaded] == []
    commands = {f"daskbench.cli.{name}" for name in cli.SUBCOMMAND_MODULES}
    assert sorted(name for name in loaded if name in commands) == ["daskbench.cli.runs"]


#: What the measuring side (the pytest plugin, loaded inside every measured environment) does not load at
#: import: the judge, the report and the site run where results are read, often on another release.
NOT_MEASURING = ("daskbench.judge", "daskbench.report", "daskbench.site", "daskbench.cli", "bokeh", "scipy")


def test_the_pytest_plugin_loads_no_judge_report_or_command_line() -> None:
    """`daskbench.plugin.hooks` (the pytest11 entry point) imports the store it writes to, but nothing of
    the judge, the report, the site or the CLI, nor bokeh or scipy: a measured environment of an old
    release needs only what measuring needs."""
    code = "import sys, daskbench.plugin.hooks; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in loaded if name.startswith(NOT_MEASURING)] == []


#: What a pytest run that uses no daskbench option or fixture does not load: the measuring side (the store and its
#: database layer, distributed, the session's state and sweep) waits until a test or a flag asks for daskbench.
NOT_UNTIL_USED = ("distributed", "sqlalchemy", "daskbench.store", "daskbench.plugin.state", "daskbench.plugin.sweep")


def test_a_pytest_run_without_benchmarks_does_not_load_the_measuring_side(tmp_path: Path) -> None:
    """The plugin loads in every pytest run of an environment it is installed in (entry point ``pytest11``): a
    plain test there sees none of `NOT_UNTIL_USED` loaded, and the plugin's own import loads none of them."""
    names = ", ".join(repr(name) for name in NOT_UNTIL_USED)
    (tmp_path / "test_plain.py").write_text(
        f"import sys\n\n\ndef test_plain():\n    loaded = [n for n in sys.modules if n.startswith(({names},))]\n"
        "    assert loaded == [], loaded\n"
    )
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"],
                          cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]
    code = "import sys, daskbench.plugin.hooks; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in loaded if name.startswith(NOT_UNTIL_USED)] == []


#: Packages whose ``__init__`` is their face, as pluggy's is: from outside the package, a name is imported from
#: the package (``from daskbench.store import Store, runstatus``), never from one of its modules, which are the
#: package's own. judge and metrics have no face: their modules are imported one by one (judge.machine without
#: the statistics, metrics.cost without distributed), so each name's one path is its module.
FACES = [
    "daskbench.store", "daskbench.config", "daskbench.envs", "daskbench.clusters", "daskbench.judge.compare",
    "daskbench.judge.stats",
]  # fmt: skip
#: Imports around a face in files other work of issue 41 is moving (cli/, lockstep/), by file and module: each
#: goes through the face (``from daskbench.store import sqlite_file``, ``from daskbench.clusters import ...``).
NOT_YET = {"daskbench/cli/pr.py": "daskbench.store.engine", "daskbench/lockstep/turns.py": "daskbench.clusters.common"}


def test_daskbench_and_its_tests_import_each_name_of_a_faced_package_from_its_face() -> None:
    """One import path per name: ``daskbench.store.Store``, never ``daskbench.store.facade.Store`` too."""
    files = sorted([*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")])
    found = around_faces(ROOT, files, FACES)
    waived = [line for line in found if NOT_YET.get(line.split(":")[0]) == line.split(" ")[2]]
    assert [line for line in found if line not in waived] == []


@pytest.mark.parametrize("face", FACES)
def test_a_face_lists_only_its_own_packages_names(face: str) -> None:
    """A name of another unit is imported from there, not also from a face that imports it."""
    assert foreign_names(ROOT, face) == []
