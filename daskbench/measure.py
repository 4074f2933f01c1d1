"""One measurement: restart workers, open the collectors, time the compute phase, classify.

A worker killed for memory, a lost worker, a timeout or a task error are results: they
become a Measurement with that outcome and whatever was measured up to the failure,
never an exception out of here. Only a harness failure before the timed region (the
cluster cannot restart) propagates.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import dask
from distributed import Client, KilledWorker

from daskbench import catalog, evidence
from daskbench.deadline import within
from daskbench.metrics import collectors, counters
from daskbench.metrics.breakdown import BreakdownCollector
from daskbench.metrics.cost import PriceTable, estimate
from daskbench.metrics.memory import MemoryCollector, MemorySummary
from daskbench.metrics.taskmemory import TaskMemoryCollector, largest_peak
from daskbench.model import INTERRUPTED, Case, Measurement, Outcome, TaskMemory, now_iso
from daskbench.text import one_line

Target = Any  # a Dask collection, or a zero-argument callable
_T = TypeVar("_T")
_C = TypeVar("_C", BreakdownCollector, TaskMemoryCollector)


@dataclass
class Attempt:
    """What happened inside the timed region."""

    result: Any = None
    error: BaseException | None = None
    phases: dict[str, float] = field(default_factory=dict)


def is_collection(value: Any) -> bool:
    return dask.is_dask_collection(value)


def run_target(client: Client, target: Target, timeout: float) -> Attempt:
    """Build (if the target is a callable returning a collection) and compute, timed apart;
    build and compute together get at most ``timeout`` seconds."""
    attempt = Attempt()
    try:
        if callable(target) and not is_collection(target):
            start = time.perf_counter()
            target = within(target, timeout, "graph build (or a callable computing by itself)")
            elapsed = time.perf_counter() - start
            timeout = max(timeout - elapsed, 0.001)
            if not is_collection(target):
                attempt.phases["compute"] = elapsed
                attempt.result = target
                return attempt
            attempt.phases["build"] = elapsed
        attempt.result = _compute(client, target, timeout, attempt.phases)
    except Exception as exc:
        attempt.error = exc
    return attempt


def _compute(client: Client, collection: Any, timeout: float, phases: dict[str, float]) -> Any:
    start = time.perf_counter()
    future = client.compute(collection)
    try:
        return future.result(timeout=timeout)
    finally:
        phases["compute"] = time.perf_counter() - start
        future.cancel()


def classify(error: BaseException | None, memory: MemorySummary | None) -> tuple[Outcome, str]:
    """The outcome and a one-line message for what happened in the timed region."""
    if error is None:
        return "passed", ""
    message = one_line(error)
    if isinstance(error, TimeoutError):
        return "timeout", message
    oom = memory is not None and memory.oom_deaths > 0
    if isinstance(error, KilledWorker) or (memory is not None and memory.deaths > 0):
        return ("oom" if oom else "worker-lost"), message
    return "failed", message


@dataclass
class Measurer:
    """Takes measurements on one open cluster for one run."""

    client: Client
    run_id: str
    prices: PriceTable
    timeout: float
    n_workers: int
    evidence_dir: Path | None = None  # --evidence: this run's folder for performance reports and task streams
    restart_workers: bool = True  # False on a shared scheduler (tcp://) without --restart-workers
    task_memory: bool = False  # --task-memory: per-task peak memory per task prefix (Measurement.tasks)
    memory: MemoryCollector = field(init=False)

    def __post_init__(self) -> None:
        self.memory = MemoryCollector(self.client, self.n_workers)
        self.memory.install()

    def warm_up(self, modules: tuple[str, ...]) -> float:
        """Import ``modules`` on every (freshly restarted) worker; returns the seconds it took.

        A restarted worker is a new process: without this, importing the workload's code
        (xarray, pandas, the benchmark module...) would land inside the timed compute phase.
        """
        start = time.perf_counter()
        if modules:
            self.client.run(_import_all, modules)
        return time.perf_counter() - start

    def restart(self) -> float:
        """Restart every worker (clean memory) and wait for all of them; returns the seconds it took.

        ``Client.restart`` waits for as many workers as were there when it was called, which
        is too few right after a worker was killed, so the cluster size is awaited explicitly.
        """
        if not self.restart_workers:  # someone else's workers: memory is measured from their current level
            return 0.0
        start = time.perf_counter()
        self.client.restart(wait_for_workers=False)
        self.client.wait_for_workers(self.n_workers, timeout=max(60.0, self.timeout / 10))
        return time.perf_counter() - start

    def measure(
        self,
        case: Case,
        repeat: int,
        target: Target,
        phases: dict[str, float],
        extra: dict[str, Any],
        preload: tuple[str, ...] = (),
    ) -> tuple[Measurement, Any]:
        """Restart, warm up, measure ``target`` once; return the measurement and the result."""
        phases = {**phases, "restart": self.restart(), "warmup": self.warm_up(preload)}
        before = counters.snapshot(self.client)
        errors: dict[str, str] = {}
        extras = _start_all(self.client, collectors.create(), errors)
        timing = _start_breakdown(self.client, errors)
        per_task = _start_task_memory(self.client, errors) if self.task_memory else None
        self.memory.start()
        with evidence.kept(self.client, self.evidence_dir) as kept:
            attempt = run_target(self.client, target, self.timeout)
        memory = self._stop_memory()
        tasks = _stop_task_memory(self.client, per_task, errors)
        times, scheduler = _stop_breakdown(self.client, timing, case, attempt.phases.get("compute", 0.0), errors)
        collected = _stop_all(self.client, extras, errors)
        totals, task_seconds = self._counters(before)
        outcome, message = classify(attempt.error, memory)
        extra = {**extra, "task_seconds": task_seconds, **times, **kept.extra,
                 **({"collector_errors": errors} if errors else {})}  # fmt: skip
        measurement = self._record(case, repeat, outcome, message, {**phases, **attempt.phases}, memory,
                                   {**totals, **scheduler, **collected, "task_peak_bytes": largest_peak(tasks)},
                                   extra, tasks)  # fmt: skip
        return measurement, attempt.result

    def _stop_memory(self) -> MemorySummary | None:
        with contextlib.suppress(Exception):
            return self.memory.stop()
        return None

    def _counters(self, before: counters.CounterSnapshot) -> tuple[dict[str, int], dict[str, float]]:
        with contextlib.suppress(Exception):
            return counters.difference(before, counters.snapshot(self.client))
        return {}, {}

    def _record(
        self,
        case: Case,
        repeat: int,
        outcome: Outcome,
        message: str,
        phases: dict[str, float],
        memory: MemorySummary | None,
        collected: Mapping[str, float | int | None],
        extra: dict[str, Any],
        tasks: tuple[TaskMemory, ...] = (),
    ) -> Measurement:
        runtime = phases.get("compute") if outcome == "passed" else None
        spec = case.cluster
        cost = estimate(self.prices, runtime, spec.n_workers, spec.threads_per_worker, spec.memory_per_worker,
                        memory.peak_worker if memory else None)  # fmt: skip
        extra = {**extra, "instance": cost.instance, "rightsized_instance": cost.rightsized_instance,
                 "prices_as_of": cost.prices_as_of}  # fmt: skip
        if not self.restart_workers:
            extra["workers_restarted"] = False  # memory measured from the shared workers' current level
        values = {"runtime_s": runtime, **_memory_metrics(memory), **collected,
                  "cost_usd": cost.cost_usd, "rightsized_cost_usd": cost.rightsized_cost_usd}  # fmt: skip
        return Measurement(
            run_id=self.run_id,
            fingerprint=case.fingerprint,
            repeat=repeat,
            outcome=outcome,
            message=message,
            metrics={name: value for name, value in values.items() if value is not None},
            phases={k: round(v, 6) for k, v in phases.items()},
            timeline=memory.timeline if memory else (),
            extra=extra,
            recorded_at=now_iso(),
            tasks=tasks,
        )


def _memory_metrics(memory: MemorySummary | None) -> dict[str, float | int | None]:
    if memory is None:
        return {}
    return {
        "peak_memory_bytes": memory.peak_cluster,
        "mean_memory_bytes": memory.mean_cluster,
        "peak_worker_memory_bytes": memory.peak_worker,
        "peak_worker_memory_fraction": memory.peak_worker_fraction,
        "worker_restarts": memory.deaths,
    }


def _guarded(errors: dict[str, str], name: str, call: Callable[[], _T], failed: _T) -> _T:
    """``call()``; if it raises, ``failed`` and the error noted under ``name``: a collector
    that fails never costs the measurement."""
    try:
        return call()
    except Exception as exc:
        errors[name] = one_line(exc)
        return failed


def _started(collector: _C, client: Client) -> _C:
    collector.start(client)
    return collector


def _start_breakdown(client: Client, errors: dict[str, str]) -> BreakdownCollector | None:
    """The time-breakdown snapshots before the compute phase; None (error noted) if they fail."""
    return _guarded(errors, "BreakdownCollector", lambda: _started(BreakdownCollector(), client), None)


def _stop_breakdown(
    client: Client, timing: BreakdownCollector | None, case: Case, runtime: float, errors: dict[str, str]
) -> tuple[dict[str, Any], dict[str, float | int]]:
    """``extra`` entries (time_breakdown, by prefix, thread_seconds) and the scheduler metrics."""
    if timing is None:
        return {}, {}
    spec = case.cluster
    thread_seconds = spec.n_workers * spec.threads_per_worker * runtime
    stopped = _guarded(errors, "BreakdownCollector", lambda: timing.stop(client, thread_seconds), None)
    if stopped is None:
        return {}, {}
    found, scheduler = stopped
    extra = {"time_breakdown": found.activities, "time_breakdown_by_prefix": found.by_prefix,
             "thread_seconds": found.thread_seconds}  # fmt: skip
    return extra, scheduler


def _start_task_memory(client: Client, errors: dict[str, str]) -> TaskMemoryCollector | None:
    """``--task-memory``: the worker plugin installed for the compute phase; None (error noted) if it fails."""
    return _guarded(errors, "TaskMemoryCollector", lambda: _started(TaskMemoryCollector(), client), None)


def _stop_task_memory(
    client: Client, per_task: TaskMemoryCollector | None, errors: dict[str, str]
) -> tuple[TaskMemory, ...]:
    """Per-prefix task memory, the plugin removed; empty (error noted) when not measured or it fails."""
    if per_task is None:
        return ()
    return _guarded(errors, "TaskMemoryCollector", lambda: per_task.stop(client), ())


def _start_all(client: Client, found: list[collectors.Collector], errors: dict[str, str]) -> list[collectors.Collector]:
    """Start the registered collectors; one that fails is left out and its error noted in ``errors``."""
    started = []
    for collector in found:
        try:
            collector.start(client)
            started.append(collector)
        except Exception as exc:
            errors[type(collector).__name__] = one_line(exc)
    return started


def _stop_all(
    client: Client, started: list[collectors.Collector], errors: dict[str, str]
) -> dict[str, float | int | None]:
    """The collectors' values by metric name; a collector that fails is noted in ``errors``."""
    values: dict[str, float | int | None] = {}
    for collector in started:
        name = type(collector).__name__
        try:
            found = dict(collector.stop(client))
        except Exception as exc:
            errors[name] = one_line(exc)
            continue
        for metric, value in found.items():
            problem = _invalid(metric, value)
            if problem:
                errors[name] = problem
            else:
                values[metric] = value
    return values


def _invalid(metric: str, value: Any) -> str | None:
    """Why a collector's value cannot be stored (undeclared metric, wrong type or sign), or None."""
    if not catalog.is_declared(metric):
        return f"returned {metric!r}, which is not a declared metric (daskbench.catalog.declare)"
    if value is None:
        return None
    problem = catalog.get(metric).check(value)
    return f"{metric} {problem}" if problem else None


def _import_all(modules: tuple[str, ...]) -> list[str]:
    """Import what can be imported; returns the names that could not be (not an error)."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            missing.append(name)
    return missing


def failed_measurement(
    run_id: str, case: Case, repeat: int, error: BaseException, phases: dict[str, float]
) -> Measurement:
    """A measurement for a case the harness could not run (the cluster would not start/restart)."""
    return Measurement(run_id=run_id, fingerprint=case.fingerprint, repeat=repeat, outcome="error",
                       message=one_line(error), phases=phases, recorded_at=now_iso())  # fmt: skip


def interrupted_measurement(run_id: str, case: Case, repeat: int, phases: Mapping[str, float]) -> Measurement:
    """The measurement Ctrl-C cut short: outcome ``interrupted``, nothing measured, never judged."""
    return Measurement(run_id=run_id, fingerprint=case.fingerprint, repeat=repeat, outcome=INTERRUPTED,
                       message="interrupted (Ctrl-C or SIGTERM) while it ran; nothing measured",
                       phases=dict(phases), recorded_at=now_iso())  # fmt: skip


def call_once(fn: Callable[[], Any] | None, timeout: float | None = None) -> tuple[Any, float | None]:
    """Run a data-preparation callable, timed, within ``timeout`` seconds (None: no limit)."""
    if fn is None:
        return None, None
    start = time.perf_counter()
    value = fn() if timeout is None else within(fn, timeout, "data preparation (measure.prepare)")
    return value, time.perf_counter() - start
