"""Every phase has a time limit (``--timeout``): graph build, callables that compute by
themselves, ``measure.prepare`` and cluster start, not only the compute phase."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from daskbench.deadline import within
from daskbench.store import Store
from tests.helpers import run_pytest


def test_within_returns_raises_and_stops_waiting_at_the_limit() -> None:
    """A value or an error comes back as the callable gave it; past the limit `within` returns while the
    callable is still running (it waits on an event set only afterwards), whatever the machine's speed."""
    assert within(lambda: 42, 5, "quick") == 42
    with pytest.raises(ZeroDivisionError):
        within(lambda: 1 / 0, 5, "broken")
    release, finished = threading.Event(), threading.Event()

    def slow() -> None:
        release.wait(300)
        finished.set()

    with pytest.raises(TimeoutError, match=r"slow took more than 0.2 s \(--timeout\)"):
        within(slow, 0.2, "slow")
    assert not finished.is_set(), "within waited for the callable to end"
    release.set()
    assert finished.wait(60)


SLOW_FILE = """
import time
import dask
import pytest

pytestmark = pytest.mark.benchmark


def _build():
    time.sleep(30)
    return dask.delayed(sum)([1, 2])


def test_a_slow_build(measure):
    measure(_build, name="slow_build", params={})


def test_b_slow_prepare(measure):
    measure.prepare(lambda: time.sleep(30))
    measure(dask.delayed(sum)([1, 2]), name="never", params={})


def test_c_still_runs(measure):
    assert measure(dask.delayed(sum)([1, 2]), name="after", params={}) == 3
"""


def test_a_slow_graph_build_is_a_timeout_and_a_slow_prepare_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text(SLOW_FILE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                        "--timeout", "2", "--db", db)  # fmt: skip
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    assert (
        "timeout: data preparation (measure.prepare) took more than 2 s (--timeout); nothing measured" in result.stdout
    )
    assert "test_c_still_runs[sat=1.1-workers=1] PASSED" in result.stdout or "1 passed" in result.stdout
    outcomes = {Store(db).cases()[m.fingerprint].workload: m for m in Store(db).measurements()}
    assert outcomes["slow_build"].outcome == "timeout"
    assert "graph build (or a callable computing by itself) took more than 2 s" in outcomes["slow_build"].message
    assert outcomes["after"].outcome == "passed" and "never" not in outcomes
