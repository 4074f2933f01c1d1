"""Worker and scheduler counters read before and after a measurement: spill, transfer, tasks.

Counters are cumulative per worker process, so a measurement is the difference of two
snapshots; a worker that restarted in between starts again from zero, which the
difference clamps rather than turning negative.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from daskbench.metrics.collectors import Collected

COUNTERS = ("spilled_bytes", "spill_count", "bytes_transferred", "task_count")


def _worker_counters(dask_worker: Any) -> dict[str, int]:
    metrics = getattr(dask_worker.data, "cumulative_metrics", {})
    return {
        "spilled_bytes": int(metrics.get(("disk-write", "bytes"), 0)),
        "spill_count": int(metrics.get(("disk-write", "count"), 0)),
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
    """Summed counter increases over all workers, and compute thread-seconds per task prefix."""
    totals = dict.fromkeys(COUNTERS, 0)
    for address, now in after.workers.items():
        then = before.workers.get(address, {})
        for name in COUNTERS:
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
        return Collected(metrics=totals, extra={"task_seconds": seconds})
