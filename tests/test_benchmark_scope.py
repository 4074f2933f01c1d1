"""``pytest -m benchmark`` in the checkout collects ``benchmarks/`` alone, as the README says: no module of
``tests/`` is imported, not even ``tests/conftest.py`` (``testing/pytest_scope.py``), so nothing of the harness's
tests (their tools, their Ctrl-C handling) stands in a benchmark run's way or in its traceback. Plain ``pytest``
still collects the harness's tests (this run is one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: pytest in-process in a fresh interpreter: the exit code, then the modules loaded from tests/ (none wanted).
PROBE = """
import sys
import pytest

code = pytest.main(sys.argv[2:])
loaded = sorted(name for name, module in list(sys.modules.items())
                if (getattr(module, "__file__", None) or "").startswith(sys.argv[1]))
print("probe:", code, loaded)
"""


def _probe(*args: str) -> str:
    command = [sys.executable, "-c", PROBE, f"{ROOT / 'tests'}/", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return next(line for line in done.stdout.splitlines() if line.startswith("probe:"))


def test_pytest_m_benchmark_collects_the_benchmarks_without_importing_the_harness_tests() -> None:
    """``-m benchmark`` (and ``-m "benchmark and ..."``) from the checkout's top: collected, exit 0, and no module
    of tests/ loaded; a mark expression that selects other tests leaves the harness's tests collected."""
    assert _probe("-m", "benchmark", "--collect-only", "-q") == "probe: 0 []"
    assert _probe("-m", "benchmark and not browser", "--collect-only", "-q") == "probe: 0 []"
    other = _probe("-m", "not benchmark", "--collect-only", "-q", "tests/test_text.py")
    assert other.startswith("probe: 0 [") and other != "probe: 0 []", other
