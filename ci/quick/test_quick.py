"""ci/nightly --quick's benchmarks: two small sleeping workloads; one calls the stand-in package.

``quick_planted`` runs ``standin.work`` in a task: 0.3 s in standin 1.0 and 1.0.1, 0.9 s in 1.1 (the
slowdown planted in a release), times ``$DASKBENCH_TEST_SLOWDOWN`` (a slowdown of one session only);
``quick_steady`` always sleeps 0.2 s. ci/nightly copies this file into a scratch folder and runs it there
in an environment holding one standin version (ci/quick/standin.py), so the harness's own test runs never
collect it.
"""

import os
import time

import dask
import pytest
import standin

pytestmark = pytest.mark.benchmark


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_quick_planted(measure):
    factor = float(os.environ.get("DASKBENCH_TEST_SLOWDOWN", "1"))
    assert measure(lambda: dask.delayed(standin.work)(factor), name="quick_planted", params={"seconds": 0.3})


def test_quick_steady(measure):
    assert measure(lambda: dask.delayed(_sleep)(0.2), name="quick_steady", params={"seconds": 0.2}) == 0.2
