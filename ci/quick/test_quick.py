"""ci/nightly --quick's benchmarks: two small sleeping workloads, one with a slowdown planted by env.

``quick_planted`` sleeps 0.3 s x $DASKBENCH_TEST_SLOWDOWN in a task (the planted
regression); ``quick_steady`` always sleeps 0.2 s. ci/nightly copies this file into a
scratch folder and runs it there, so the harness's own test runs never collect it.
"""

import os
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _sleep(seconds: float, factor: float) -> float:
    time.sleep(seconds * factor)
    return seconds


def test_quick_planted(measure):
    factor = float(os.environ.get("DASKBENCH_TEST_SLOWDOWN", "1"))
    assert measure(lambda: dask.delayed(_sleep)(0.3, factor), name="quick_planted", params={"seconds": 0.3}) == 0.3


def test_quick_steady(measure):
    assert measure(lambda: dask.delayed(_sleep)(0.2, 1.0), name="quick_steady", params={"seconds": 0.2}) == 0.2
