"""Where the time went: distributed's fine-grained metrics folded into a few activities.

Every worker keeps ``digests_total`` (cumulative since the worker started, reset by a
restart): ``("execute", span, prefix, activity, "seconds")`` for what its threads did
while running tasks, ``("gather-dep", activity, "seconds")`` for fetching dependencies,
``("p2p", span, ...)`` for the p2p shuffle's background work. The difference of two
snapshots taken around the compute phase is one measurement's share.

The activities add up to the thread-seconds the cluster had (workers x threads x
runtime): task execution (``compute`` = thread CPU, ``compute-noncpu`` = wall time not on
the CPU, i.e. I/O, sleeps and GIL contention, ``task-overhead`` = executor and other
bookkeeping, ``spill-read``/``spill-write``, ``serialization``) is thread time; what the
threads did *not* execute is split into ``transfer`` (gather-dep on the event loop),
``shuffle`` (p2p background work) and the remainder ``idle``. Transfer and shuffle run
beside the threads, so they are capped at the time the threads were not executing
(scaled down together if they exceed it); execution never is, so when tasks ran longer
than the compute phase (callables computed eagerly before it) the sum exceeds the
thread-seconds, which ``thread_seconds`` beside the breakdown lets a reader see.

The scheduler side (CPU of its event-loop thread, blocked event loop, transitions, the
longest queue that worker-saturation made) are declared metrics (`daskbench.catalog`).

Before distributed 2023.3.2 nothing meters task execution (no ``execute`` digests): there the
breakdown and ``task_cpu_s`` are not available (``extra["not_available"]``), not an all-idle
breakdown and a zero; from 2023.3.2 to 2023.5.x the execute keys carry no span id.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from daskbench.compat import NO_FINE_METRICS, fine_metrics
from daskbench.metrics.collectors import Collected, Window, not_available

#: Execute-context activity -> breakdown activity (anything else is ``task-overhead``).
_EXECUTE = {
    "thread-cpu": "compute",
    "thread-noncpu": "compute-noncpu",
    "disk-read": "spill-read",
    "disk-write": "spill-write",
    "serialize": "serialization",
    "deserialize": "serialization",
    "compress": "serialization",
    "decompress": "serialization",
}
#: Gather-dep activity -> breakdown activity (anything else is ``transfer``).
_GATHER = {
    "disk-read": "spill-read",
    "deserialize": "serialization",
    "decompress": "serialization",
}
#: Activities that happen beside the threads, carved out of the threads' non-executing time.
BESIDE = ("transfer", "shuffle")
ACTIVITIES = (
    "compute",
    "compute-noncpu",
    "task-overhead",
    "spill-read",
    "spill-write",
    "serialization",
    "transfer",
    "shuffle",
    "idle",
)
#: What the breakdown gives that a distributed without fine performance metrics cannot.
FINE = ("task_cpu_s", "time_breakdown", "time_breakdown_by_prefix", "thread_seconds")
#: How far the activities may be from workers x threads x runtime and still add up.
TOLERANCE = 0.10
_QUEUE_SAMPLE_MS = 10


_SEP = "\t"


def _worker_seconds(dask_worker: Any) -> dict[str, float]:
    """The worker's cumulative seconds-valued digests, span ids dropped, keys joined by a tab (wire-safe).
    Execute keys have a span id from distributed 2023.6.0 on (5 parts; 4 before it)."""
    out: dict[str, float] = defaultdict(float)
    for key, value in list(dask_worker.digests_total.items()):
        if not isinstance(key, tuple) or key[-1] != "seconds":
            continue
        if (key[0] == "execute" and len(key) == 5) or key[0] == "p2p":
            key = (key[0], *key[2:])
        out[_SEP.join(str(part) for part in key)] += float(value)
    return dict(out)


def _classify(joined: str) -> tuple[str, str | None] | None:
    """(activity, task prefix or None) for one digest key, or None when it is not thread/transfer time."""
    key = joined.split(_SEP)
    context = key[0]
    if context == "execute" and len(key) >= 4:
        return _EXECUTE.get(key[2], "task-overhead"), key[1]
    if context == "gather-dep" and len(key) >= 3:
        return _GATHER.get(key[1], "transfer"), None
    if context == "p2p":
        return "shuffle", None
    return None  # get-data is the sender's side of a transfer already counted by gather-dep


@dataclass(frozen=True)
class Breakdown:
    """One measurement's time by activity, and by task prefix for task execution."""

    activities: dict[str, float]
    by_prefix: dict[str, dict[str, float]]
    thread_seconds: float

    def adds_up(self, tolerance: float = TOLERANCE) -> bool:
        """Whether the activities sum to the thread-seconds within ``tolerance``."""
        total = sum(self.activities.values())
        return self.thread_seconds > 0 and abs(total - self.thread_seconds) <= tolerance * self.thread_seconds


def fold(
    before: Mapping[str, Mapping[str, float]],
    after: Mapping[str, Mapping[str, float]],
    thread_seconds: float,
) -> Breakdown:
    """The breakdown from two per-worker snapshots and the thread-seconds of the compute phase."""
    activities: dict[str, float] = defaultdict(float)
    by_prefix: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for address, now in after.items():
        then = before.get(address, {})
        for key, value in now.items():
            delta = value - then.get(key, 0.0)
            found = _classify(key)
            if found is None or delta <= 0:
                continue
            activity, prefix = found
            activities[activity] += delta
            if prefix is not None:
                by_prefix[prefix][activity] += delta
    return Breakdown(_with_idle(activities, thread_seconds), _rounded_prefixes(by_prefix), round(thread_seconds, 4))


def _with_idle(activities: Mapping[str, float], thread_seconds: float) -> dict[str, float]:
    """Execution as measured; transfer and shuffle capped at the non-executing time; idle the rest."""
    executed = sum(v for k, v in activities.items() if k not in BESIDE)
    free = max(0.0, thread_seconds - executed)
    beside = sum(activities.get(k, 0.0) for k in BESIDE)
    scale = min(1.0, free / beside) if beside > 0 else 1.0
    out = {k: (v * scale if k in BESIDE else v) for k, v in activities.items()}
    out["idle"] = max(0.0, free - beside * scale)
    return {k: round(out.get(k, 0.0), 4) for k in ACTIVITIES}


def _rounded_prefixes(by_prefix: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {p: {k: round(v, 4) for k, v in acts.items() if v > 0} for p, acts in sorted(by_prefix.items())}


# -- the scheduler side --------------------------------------------------------------------


def _scheduler_start(dask_scheduler: Any) -> dict[str, float]:
    """Counters now, and a sampler of the queue length installed on the scheduler."""
    from tornado.ioloop import PeriodicCallback

    sampler = getattr(dask_scheduler, "_daskbench_queue_sampler", None)
    if sampler is not None:
        sampler.stop()
    dask_scheduler._daskbench_max_queued = len(dask_scheduler.queued)

    def sample() -> None:
        queued = len(dask_scheduler.queued)
        dask_scheduler._daskbench_max_queued = max(dask_scheduler._daskbench_max_queued, queued)

    sampler = PeriodicCallback(sample, _QUEUE_SAMPLE_MS)
    sampler.start()
    dask_scheduler._daskbench_queue_sampler = sampler
    return _scheduler_counters(dask_scheduler)


def _scheduler_counters(dask_scheduler: Any) -> dict[str, float]:
    return {
        "cpu": time.thread_time(),  # run on the event loop: this is the loop thread's CPU
        "ticks": float(dask_scheduler._tick_counter),
        "tick_seconds": float(dask_scheduler.digests_total.get("tick-duration", 0.0)),
        "interval": float(dask_scheduler._tick_interval),
        "transitions": float(dask_scheduler.transition_counter),
    }


def _scheduler_stop(dask_scheduler: Any) -> dict[str, float]:
    """Counters now and the longest queue seen; removes the sampler."""
    sampler = getattr(dask_scheduler, "_daskbench_queue_sampler", None)
    if sampler is not None:
        sampler.stop()
        dask_scheduler._daskbench_queue_sampler = None
    counters = _scheduler_counters(dask_scheduler)
    counters["max_queued"] = float(max(getattr(dask_scheduler, "_daskbench_max_queued", 0), len(dask_scheduler.queued)))
    return counters


def scheduler_metrics(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float | int]:
    """The declared scheduler metrics from the counters around the compute phase.

    Blocked time is the ticks' total duration beyond the tick interval: a loop that ticks
    on time adds nothing, a 2 s GIL-holding handler adds about 2 s.
    """
    ticks = after["ticks"] - before["ticks"]
    blocked = (after["tick_seconds"] - before["tick_seconds"]) - ticks * after["interval"]
    return {
        "scheduler_cpu_s": round(max(0.0, after["cpu"] - before["cpu"]), 4),
        "scheduler_blocked_s": round(max(0.0, blocked), 4),
        "transition_count": int(max(0.0, after["transitions"] - before["transitions"])),
        "max_tasks_queued": int(after.get("max_queued", 0)),
    }


@dataclass
class BreakdownCollector:
    """Snapshots around one compute phase: the time breakdown (``extra``) and the scheduler metrics."""

    window: Window
    workers: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    scheduler: Mapping[str, float] = field(default_factory=dict)
    #: Whether distributed meters task execution (this process's release; the workers run the same).
    fine: bool = field(default_factory=fine_metrics)

    def start(self, client: Any) -> None:
        self.workers = client.run(_worker_seconds) if self.fine else {}
        self.scheduler = client.run_on_scheduler(_scheduler_start)

    def stop(self, client: Any) -> Collected:
        """The breakdown of the window's thread-seconds, and the scheduler metrics; without fine
        performance metrics, the scheduler metrics and what was not available."""
        after_scheduler = client.run_on_scheduler(_scheduler_stop)
        if not self.fine:
            return Collected(scheduler_metrics(self.scheduler, after_scheduler), not_available(NO_FINE_METRICS, *FINE))
        found = fold(self.workers, client.run(_worker_seconds), self.window.thread_seconds)
        extra = {
            "time_breakdown": found.activities,
            "time_breakdown_by_prefix": found.by_prefix,
            "thread_seconds": found.thread_seconds,
        }
        metrics = {
            **scheduler_metrics(self.scheduler, after_scheduler),
            "task_cpu_s": found.activities.get("compute", 0.0),
        }
        return Collected(metrics=metrics, extra=extra)
