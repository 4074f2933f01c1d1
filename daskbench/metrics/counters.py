"""Worker and scheduler counters read before and after a measurement: spill, transfer, tasks.

Counters are cumulative per worker process, so a measurement is the difference of two
snapshots; a worker that restarted in between starts again from zero, which the
difference clamps rather than turning negative. Before distributed 2023.3.2 the spill buffer
counts nothing: a worker then reports no spill counters, and the measurement says they were
not available (``extra["not_available"]``) rather than 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from daskbench.metrics.collectors import Collected, not_available

COUNTERS = ("spilled_bytes", "spill_count", "bytes_transferred", "task_count")
SPILL = ("spilled_bytes", "spill_count")
NO_SPILL_COUNTERS = "this distributed's spill buffer counts nothing (its counters arrived in 2023.3.2)"


def _worker_counters(dask_worker: Any) -> dict[str, int]:
    """The worker's cumulative counters; no spill counters from a spill buffer that keeps none (a plain
    dict, without a memory limit, spills nothing: 0 is true there)."""
    data = dask_worker.data
    metrics = getattr(data, "cumulative_metrics", None)
    counts_nothing = metrics is None and hasattr(data, "spilled_total")
    metrics = metrics or {}
    spill = {
        "spilled_bytes": int(metrics.get(("disk-write", "bytes"), 0)),
        "spill_count": int(metrics.get(("disk-write", "count"), 0)),
    }
    return {
        **({} if counts_nothing else spill),
        "bytes_transferred": int(getattr(dask_worker, "transfer_outgoing_bytes_total", 0)),
        "task_count": int(getattr(dask_worker.state, "executed_count", 0)),
    }


def _prefix_seconds(dask_scheduler: Any) -> dict[str, float]:
    return {
        name: float(prefix.all_durations.get("compute", 0.0)) for name, prefix in dask_scheduler.task_prefixes.items()
    }


@dataclass(frozen=True)
class CounterSnapshot:
    workers: Mapping[str, Mapping[str, int]]
    prefix_seconds: Mapping[str, float]


def snapshot(client: Any) -> CounterSnapshot:
    return CounterSnapshot(client.run(_worker_counters), client.run_on_scheduler(_prefix_seconds))


def difference(before: CounterSnapshot, after: CounterSnapshot) -> tuple[dict[str, int], dict[str, float]]:
    """Summed counter increases over all workers (a counter some worker did not report is left out),
    and compute thread-seconds per task prefix."""
    counted = [name for name in COUNTERS if all(name in now for now in after.workers.values())]
    totals = dict.fromkeys(counted, 0)
    for address, now in after.workers.items():
        then = before.workers.get(address, {})
        for name in counted:
            totals[name] += max(0, now[name] - then.get(name, 0))
    seconds = {
        name: round(value - before.prefix_seconds.get(name, 0.0), 4)
        for name, value in after.prefix_seconds.items()
        if value - before.prefix_seconds.get(name, 0.0) > 0
    }
    return totals, seconds


class CounterCollector:
    """A snapshot at ``start``, the difference at ``stop``: the counters as metrics, compute
    thread-seconds per task prefix as ``extra["task_seconds"]``."""

    def start(self, client: Any) -> None:
        self.before = snapshot(client)

    def stop(self, client: Any) -> Collected:
        totals, seconds = difference(self.before, snapshot(client))
        missing = [name for name in SPILL if name not in totals]
        return Collected(
            metrics=totals,
            extra={"task_seconds": seconds, **(not_available(NO_SPILL_COUNTERS, *missing) if missing else {})},
        )
