"""``daskbench advise``: what to run a workload on, from what a run measured, and why.

Per workload (and its parameters) of one run, from the measurements only:

- the largest per-task peak memory (``--task-memory``; measured at one thread per worker
  when the run has it, where attribution is exact);
- for each measured thread count, the smallest worker memory that holds that peak times
  the threads below the spill threshold ``distributed.worker.memory.target`` (the case's
  swept value, else the run's Dask config, else Dask's default 0.6):
  memory >= peak x threads / target;
- for each measured memory limit, the threads it allows: floor(memory x target / peak);
- the cheapest priced instance shape for each of those needs (the price table, dated);
- the cheapest and the fastest measured configuration (medians over passed repeats), what
  each costs and how they differ; configurations that failed (``oom``, ``worker-lost``,
  ...) as evidence that a shape is too small;
- where the run does not cover something, the sweep that would.

Every line cites the measurements behind it (run, case fingerprint, repeats) and nothing is
extrapolated beyond them. Pure functions over records; ``daskbench.cli.advise`` prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from daskbench.judge.stats import median
from daskbench.metrics.cost import PriceTable
from daskbench.model import NOT_RESULTS, Case, Measurement, Run, TaskMemory
from daskbench.text import (
    compact_bytes,
    config_key_short,
    format_bytes,
    format_usd,
    plural,
    saturation_text,
    slots_count,
)

TARGET_KEY = "distributed.worker.memory.target"
#: Dask's default fraction of the memory limit at which a worker starts spilling to disk.
DEFAULT_TARGET = 0.6


@dataclass(frozen=True)
class Config:
    """One measured configuration: a case and its measurements in the run."""

    case: Case
    measurements: tuple[Measurement, ...]
    run_id: str

    @property
    def passed(self) -> tuple[Measurement, ...]:
        return tuple(m for m in self.measurements if m.ok)

    @property
    def failed(self) -> tuple[Measurement, ...]:
        """The measurements that failed as results of this configuration (not cut by an interrupt or a lost cluster)."""
        return tuple(m for m in self.measurements if not m.ok and m.outcome not in NOT_RESULTS)

    def median_of(self, metric: str) -> float | None:
        values = [getattr(m, metric) for m in self.passed if getattr(m, metric) is not None]
        return median(values) if values else None

    def cite(self) -> str:
        """``run e42b782d case 3f2a9c1b r0-r2``: where the figures come from."""
        repeats = sorted(m.repeat for m in self.measurements)
        span = f"r{repeats[0]}" if len(repeats) == 1 else f"r{repeats[0]}-r{repeats[-1]}"
        return f"run {self.run_id[:8]} case {self.case.fingerprint[:8]} {span}"

    def words(self) -> str:
        """``1 worker x 2 threads, 4GiB, sat 1.1 (3 slots), memory.target=0.6``."""
        spec = self.case.cluster
        text = (
            f"{plural(spec.n_workers, 'worker')} x {plural(spec.threads_per_worker, 'thread')}, "
            f"{compact_bytes(spec.memory_per_worker)}, "
            f"sat {saturation_text(spec.worker_saturation)} ({slots_count(spec.task_slots)})"
        )
        return text + "".join(f", {config_key_short(k)}={v}" for k, v in sorted(spec.config.items()))


@dataclass(frozen=True)
class Line:
    """One piece of advice: a topic, the sentence, and the measurements it rests on."""

    topic: str
    text: str
    cites: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "text": self.text, "cites": list(self.cites)}


@dataclass(frozen=True)
class WorkloadAdvice:
    workload: str
    params: Mapping[str, Any]
    lines: tuple[Line, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "params": dict(self.params), "advice": [x.to_dict() for x in self.lines]}


def configs_of(run: Run, measurements: Iterable[Measurement], cases: Mapping[str, Case]) -> list[Config]:
    """The run's measurements grouped into one `Config` per case."""
    grouped: dict[str, list[Measurement]] = {}
    for m in measurements:
        grouped.setdefault(m.fingerprint, []).append(m)
    return [Config(cases[fp], tuple(ms), run.run_id) for fp, ms in grouped.items() if fp in cases]


def spill_target(config: Config, run: Run) -> float:
    """The fraction of the memory limit where spilling starts for this configuration."""
    for source in (config.case.cluster.config, run.dask_config):
        value = source.get(TARGET_KEY)
        try:
            number = float(value) if value is not None and not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if 0 < number <= 1:
            return number
    return DEFAULT_TARGET


def advise(run: Run, configs: Sequence[Config], prices: PriceTable) -> list[WorkloadAdvice]:
    """Advice per workload and parameters of ``run``, in the order they appear."""
    by_workload: dict[str, list[Config]] = {}
    for config in configs:
        key = json.dumps([config.case.workload, dict(config.case.params)], sort_keys=True, default=str)
        by_workload.setdefault(key, []).append(config)
    return [
        WorkloadAdvice(group[0].case.workload, dict(group[0].case.params), tuple(_advise_one(run, group, prices)))
        for group in by_workload.values()
    ]


def _advise_one(run: Run, configs: Sequence[Config], prices: PriceTable) -> list[Line]:
    lines: list[Line] = []
    peak = task_peak(configs)
    if peak is None:
        lines.append(Line("per-task memory", "not measured; re-run with --task-memory to size workers from it"))
    else:
        lines += _memory_lines(run, configs, peak, prices)
    lines += _measured_lines(configs)
    lines += _sweep_lines(configs, peak is not None)
    return lines


@dataclass(frozen=True)
class Peak:
    """The largest per-task peak of a workload and where it was measured."""

    task: TaskMemory
    config: Config
    exact: bool  # measured at one thread per worker


def task_peak(configs: Sequence[Config]) -> Peak | None:
    """The largest per-task peak, from one-thread configurations when there are any (exact)."""
    found = [(task, c) for c in configs for m in c.passed for task in m.tasks]
    exact = [(task, c) for task, c in found if c.case.cluster.threads_per_worker == 1]
    pool = exact or found
    if not pool:
        return None
    task, config = max(pool, key=lambda pair: pair[0].peak_bytes)
    return Peak(task, config, bool(exact))


def _memory_lines(run: Run, configs: Sequence[Config], peak: Peak, prices: PriceTable) -> list[Line]:
    """The largest per-task peak, then what it means for a worker's memory at each thread count measured, and
    for the threads each measured worker size allows below the spill threshold."""
    target = spill_target(peak.config, run)
    size = peak.task.peak_bytes
    how = "exact, 1 thread" if peak.exact else f"upper bound, {peak.task.concurrency} tasks at once"
    lines = [
        Line(
            "per-task memory",
            f"largest per-task peak {format_bytes(size)} (prefix {peak.task.prefix}, "
            f"{peak.task.tasks} tasks, {how}); spill threshold memory.target {target:g}",
            (peak.config.cite(),),
        )
    ]
    if size <= 0:
        return lines
    for threads in sorted({c.case.cluster.threads_per_worker for c in configs}):
        lines.append(_worker_memory_line(configs, peak, prices, threads, target))
    for memory in sorted({c.case.cluster.memory_per_worker for c in configs if c.case.cluster.memory_per_worker}):
        allowed = math.floor(memory * target / size)
        lines.append(
            Line(
                "threads",
                f"a {compact_bytes(memory)} worker holds {plural(allowed, 'such task')} at once "
                f"below the spill threshold, so up to {plural(allowed, 'thread')}",
                (peak.config.cite(),),
            )
        )
    return lines


def _worker_memory_line(configs: Sequence[Config], peak: Peak, prices: PriceTable, threads: int, target: float) -> Line:
    """What a worker of ``threads`` threads needs for the largest per-task peak, the cheapest priced shape that
    holds it, and the whole-worker peak measured at that thread count."""
    size = peak.task.peak_bytes
    needed = math.ceil(size * threads / target)
    shape = prices.cheapest(threads, needed)
    priced = (
        f"; cheapest shape {shape.name} ({shape.vcpus} vCPU, {format_bytes(shape.memory_bytes)}, "
        f"{format_usd(shape.usd_per_hour)}/h, prices of {prices.as_of})"
        if shape
        else "; no priced instance is that large"
    )
    seen = [
        (c.median_of("peak_worker_memory_bytes"), c)
        for c in configs
        if c.case.cluster.threads_per_worker == threads and c.median_of("peak_worker_memory_bytes")
    ]
    observed = max(seen, key=lambda pair: pair[0] or 0.0, default=None)
    whole = (
        f"; measured whole-worker peak at {plural(threads, 'thread')}: {format_bytes(observed[0])} (tasks plus "
        "the worker itself)"
        if observed
        else ""
    )
    cites = (peak.config.cite(), *((observed[1].cite(),) if observed and observed[1] is not peak.config else ()))
    return Line(
        "worker memory",
        f"at {plural(threads, 'thread')} a worker needs >= {format_bytes(needed)} "
        f"({format_bytes(size)} x {threads} / {target:g}){priced}{whole}",
        cites,
    )


def _measured_lines(configs: Sequence[Config]) -> list[Line]:
    lines = [Line("too small", f"{c.words()}: {_failures(c)}", (c.cite(),)) for c in configs if c.failed]
    good = [c for c in configs if c.passed and not c.failed]
    priced = [c for c in good if c.median_of("cost_usd") is not None and c.median_of("runtime_s") is not None]
    if not priced:
        return [*lines, Line("measured", "no configuration passed every repeat with a cost; nothing to pick from")]
    cheapest = min(priced, key=lambda c: (c.median_of("cost_usd") or 0.0, c.median_of("runtime_s") or 0.0))
    fastest = min(priced, key=lambda c: (c.median_of("runtime_s") or 0.0, c.median_of("cost_usd") or 0.0))
    lines.append(Line("cheapest measured", _figures(cheapest), (cheapest.cite(),)))
    if fastest is cheapest:
        lines.append(Line("fastest measured", "the same configuration", (fastest.cite(),)))
        return lines
    lines.append(Line("fastest measured", _figures(fastest), (fastest.cite(),)))
    speed = (cheapest.median_of("runtime_s") or 0.0) / (fastest.median_of("runtime_s") or 1.0)
    price = (fastest.median_of("cost_usd") or 0.0) / (cheapest.median_of("cost_usd") or 1.0)
    lines.append(
        Line(
            "trade-off",
            f"the fastest is {speed:.2f}x faster and {price:.2f}x dearer than the cheapest",
            (cheapest.cite(), fastest.cite()),
        )
    )
    return lines


def _figures(c: Config) -> str:
    runtime, cost = c.median_of("runtime_s") or 0.0, c.median_of("cost_usd") or 0.0
    peak = c.median_of("peak_worker_memory_bytes")
    return (
        f"{c.words()}: {runtime:.2f} s, {format_usd(cost)} per run, per-worker peak {format_bytes(peak)} "
        f"(median of {plural(len(c.passed), 'repeat')})"
    )


def _failures(c: Config) -> str:
    outcomes = sorted({m.outcome for m in c.failed})
    return (
        f"{', '.join(outcomes)} in {len(c.failed)} of {plural(len(c.measurements), 'repeat')}: this shape is too small "
        "or broke"
    )


def _sweep_lines(configs: Sequence[Config], has_peak: bool) -> list[Line]:
    threads = {c.case.cluster.threads_per_worker for c in configs}
    memories = {c.case.cluster.memory_per_worker for c in configs}
    lines = []
    if len(threads) < 2:
        lines.append(
            Line(
                "not covered",
                f"one thread count ({min(threads)}); to compare: sweep "
                f"--threads-per-worker {','.join(map(str, sorted({1, 2, 4} | threads)))}",
            )
        )
    if len(memories) < 2:
        lines.append(Line("not covered", "one memory limit; to compare: sweep --memory-per-worker 2GiB,4GiB"))
    if has_peak and all(c.case.cluster.threads_per_worker > 1 for c in configs):
        lines.append(
            Line("not covered", "no 1-thread run: per-task peaks are upper bounds; add --threads-per-worker 1")
        )
    return lines
