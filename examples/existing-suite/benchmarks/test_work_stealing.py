"""Work stealing: tasks of very uneven length, which the scheduler must spread over the workers."""

from __future__ import annotations

import time

import numpy as np
from dask import delayed


@delayed
def _wait(seconds):
    time.sleep(seconds)
    return seconds


def test_uneven_tasks(small_client):
    delays = np.random.default_rng(42).lognormal(-6, 1.3, 100).clip(max=0.05)
    done = small_client.gather(small_client.compute([_wait(d) for d in delays]))
    assert len(done) == 100
