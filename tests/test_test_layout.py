"""The tests' own layout: shared helpers live in tests/helpers.py, fixtures in tests/conftest.py,
no module under tests/ imports a test module or conftest.py, and nothing in ci/, measure/, testing/ or tools/
imports or runs anything of tests/ (read with ``ast`` and as text, never imported)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: The folders beside tests/ that tests and CI use (testing/) or that run on their own (ci/, measure/, tools/).
SERVING = tuple(TESTS.parent / name for name in ("ci", "measure", "testing", "tools"))
#: A script's use of tests/: ``python -m tests.x`` or a path ``tests/x.py``.
RUNS_TESTS = re.compile(r"-m\s+tests\.|(?<![\w/.-])tests/[\w/.-]*\.py")


def _forbidden(module: str) -> bool:
    """A test module or conftest.py, however it is reached: ``tests.test_x``, ``test_x``, ``tests.conftest``."""
    parts = module.split(".")
    if parts[0] == "tests":
        parts = parts[1:]
    return bool(parts) and (parts[0].startswith("test_") or parts[0] == "conftest")


def imported(node: ast.AST) -> list[str]:
    """The modules an ``import`` or an absolute ``from ... import`` names; ``from tests import x`` names
    ``tests`` and ``tests.x``. Nothing for other nodes."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        inside = [f"tests.{alias.name}" for alias in node.names] if node.module == "tests" else []
        return [node.module, *inside]
    return []


def forbidden_imports(source: str) -> list[str]:
    """``line: module`` for each import of a test module or of conftest.py in ``source``,
    including ``from tests import test_x`` and ``pytest_plugins`` naming one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules = imported(node)
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytest_plugins" for target in node.targets
        ):
            modules = [
                c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
        found += [f"{node.lineno}: {module}" for module in modules if _forbidden(module)]
    return found


def test_the_check_sees_every_way_to_import_a_test_module() -> None:
    """Planted imports of test modules and conftest.py are all found; helper modules are not."""
    pkg = "tests"  # spelled apart, so that a grep for such imports does not find these lines
    planted = "\n".join([
        f"import {pkg}.test_plugin",
        f"from {pkg}.test_compare import make_case",
        f"from {pkg}.conftest import make_run",
        f"from {pkg} import conftest, helpers",
        "from test_plugin import run_pytest",
        "import conftest as c",
        f'pytest_plugins = ["{pkg}.test_postgres"]',
        f"from {pkg}.helpers import run_pytest",
        f"from {pkg}.report_data import build_report_store",
        f'pytest_plugins = ["{pkg}.s3server"]',
        f"def f():\n    from {pkg}.test_advise import config",
    ])  # fmt: skip
    assert forbidden_imports(planted) == [
        "1: tests.test_plugin",
        "2: tests.test_compare",
        "3: tests.conftest",
        "4: tests.conftest",
        "5: test_plugin",
        "6: conftest",
        "7: tests.test_postgres",
        "12: tests.test_advise",
    ]


def test_no_module_under_tests_imports_a_test_module_or_conftest() -> None:
    """Shared helpers come from tests/helpers.py (or report_data.py, s3server.py, ...), fixtures
    from conftest.py through pytest: a test module is never imported by another module."""
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in sorted(TESTS.rglob("*.py"))
        if (found := forbidden_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, offenders


def test_conftest_holds_only_fixtures_and_hooks() -> None:
    """Every function conftest.py defines is a fixture or a ``pytest_*`` hook; plain helpers go to helpers.py."""
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    plain = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("pytest_")
        and not any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)
    ]
    assert plain == []


def uses_of_tests(source: str) -> list[str]:
    """``line: what`` for each import of ``tests`` or a module under it in Python ``source``, and each
    string naming one (``runpy.run_module("tests.x")``, ``"tests/helpers.py"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        named = imported(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.match(r"tests[./]\w", node.value):
            named = [node.value]
        found += [f"{node.lineno}: {name}" for name in named if name == "tests" or re.match(r"tests[./]", name)]
    return found


def test_the_ci_check_sees_imports_of_tests_and_scripts_running_them() -> None:
    """Planted uses of tests/ in a Python file and in a shell script are found; testing/'s own modules are not."""
    pkg = "tests"  # spelled apart, so that the check of this repository's ci/ files never meets these lines
    planted = "\n".join(
        [
            f"from {pkg}.helpers import write_wheel",
            f"import {pkg}.github_server",
            f"from {pkg} import helpers",
            f'runpy.run_module("{pkg}.github_server")',
            "from testing.wheel import write_wheel",
            f'"""A docstring that mentions {pkg}/helpers.py in prose."""',
        ]
    )
    expected = [
        f"1: {pkg}.helpers",
        f"2: {pkg}.github_server",
        f"3: {pkg}",
        f"3: {pkg}.helpers",
        f"4: {pkg}.github_server",
    ]
    assert uses_of_tests(planted) == expected
    script = f"python -m {pkg}.github_server --port-file P\n.venv/bin/python {pkg}/helpers.py\npytest ci/{pkg}"
    assert RUNS_TESTS.findall(script) == ["-m tests.", "tests/helpers.py"]


def test_nothing_in_ci_measure_testing_or_tools_imports_or_runs_anything_of_tests() -> None:
    """testing/ serves the tests and CI (the GitHub stand-in, the wheel writer), never the reverse: a script of
    ci/, measure/ or tools/ works in a checkout without tests/ importable. Python files are read with ``ast``;
    scripts as text, comments removed."""
    offenders: dict[str, list[str]] = {}
    paths = [p for folder in SERVING for p in folder.rglob("*") if p.is_file() and p.suffix not in (".md", ".pyc")]
    assert {p.relative_to(TESTS.parent).parts[0] for p in paths} == {"ci", "measure", "testing", "tools"}
    for path in sorted(paths):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            found = uses_of_tests(text)
        else:
            lines = [re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines()]
            found = [f"{n}: {m}" for n, line in enumerate(lines, 1) for m in RUNS_TESTS.findall(line)]
        if found:
            offenders[str(path.relative_to(TESTS.parent))] = found
    assert offenders == {}, f"these must not import or run tests/ (move what they need into testing/): {offenders}"
