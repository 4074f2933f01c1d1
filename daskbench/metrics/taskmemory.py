"""Per-task peak memory (``--task-memory``): the dask-memusage idea, per task prefix.

A worker plugin (`TaskMemoryWatch`) sees each task begin and end executing (its
``transition`` hook: into ``executing``, out of it), and one thread per worker process
polls the process's memory (RSS, psutil) every few milliseconds while tasks run. A
task's peak is the highest level polled while it ran minus the level at its start.

Attribution: with one thread per worker it is exact (one task runs at a time). With
more, the tasks running at once share the process's growth and each is charged all of
it, so a task's figure is an upper bound; ``concurrency`` (the most tasks running at once
in the worker while a task of that prefix ran) says how much sharing there was.

The plugin is registered at `TaskMemoryCollector.start` (just before the compute phase,
so only tasks that begin inside the window count; the harness submits no tasks there)
and unregistered at `stop`, which leaves a cluster someone else runs as found. Tasks
whose prefix starts with ``daskbench`` are never counted.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psutil
from distributed.diagnostics.plugin import WorkerPlugin

from daskbench.compat import register_plugin, task_prefix
from daskbench.metrics.collectors import Collected
from daskbench.model import TaskMemory

#: `daskbench.clusters.address` removes the plugins named ``daskbench-...`` from a shared scheduler.
PLUGIN_NAME = "daskbench-task-memory"
#: Seconds between two polls of the worker process's RSS.
INTERVAL = 0.003
#: Worker task states in which a task's code is running (``long-running``: it seceded).
_RUNNING = ("executing", "long-running")
#: Task prefixes of the harness's own tasks (never counted).
_HARNESS_PREFIX = "daskbench"


@dataclass
class _Running:
    """One task while it runs: its prefix, level at start, highest level seen, input, concurrency."""

    prefix: str
    start: int
    peak: int
    input_bytes: int
    concurrency: int


class TaskMemoryWatch(WorkerPlugin):
    """Worker plugin: each task's peak RSS above its start level, grouped by task prefix."""

    idempotent = False  # registering again replaces a leftover copy (and its figures) on every worker
    name = PLUGIN_NAME

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self._process = psutil.Process()
        self._lock = threading.Lock()
        self._running: dict[Any, _Running] = {}
        self._done: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="daskbench-task-memory", daemon=True)
        self._thread.start()

    def teardown(self, worker: Any) -> None:
        self._stop.set()

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """Open a task's record when it begins executing, close it when it stops."""
        if finish in _RUNNING and start not in _RUNNING:
            self._begin(key)
        elif start in _RUNNING and finish not in _RUNNING:
            self._end(key)

    def report(self) -> dict[str, dict[str, Any]]:
        """Per prefix: every finished task's peak (bytes), the largest input and concurrency."""
        with self._lock:
            return {prefix: {**found, "peaks": list(found["peaks"])} for prefix, found in self._done.items()}

    def _rss(self) -> int:
        try:
            return int(self._process.memory_info().rss)
        except psutil.Error:
            return 0

    def _begin(self, key: Any) -> None:
        ts = self.worker.state.tasks.get(key)
        prefix = task_prefix(ts, key)
        if prefix.startswith(_HARNESS_PREFIX):
            return
        inputs = sum(dep.nbytes or 0 for dep in ts.dependencies) if ts is not None else 0
        level = self._rss()
        with self._lock:
            self._running[key] = _Running(prefix, level, level, int(inputs), 1)
            now = len(self._running)
            for task in self._running.values():
                task.concurrency = max(task.concurrency, now)

    def _end(self, key: Any) -> None:
        level = self._rss()
        with self._lock:
            task = self._running.pop(key, None)
            if task is None:
                return
            found = self._done.setdefault(task.prefix, {"peaks": [], "input_bytes": 0, "concurrency": 1})
            found["peaks"].append(max(0, max(task.peak, level) - task.start))
            found["input_bytes"] = max(found["input_bytes"], task.input_bytes)
            found["concurrency"] = max(found["concurrency"], task.concurrency)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if self._running:
                self._poll()

    def _poll(self) -> None:
        level = self._rss()
        with self._lock:
            for task in self._running.values():
                if level > task.peak:
                    task.peak = level


def _report_on_worker(dask_worker: Any) -> dict[str, dict[str, Any]] | None:
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    return plugin.report() if plugin is not None else None


def percentile_95(values: Iterable[int]) -> int:
    """The 95th percentile by nearest rank (a value that occurred; never above the maximum)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile_95 of no values")
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def aggregate(reports: Iterable[Mapping[str, Mapping[str, Any]] | None]) -> tuple[TaskMemory, ...]:
    """Per-worker reports combined per prefix across workers, largest peak first."""
    peaks: dict[str, list[int]] = {}
    inputs: dict[str, int] = {}
    concurrency: dict[str, int] = {}
    for report in reports:
        for prefix, found in (report or {}).items():
            peaks.setdefault(prefix, []).extend(int(p) for p in found["peaks"])
            inputs[prefix] = max(inputs.get(prefix, 0), int(found.get("input_bytes", 0)))
            concurrency[prefix] = max(concurrency.get(prefix, 1), int(found.get("concurrency", 1)))
    found_tasks = [
        TaskMemory(prefix, len(values), max(values), percentile_95(values), inputs[prefix], concurrency[prefix])
        for prefix, values in peaks.items()
        if values
    ]
    return tuple(sorted(found_tasks, key=lambda t: (-t.peak_bytes, t.prefix)))


def largest_peak(tasks: Iterable[TaskMemory]) -> int | None:
    """The largest per-task peak over prefixes (the ``task_peak_bytes`` metric), None when none ran."""
    return max((t.peak_bytes for t in tasks), default=None)


class TaskMemoryCollector:
    """Registers the worker plugin for one compute phase; ``stop`` gathers and removes it."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval

    def start(self, client: Any) -> None:
        """Install the plugin on every worker (and on any worker that joins until ``stop``)."""
        register_plugin(client, TaskMemoryWatch(self.interval), name=PLUGIN_NAME)

    def stop(self, client: Any) -> Collected:
        """Per-prefix task memory from every worker and the largest peak (``task_peak_bytes``);
        the plugin is unregistered even if gathering fails."""
        try:
            reports = client.run(_report_on_worker)
        finally:
            client.unregister_worker_plugin(PLUGIN_NAME)
        tasks = aggregate(reports.values())
        peak = largest_peak(tasks)
        return Collected(metrics={} if peak is None else {"task_peak_bytes": peak}, tasks=tasks)
