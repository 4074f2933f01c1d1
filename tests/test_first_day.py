"""The first day, round 2: what a new user meets when following the README (issue: the first day)."""

from __future__ import annotations

from pathlib import Path

from daskbench.judge.compare import compare_runs
from daskbench.store import Store
from tests.helpers import add_run, make_case, make_measurement, run_pytest

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


def test_runs_made_by_ab_are_not_the_latest_run_of_plain_compare(store: Store) -> None:
    """After daskbench ab, plain compare judges the newest ordinary run, not the last B session."""
    base, cand = add_run(store, 0, label="plain"), add_run(store, 1, label="plain")
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    for run in (base, cand):
        store.add_measurement(make_measurement(run, case))
    side_b = add_run(store, 2, label="ab-B0", tags={"ab_group": "g", "ab_side": "B", "ab_round": "0"})
    store.add_measurement(make_measurement(side_b, case))
    store.set_baseline("main", [base.run_id])
    assert compare_runs(store).candidate_run.run_id == cand.run_id
