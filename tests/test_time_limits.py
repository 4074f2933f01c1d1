"""Every phase has a time limit (``--timeout``): graph build, callables that compute by
themselves, ``measure.prepare`` and cluster start, not only the compute phase."""

from __future__ import annotations

import threading
import time
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


UNIMPORTABLE = """
import multiprocessing
import time

import dask
import pytest

if multiprocessing.parent_process() is not None:  # a worker (forked or spawned), never this session
    raise ImportError("this module needs what only the client has")

pytestmark = pytest.mark.benchmark


def _work():
    time.sleep(0.1)
    return 1


def test_needs_the_client(measure):
    measure(dask.delayed(_work)(), name="needs_the_client", params={})
"""


@pytest.mark.parametrize("start", ["forkserver", "spawn"])
def test_a_benchmark_module_that_fails_to_import_on_the_workers_is_an_error_at_once_with_its_words(
    tmp_path: Path, start: str
) -> None:
    """It waited out --timeout and was stored as ``timeout`` with no word of the import error (issue 45, item 2):
    now the warm-up finds it, the measurement is ``error`` with the exception's line, and the session ends well
    within the timeout, forked and spawned workers alike."""
    (tmp_path / "test_unimportable.py").write_text(UNIMPORTABLE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    began = time.monotonic()
    result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "inf",
                        "--timeout", "120", "--db", db, env={"DASKBENCH_WORKER_START": start})  # fmt: skip
    took = time.monotonic() - began
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    (measurement,) = Store(db).measurements()
    assert measurement.outcome == "error" and measurement.runtime_s is None
    assert "test_unimportable does not import on worker tcp://" in measurement.message
    assert "ImportError: this module needs what only the client has" in measurement.message
    assert "ImportError: this module needs what only the client has" in result.stdout
    assert took < 100, f"took {took:.0f} s: the measurement waited for its timeout"
