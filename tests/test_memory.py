"""Memory figures are real: a short allocation inside a task shows in the per-worker high water."""

from __future__ import annotations

import time
from collections.abc import Iterator

import dask
import numpy as np
import pytest

from daskbench.clusters import OpenCluster, open_cluster
from daskbench.metrics.cost import load_prices
from daskbench.metrics.memory import summarize
from daskbench.model import Case, ClusterSpec
from daskbench.plugin.measuring import Measurer

SPIKE = 800 * 2**20


def _hold(nbytes: int, seconds: float) -> int:
    block = np.ones(nbytes, dtype=np.uint8)  # ones, not empty: the pages are really touched
    time.sleep(seconds)
    return int(block[:: 2**16].sum())


@pytest.fixture(scope="module")
def cluster() -> Iterator[OpenCluster]:
    opened = open_cluster(ClusterSpec("local", 1, 1, 4 * 2**30, 1.1))
    yield opened
    opened.close()


def _measure(cluster: OpenCluster, target: object, repeat: int) -> object:
    measurer = Measurer(cluster.client, "memory-test", load_prices(), 120, 1)
    case = Case("spike", {}, cluster.spec)
    measurement, _ = measurer.measure(case, repeat, target, {}, {})
    assert measurement.outcome == "passed", measurement.message
    return measurement


def test_short_allocation_shows_in_per_worker_high_water(cluster: OpenCluster) -> None:
    """An 800 MiB block held for 20 ms raises the worker's high water by at least 90% of it."""
    idle = _measure(cluster, dask.delayed(_hold)(1, 0.0), 0)
    spiked = _measure(cluster, dask.delayed(_hold)(SPIKE, 0.02), 1)
    assert spiked.peak_worker_memory_bytes - idle.peak_worker_memory_bytes >= 0.9 * SPIKE
    assert spiked.peak_worker_memory_bytes < idle.peak_worker_memory_bytes + 1.5 * SPIKE
    assert spiked.peak_worker_memory_fraction == pytest.approx(spiked.peak_worker_memory_bytes / (4 * 2**30))
    assert max(v for _, v in spiked.timeline) >= 0.9 * SPIKE


def test_cluster_sum_adds_workers_sampled_at_the_same_time() -> None:
    """The cluster timeline is the per-bin sum over workers; the peak of the sum is what is reported."""
    t0 = 1000.0
    a = {
        "high_water": 300,
        "samples": [(t0 + 0.01, 100), (t0 + 0.06, 300), (t0 + 0.11, 100)],
        "deaths": [],
        "memory_limit": 1000,
    }
    b = {"high_water": 250, "samples": [(t0 + 0.01, 200), (t0 + 0.06, 250)], "deaths": [], "memory_limit": 1000}
    summary = summarize([a, b], t0, bin_seconds=0.05, max_points=100)
    assert [v for _, v in summary.timeline] == [300, 550, 350]
    assert summary.peak_cluster == 550 and summary.peak_worker == 300
    assert summary.peak_worker_fraction == pytest.approx(0.3)


def test_death_near_the_limit_counts_as_oom() -> None:
    """A worker that died after reaching 90% of its limit is an out-of-memory death."""
    report = {"high_water": 950, "samples": [], "memory_limit": 1000,
              "deaths": [{"time": 1.0, "peak_rss": 960, "fraction": 0.96}, {"time": 2.0, "peak_rss": 100, "fraction": 0.1}]}  # fmt: skip
    summary = summarize([report], 0.0, 0.05, 10)
    assert (summary.deaths, summary.oom_deaths) == (2, 1)


def test_local_cluster_survives_many_restarts(cluster: OpenCluster) -> None:
    """Twenty back-to-back measurements (each restarts workers) keep the whole cluster alive."""
    measurer = Measurer(cluster.client, "restart-test", load_prices(), 120, 1)
    case = Case("noop", {}, cluster.spec)
    outcomes = [measurer.measure(case, r, dask.delayed(_hold)(1, 0.0), {}, {})[0].outcome for r in range(20)]
    assert outcomes == ["passed"] * 20
