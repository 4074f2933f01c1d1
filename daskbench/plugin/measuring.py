"""One measurement: restart workers, open the collectors, time the compute phase, classify.

A measurement may make several calls of the benchmark in its one timed region (``loops``, asked by a lockstep
controller: `daskbench.lockstep.loops`): one restart and one collector window for all of them, the runtime and
the metrics summed over the window recorded per call (`daskbench.metrics.collectors.per_call`), the phases as
the window took them, and ``extra["loops"]``. A callable target is called each time (its graph built anew, or
its own computation run again); a collection is computed each time.

A worker killed for memory, a lost worker, a timeout or a task error are results: they
become a Measurement with that outcome and whatever was measured up to the failure,
never an exception out of here. A worker that died for another reason while the work
still finished (its tasks re-run) makes the outcome ``worker-lost``, its runtime kept but
never judged by default. Losing the scheduler, in or before the timed region, is the
outcome ``cluster-lost`` (nothing measured). Only another harness failure before the timed
region (the cluster cannot restart) propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
from distributed import Client, KilledWorker

from daskbench import evidence
from daskbench.clusters import forkserver, scheduler_address, scheduler_lost
from daskbench.deadline import within
from daskbench.metrics import collectors
from daskbench.metrics.breakdown import BreakdownCollector
from daskbench.metrics.clientmemory import ClientMemoryCollector
from daskbench.metrics.collectors import Collected
from daskbench.metrics.cost import PriceTable, estimate
from daskbench.metrics.counters import CounterCollector
from daskbench.metrics.memory import MemoryCollector
from daskbench.metrics.probe import SpeedProbe
from daskbench.metrics.taskmemory import TaskMemoryCollector
from daskbench.model import CLUSTER_LOST, INTERRUPTED, WORKER_LOST, Case, Measurement, Outcome, now_iso
from daskbench.text import one_line, plural

Target = Any  # a Dask collection, or a zero-argument callable


@dataclass
class Attempt:
    """What happened inside the timed region: the result of its last call, the error that ended it, its phases
    (summed over its calls) and the calls begun (`daskbench.lockstep.loops`)."""

    result: Any = None
    error: BaseException | None = None
    phases: dict[str, float] = field(default_factory=dict)
    loops: int = 1


def is_collection(value: Any) -> bool:
    return dask.is_dask_collection(value)


def run_target(client: Client, target: Target, timeout: float, loops: int = 1) -> Attempt:
    """Call the target ``loops`` times in one timed region: a callable is called each time (its graph built
    anew, the build timed apart), a collection computed each time; all of it within ``timeout`` seconds. The
    first failing call ends the attempt."""
    attempt = Attempt(loops=0)
    deadline = time.perf_counter() + timeout
    try:
        for _ in range(max(loops, 1)):
            attempt.loops += 1
            attempt.result = None  # the last call's result only: no earlier one is held while the next runs
            left = max(deadline - time.perf_counter(), 0.001)
            attempt.result = _call(client, target, left, attempt.phases, limit=timeout)
    except Exception as exc:
        attempt.error = exc
    return attempt


def _call(client: Client, target: Target, timeout: float, phases: dict[str, float], limit: float) -> Any:
    """One call: build (if the target is a callable returning a collection) and compute, timed apart and added
    to ``phases``, within ``timeout`` seconds (what is left of ``limit``, the ``--timeout``); a callable that
    computes by itself is all compute."""
    if callable(target) and not is_collection(target):
        start = time.perf_counter()
        target = within(target, timeout, "graph build (or a callable computing by itself)", limit)
        elapsed = time.perf_counter() - start
        timeout = max(timeout - elapsed, 0.001)
        if not is_collection(target):
            phases["compute"] = phases.get("compute", 0.0) + elapsed
            return target
        phases["build"] = phases.get("build", 0.0) + elapsed
    return _compute(client, target, timeout, phases)


def _compute(client: Client, collection: Any, timeout: float, phases: dict[str, float]) -> Any:
    """Compute ``collection``, its seconds added to ``phases``. A compute that finished is released, not
    cancelled, and the release is waited for: the next call of a measurement of several computes the same keys,
    and a future made for a key the client still holds shares its state, a cancelled one
    (``FutureCancelledError``) or a finished one (its result at once, nothing recomputed). A compute cut short
    (timeout, Ctrl-C) is cancelled, so its work stops."""
    start = time.perf_counter()
    future = client.compute(collection)
    try:
        result = future.result(timeout=timeout)
    except BaseException:
        phases["compute"] = phases.get("compute", 0.0) + time.perf_counter() - start
        future.cancel()
        raise
    phases["compute"] = phases.get("compute", 0.0) + time.perf_counter() - start
    future.release()
    client.sync(asyncio.sleep, 0)  # the release (queued on the client's loop) done: the next call recomputes
    return result


def classify(error: BaseException | None, found: Collected) -> tuple[Outcome, str]:
    """The outcome and a one-line message for what happened in the timed region, given what
    the collectors measured (worker deaths: ``worker_restarts``; ``extra["oom_deaths"]``)."""
    if error is None:
        return completed(found)
    message = one_line(error)
    if isinstance(error, TimeoutError):
        return "timeout", message
    oom = found.extra.get("oom_deaths", 0) > 0
    if isinstance(error, KilledWorker) or found.metrics.get("worker_restarts", 0) > 0:
        return ("oom" if oom else "worker-lost"), message
    return "failed", message


def completed(found: Collected) -> tuple[Outcome, str]:
    """A compute that finished: ``passed``, or ``worker-lost`` when a worker died in it for a
    reason other than memory (killed, crashed) and its tasks were re-run, so the runtime holds the re-run."""
    lost = int(found.metrics.get("worker_restarts", 0)) - int(found.extra.get("oom_deaths", 0))
    if lost <= 0:
        return "passed", ""
    return (
        WORKER_LOST,
        f"{plural(lost, 'worker')} died mid-measurement, not for memory: the runtime includes re-run tasks",
    )


class WorkerImport(Exception):
    """A module of the benchmark's own that is there on a worker but fails to import (`Measurer.warm_up`)."""

    def __init__(self, worker: str, module: str, said: str) -> None:
        super().__init__(
            f"{module} does not import on worker {worker}: {said}; it imports here, so what it needs differs "
            "on the workers (their environment, path or variables): nothing was computed"
        )


@dataclass
class Opened:
    """A measurement under way (`Measurer.open`): what `Measurer.close` needs to end it."""

    case: Case
    repeat: int
    phases: dict[str, float]
    extra: dict[str, Any]
    window: collectors.Window
    started: list[collectors.Collector]
    errors: dict[str, str]
    keeping: contextlib.ExitStack  # the evidence kept around the timed region (`evidence.kept`)
    kept: evidence.Kept


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
    worker_start: str | None = None  # how a local cluster's nannies start workers (forkserver, spawn), recorded
    memory: MemoryCollector = field(init=False)
    address: str = field(init=False)  # the scheduler's, for the line that says it was lost

    def __post_init__(self) -> None:
        self.address = scheduler_address(self.client)
        self.memory = MemoryCollector(self.n_workers)
        self.memory.install(self.client)

    def warm_up(self, modules: tuple[str, ...]) -> float:
        """Import ``modules`` on every (freshly restarted) worker; returns the seconds it took.

        A restarted worker is a new process: without this, importing the workload's code
        (xarray, pandas, the benchmark module...) would land inside the timed compute phase.
        A module of the benchmark's own (not a library of `forkserver.LIBRARIES`) that is there but fails to import
        on a worker raises `WorkerImport`: its tasks could not be unpickled there, and distributed would retry them
        on restarted workers until the measurement's timeout (issue 45). A module that is not there at all (a
        remote worker without the benchmark's file) is left to the measurement, as before.
        """
        start = time.perf_counter()
        if modules:
            found = self.client.run(forkserver.import_all, modules)
            failing = [
                (worker, name, said)
                for worker, failed in sorted(found.items())
                for name, said in failed.items()
                if said != forkserver.ABSENT and name not in forkserver.LIBRARIES
            ]
            if failing:
                raise WorkerImport(*failing[0])
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
        loops: int = 1,
    ) -> tuple[Measurement, Any]:
        """Restart, warm up, measure ``loops`` calls of ``target`` in one timed region; return the measurement
        (per call) and the last call's result. The scheduler lost on the way (before, in or after the timed
        region) is a ``cluster-lost`` measurement."""
        opened = self.open(case, repeat, phases, extra, preload)
        if isinstance(opened, Measurement):
            return opened, None
        try:
            attempt = run_target(self.client, target, self.timeout, loops)
        except BaseException:  # Ctrl-C / SIGTERM: the evidence closes as it would leaving a with block
            opened.keeping.close()
            raise
        return self.close(opened, attempt), attempt.result

    def open(
        self, case: Case, repeat: int, phases: dict[str, float], extra: dict[str, Any], preload: tuple[str, ...] = ()
    ) -> Opened | Measurement:
        """Everything before the timed region: workers restarted and warmed up, collectors started,
        evidence being kept. A test measured as a whole (`daskbench.plugin.whole`) times its body between
        this and `close`. The scheduler lost before or on the way: a ``cluster-lost`` measurement instead."""
        if scheduler_lost(self.client):  # lost between measurements: calls would wait out the reconnection
            return self.lost(case, repeat, phases)
        try:
            return self._open(case, repeat, phases, extra, preload)
        except Exception as exc:
            if not scheduler_lost(self.client, exc):
                raise
            return self.lost(case, repeat, phases)

    def close(self, opened: Opened, attempt: Attempt) -> Measurement:
        """The measurement of what happened in the timed region (``attempt``): collectors stopped, outcome
        classified; a scheduler lost in or after it gives a ``cluster-lost`` measurement."""
        try:
            return self._close(opened, attempt)
        except Exception as exc:
            if not scheduler_lost(self.client, exc):
                raise
            return self.lost(opened.case, opened.repeat, {**opened.phases, **attempt.phases})

    def abandon(self, opened: Opened) -> None:
        """End a measurement that measured nothing (its test skipped itself): evidence and collectors closed,
        what they found dropped."""
        opened.keeping.close()
        collectors.stop_all(self.client, opened.started, {})

    def _open(
        self, case: Case, repeat: int, phases: dict[str, float], extra: dict[str, Any], preload: tuple[str, ...]
    ) -> Opened | Measurement:
        phases = {**phases, "restart": self.restart()}
        try:
            phases["warmup"] = self.warm_up(preload)
        except WorkerImport as failed:
            return self.unimportable(case, repeat, phases, failed)
        window = collectors.Window(case)
        errors: dict[str, str] = {}
        began = time.perf_counter()
        started = collectors.start_all(self.client, self._collectors(window), errors)
        phases["collectors"] = time.perf_counter() - began
        keeping = contextlib.ExitStack()
        kept = keeping.enter_context(evidence.kept(self.client, self.evidence_dir))
        return Opened(case, repeat, phases, dict(extra), window, started, errors, keeping, kept)

    def _close(self, opened: Opened, attempt: Attempt) -> Measurement:
        opened.keeping.close()  # the evidence of the timed region, kept before the collectors stop
        phases = dict(opened.phases)
        if scheduler_lost(self.client, attempt.error):  # no collector can be stopped on a lost scheduler
            return self.lost(opened.case, opened.repeat, {**phases, **attempt.phases})
        opened.window.runtime_s = attempt.phases.get("compute", 0.0)  # the window's: every call of it
        closing = time.perf_counter()
        found = collectors.merge(collectors.stop_all(self.client, opened.started, opened.errors))
        found = collectors.per_call(found, attempt.loops)
        phases["collectors"] += time.perf_counter() - closing  # both ends of the window: start and stop
        if scheduler_lost(self.client):  # lost while the collectors stopped: their figures are cut short
            return self.lost(opened.case, opened.repeat, {**phases, **attempt.phases})
        outcome, message = classify(attempt.error, found)
        errors = {"collector_errors": opened.errors} if opened.errors else {}
        extra = {**opened.extra, **found.extra, **opened.kept.extra, **errors, "loops": attempt.loops}
        runtime = attempt.phases["compute"] / attempt.loops if attempt.error is None else None
        return self._record(
            opened.case, opened.repeat, (outcome, message), {**phases, **attempt.phases}, found, extra, runtime
        )

    def lost(self, case: Case, repeat: int, phases: Mapping[str, float]) -> Measurement:
        """The measurement during which the scheduler was lost: ``cluster-lost``, nothing measured, never judged."""
        return Measurement(
            run_id=self.run_id,
            fingerprint=case.fingerprint,
            repeat=repeat,
            outcome=CLUSTER_LOST,
            message=f"lost the connection to the scheduler at {self.address}; nothing measured",
            phases={k: round(v, 6) for k, v in phases.items()},
            recorded_at=now_iso(),
        )

    def unimportable(self, case: Case, repeat: int, phases: Mapping[str, float], failed: WorkerImport) -> Measurement:
        """The measurement whose benchmark code does not import on a worker: ``error``, with the exception's line,
        at once (nothing computed, so no runtime)."""
        return Measurement(
            run_id=self.run_id,
            fingerprint=case.fingerprint,
            repeat=repeat,
            outcome="error",
            message=str(failed),
            phases={k: round(v, 6) for k, v in phases.items()},
            recorded_at=now_iso(),
        )

    def _collectors(self, window: collectors.Window) -> list[collectors.Collector]:
        """One measurement's collectors in start order: the CPU speed probe (outermost, so its
        readings bracket everything else), counters, the registered ones, the time breakdown,
        ``--task-memory``, this process's memory, the memory sampler (started last, stopped first)."""
        per_task: list[collectors.Collector] = [TaskMemoryCollector()] if self.task_memory else []
        return [
            SpeedProbe(window),
            CounterCollector(),
            *collectors.create(),
            BreakdownCollector(window),
            *per_task,
            ClientMemoryCollector(),
            self.memory,
        ]

    def _record(
        self,
        case: Case,
        repeat: int,
        said: tuple[Outcome, str],
        phases: dict[str, float],
        found: Collected,
        extra: dict[str, Any],
        runtime: float | None,
    ) -> Measurement:
        """The measurement of one finished attempt; ``runtime`` is the compute phase per call when it ran to the
        end (``phases`` keep the window's totals)."""
        outcome, message = said
        priced, costs = self._costs(case, runtime, found)
        extra = {**extra, **priced}
        if self.worker_start:
            extra["worker_start"] = self.worker_start
        if not self.restart_workers:
            extra["workers_restarted"] = False  # memory measured from the shared workers' current level
        values = {"runtime_s": runtime, **found.metrics, **costs}
        return Measurement(
            run_id=self.run_id,
            fingerprint=case.fingerprint,
            repeat=repeat,
            outcome=outcome,
            message=message,
            metrics={name: value for name, value in values.items() if value is not None},
            phases={k: round(v, 6) for k, v in phases.items()},
            timeline=found.timeline,
            extra=extra,
            recorded_at=now_iso(),
            tasks=found.tasks,
        )

    def _costs(
        self, case: Case, runtime: float | None, found: Collected
    ) -> tuple[dict[str, Any], dict[str, float | None]]:
        """What the price table makes of one attempt: its instances (extra) and its costs (metrics)."""
        spec = case.cluster
        cost = estimate(
            self.prices,
            runtime,
            spec.n_workers,
            spec.threads_per_worker,
            spec.memory_per_worker,
            found.metrics.get("peak_worker_memory_bytes"),
        )
        priced = {
            "instance": cost.instance,
            "rightsized_instance": cost.rightsized_instance,
            "prices_as_of": cost.prices_as_of,
        }
        return priced, {"cost_usd": cost.cost_usd, "rightsized_cost_usd": cost.rightsized_cost_usd}


def failed_measurement(
    run_id: str, case: Case, repeat: int, error: BaseException, phases: dict[str, float]
) -> Measurement:
    """A measurement for a case the harness could not run (the cluster would not start/restart)."""
    return Measurement(
        run_id=run_id,
        fingerprint=case.fingerprint,
        repeat=repeat,
        outcome="error",
        message=one_line(error),
        phases=phases,
        recorded_at=now_iso(),
    )


def interrupted_measurement(run_id: str, case: Case, repeat: int, phases: Mapping[str, float]) -> Measurement:
    """The measurement Ctrl-C cut short: outcome ``interrupted``, nothing measured, never judged."""
    return Measurement(
        run_id=run_id,
        fingerprint=case.fingerprint,
        repeat=repeat,
        outcome=INTERRUPTED,
        message="interrupted (Ctrl-C or SIGTERM) while it ran; nothing measured",
        phases=dict(phases),
        recorded_at=now_iso(),
    )


def call_once(fn: Callable[[], Any] | None, timeout: float | None = None) -> tuple[Any, float | None]:
    """Run a data-preparation callable, timed, within ``timeout`` seconds (None: no limit)."""
    if fn is None:
        return None, None
    start = time.perf_counter()
    value = fn() if timeout is None else within(fn, timeout, "data preparation (measure.prepare)")
    return value, time.perf_counter() - start
