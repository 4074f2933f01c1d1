"""The metrics daskbench records: one declaration each, and everything else derived from it.

A `Metric` says what a number is (name, unit, kind), which way is worse, whether
``compare`` judges it by default, its default run-to-run noise and floor, the words for
"more" and "less", and its chart title. The record's checks (`daskbench.model`), the
store's rows, ``daskbench show`` and its JSON, ``compare`` and the report all read this
catalog, so adding a metric is a collector (`daskbench.metrics.collectors`) plus one
`declare(Metric(...))`; the store keeps metric values one row each and needs no new
column.

Stdlib only, above `daskbench.text` and below everything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, get_args

from daskbench.text import format_bytes, format_usd

Unit = Literal["s", "bytes", "usd", "fraction", "count"]
#: What a metric measures; ``compare --floor memory=1.2`` sets the floor of every metric of a kind.
Kind = Literal["runtime", "memory", "cost", "work"]
KINDS: tuple[str, ...] = get_args(Kind)

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: Axis scale and symbol per unit, for charts: (symbol, divisor).
AXIS: dict[str, tuple[str, float]] = {
    "s": ("s", 1.0),
    "bytes": ("GiB", 2.0**30),
    "usd": ("USD", 1.0),
    "fraction": ("", 1.0),
    "count": ("", 1.0),
}


@dataclass(frozen=True)
class Metric:
    """One metric, declared once.

    ``higher_is_worse`` is the direction (time, memory, money: more is worse);
    ``compared`` puts it in ``compare``'s verdicts by default; ``noise`` is the assumed
    run-to-run log standard deviation used until a case has history of its own; ``floor``
    the smallest ratio that counts as a change; ``more``/``less`` the words of an effect
    ("1.3x slower"); ``title`` the chart title and ``short`` its name in running text;
    ``shown`` makes it a column of ``daskbench show``; ``fallback`` is the metric judged in its
    place when a side has no values of this one (runs recorded before it existed);
    ``min_change`` the smallest difference, in the metric's unit, that counts as a change
    (a 2 MiB workload using 4 MiB is twice as much and does not matter). ``per_call`` marks a total
    over the measurement's window (seconds spent, tasks run, bytes moved, money): a measurement
    that makes several calls of the benchmark (`daskbench.lockstep.loops`) records it divided by its
    calls (rounded, for a whole number); without it a value stays as the window saw it: a peak or a
    level (memory, the CPU probe), or an event count (workers lost).
    """

    name: str
    unit: Unit
    kind: Kind
    title: str
    short: str
    more: str
    less: str
    higher_is_worse: bool = True
    compared: bool = False
    noise: float = 0.15
    floor: float = 1.10
    integer: bool = False
    non_negative: bool = True
    shown: bool = False
    fallback: str | None = None
    min_change: float = 0.0
    per_call: bool = False

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"Metric.name {self.name!r} must be lower_snake_case, at most 64 characters")
        if not self.floor >= 1.0:
            raise ValueError(f"Metric {self.name}: floor must be >= 1.0, got {self.floor}")
        if not 0.0 < self.noise < 5.0:
            raise ValueError(f"Metric {self.name}: noise is a log sd in (0, 5), got {self.noise}")

    def check(self, value: object) -> str | None:
        """Why ``value`` is not a valid value of this metric, or None when it is."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, got {value!r}"
        if self.integer and not isinstance(value, int):
            return f"must be a whole number, got {value!r}"
        if self.non_negative and not value >= 0:
            return f"must be >= 0, got {value!r}"
        return None

    def format(self, value: float | None) -> str:
        """The value with its unit, as people read it: ``12.3s``, ``1.5 GiB``, ``$0.012``, ``0.85``."""
        if value is None:
            return "-"
        if self.unit == "s":
            return f"{value:.3g}s" if value < 100 else f"{value:.0f}s"
        if self.unit == "bytes":
            return format_bytes(value)
        if self.unit == "usd":
            return format_usd(value)
        if self.unit == "fraction":
            return f"{value:.2f}"
        return f"{value:,.0f}" if self.integer else f"{value:.3g}"

    def effect(self, ratio: float) -> str:
        """A ratio (candidate / baseline) in words: ``1.31x slower``, ``2.00x less memory``."""
        if f"{ratio:.2f}" == "1.00" and f"{1 / ratio:.2f}" == "1.00":
            return "1.00x"
        return f"{ratio:.2f}x {self.more}" if ratio >= 1 else f"{1 / ratio:.2f}x {self.less}"

    def axis(self, value: float | None) -> float | None:
        """The value scaled for a chart axis (bytes in GiB)."""
        return None if value is None else value / AXIS[self.unit][1]

    @property
    def axis_label(self) -> str:
        symbol = AXIS[self.unit][0]
        return f"{self.title} ({symbol})" if symbol else self.title


_CATALOG: dict[str, Metric] = {}


def declare(metric: Metric) -> Metric:
    """Add ``metric`` to the catalog; declaring a name twice is an error (one declaration each)."""
    if metric.name in _CATALOG and _CATALOG[metric.name] != metric:
        raise ValueError(f"metric {metric.name!r} is already declared differently")
    _CATALOG[metric.name] = metric
    return metric


@contextmanager
def declared(metric: Metric) -> Iterator[Metric]:
    """``metric`` in the catalog for the duration of a ``with`` block (plugins' and tests' own metrics)."""
    declare(metric)
    try:
        yield metric
    finally:
        _CATALOG.pop(metric.name, None)


def get(name: str) -> Metric:
    """The declaration of ``name``; a KeyError naming the known metrics otherwise."""
    try:
        return _CATALOG[name]
    except KeyError:
        raise KeyError(f"no metric {name!r}; known: {', '.join(_CATALOG)}") from None


def is_declared(name: str) -> bool:
    return name in _CATALOG


def names() -> tuple[str, ...]:
    """Every declared metric, in declaration order."""
    return tuple(_CATALOG)


def compared() -> tuple[str, ...]:
    """The metrics ``compare`` judges by default, in declaration order (the order of tables and tabs)."""
    return tuple(name for name, metric in _CATALOG.items() if metric.compared)


def shown() -> tuple[Metric, ...]:
    """The metrics ``daskbench show`` has a column for."""
    return tuple(metric for metric in _CATALOG.values() if metric.shown)


def of_kind(kind: str) -> tuple[str, ...]:
    """The compared metrics of one kind (``runtime``, ``memory``, ``cost``, ``work``)."""
    return tuple(name for name in compared() if _CATALOG[name].kind == kind)


# -- the built-in metrics ---------------------------------------------------------------
#: Memory differences under this are not changes: a fraction of a percent of a worker's GiBs.
MIN_MEMORY_CHANGE = 16 * 2**20
# Time, memory and money are judged by default; the rest are recorded, shown and explain.
# Per call (a measurement of several calls divides them): the runtime and what is summed over the window (the
# costs, from the runtime; spills, tasks, transfers, transitions, CPU and blocked seconds). As the window saw
# them: memory peaks and levels, the longest queue, the per-task peak, the CPU probe, and workers lost (an event
# that makes the measurement's outcome, never a share of one call).
# fmt: off

declare(Metric("runtime_s", "s", "runtime", "Runtime", "runtime", "slower", "faster",
               compared=True, noise=0.15, shown=True, per_call=True))
# Memory is judged above the idle footprint (what the measured work added): the footprint
# itself depends on what else the session imported, so the raw peaks differ between suites.
declare(Metric("peak_memory_above_idle_bytes", "bytes", "memory", "Peak cluster memory above idle",
               "peak memory above idle", "more memory", "less memory", compared=True, noise=0.10, integer=True,
               shown=True, fallback="peak_memory_bytes", min_change=MIN_MEMORY_CHANGE))
declare(Metric("peak_worker_memory_above_idle_bytes", "bytes", "memory", "Peak memory of one worker above idle",
               "per-worker peak above idle", "more worker memory", "less worker memory", compared=True,
               noise=0.10, integer=True, shown=True, fallback="peak_worker_memory_bytes",
               min_change=MIN_MEMORY_CHANGE))
declare(Metric("cost_usd", "usd", "cost", "Cost", "cost", "dearer", "cheaper", compared=True, noise=0.15,
               shown=True, per_call=True))
# The client process (where graphs are built; a local cluster's scheduler too), judged above its RSS
# when the window opens, as workers are: the session's earlier imports and cases are not the work's.
declare(Metric("client_peak_memory_above_idle_bytes", "bytes", "memory", "Peak client memory above idle",
               "client peak above idle", "more client memory", "less client memory", compared=True, noise=0.10,
               integer=True, shown=True, min_change=MIN_MEMORY_CHANGE))
# Compared too: a build repeated in one process (a lockstep session's rounds) rises less above idle each time,
# the process keeping part of the last build's memory, while its peak stays put (dask/dask#12020's bisection).
declare(Metric("client_peak_memory_bytes", "bytes", "memory", "Peak client memory", "client peak",
               "more client memory", "less client memory", compared=True, noise=0.03, integer=True,
               min_change=MIN_MEMORY_CHANGE))
declare(Metric("peak_memory_bytes", "bytes", "memory", "Peak cluster memory", "peak memory",
               "more memory", "less memory", noise=0.03, integer=True, min_change=MIN_MEMORY_CHANGE))
declare(Metric("peak_worker_memory_bytes", "bytes", "memory", "Peak memory of one worker", "per-worker peak",
               "more worker memory", "less worker memory", noise=0.03, integer=True, shown=True,
               min_change=MIN_MEMORY_CHANGE))
declare(Metric("idle_worker_memory_bytes", "bytes", "memory", "Idle memory of one worker (window start)",
               "idle worker memory", "more idle memory", "less idle memory", noise=0.03, integer=True))
declare(Metric("mean_memory_bytes", "bytes", "memory", "Mean cluster memory", "mean memory",
               "more mean memory", "less mean memory", noise=0.03, integer=True))
declare(Metric("peak_worker_memory_fraction", "fraction", "memory", "Peak worker memory / limit",
               "peak/limit", "closer to the limit", "further from the limit", noise=0.03,
               shown=True))
declare(Metric("spilled_bytes", "bytes", "memory", "Spilled to disk", "spilled", "more spilled", "less spilled",
               integer=True, shown=True, per_call=True))
declare(Metric("spill_count", "count", "memory", "Spill events", "spills", "more spills", "fewer spills",
               integer=True, per_call=True))
declare(Metric("task_count", "count", "work", "Tasks", "tasks", "more tasks", "fewer tasks", integer=True,
               per_call=True))
declare(Metric("bytes_transferred", "bytes", "work", "Transferred between workers", "transferred",
               "more transferred", "less transferred", integer=True, per_call=True))
declare(Metric("worker_restarts", "count", "work", "Workers lost", "workers lost", "more workers lost",
               "fewer workers lost", integer=True))
declare(Metric("rightsized_cost_usd", "usd", "cost", "Cost on the right-sized machine", "right-sized cost",
               "dearer", "cheaper", per_call=True))
declare(Metric("scheduler_cpu_s", "s", "runtime", "Scheduler CPU (event-loop thread)", "scheduler CPU",
               "more scheduler CPU", "less scheduler CPU", per_call=True))
declare(Metric("scheduler_blocked_s", "s", "runtime", "Scheduler event loop blocked", "scheduler blocked",
               "more blocked", "less blocked", per_call=True))
declare(Metric("transition_count", "count", "work", "Scheduler transitions", "transitions",
               "more transitions", "fewer transitions", integer=True, per_call=True))
declare(Metric("max_tasks_queued", "count", "work", "Most tasks queued on the scheduler", "max queued",
               "longer queue", "shorter queue", integer=True))
declare(Metric("task_peak_bytes", "bytes", "memory", "Largest per-task peak memory", "per-task peak",
               "more per-task memory", "less per-task memory", noise=0.05, integer=True))
declare(Metric("task_cpu_s", "s", "runtime", "Task CPU time (thread-cpu of execution)", "task CPU",
               "more task CPU", "less task CPU", per_call=True))
declare(Metric("cpu_probe_s", "s", "runtime", "CPU speed probe (fixed work, lower is faster)", "speed probe",
               "slower machine", "faster machine", noise=0.10))
declare(Metric("runtime_norm_s", "s", "runtime", "Runtime at the nominal CPU speed", "speed-normalised runtime",
               "slower", "faster", per_call=True))
# fmt: on
