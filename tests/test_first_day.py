"""The first day, round 2: what a new user meets when following the README (issue: the first day)."""

from __future__ import annotations

from pathlib import Path

from daskbench.store import Store
from tests.helpers import run_pytest

TWIN = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_sum(measure):
    assert measure(dask.delayed(sum)([1, 2]), name="same", params={"n": 1}) == 3
"""


def test_two_benchmarks_with_one_identity_get_one_line_and_the_first_measurement_stays(tmp_path: Path) -> None:
    """Two files measuring one name and params: the second test fails with one line naming both
    tests and what to change; no traceback; the first one's measurement is stored."""
    (tmp_path / "test_one.py").write_text(TWIN)
    (tmp_path / "test_two.py").write_text(TWIN)
    db = f"sqlite:///{tmp_path / 'd.db'}"
    done = run_pytest(tmp_path, "-m", "benchmark", "--db", db, "--workers", "1", "--saturation", "inf")
    assert done.returncode == 1, done.stdout[-2000:]
    line = "test_two.py::test_sum[sat=inf-workers=1] measures the same case as test_one.py::test_sum[sat=inf-workers=1]"
    assert line in done.stdout and "another name= or params=" in done.stdout
    assert "Traceback" not in done.stdout and "IntegrityError" not in done.stdout and "UNIQUE" not in done.stdout
    measured = Store(db).measurements()
    assert len(measured) == 1 and measured[0].extra["test"] == "test_one.py::test_sum[sat=inf-workers=1]"
