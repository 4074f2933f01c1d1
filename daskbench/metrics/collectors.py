"""Collectors: what measures metrics around the timed region of one measurement.

Every collector, built-in or registered, is an object with ``start(client)``, called just
before the compute phase, and ``stop(client)``, called right after it. ``stop`` returns a
`Collected` (declared metric values by name, ``extra`` entries, per-task memory records,
a memory timeline) or a plain ``{metric: value}`` mapping, read as ``Collected(metrics=...)``.
`daskbench.plugin.measuring.Measurer` starts them in order (counters, the registered ones, the time
breakdown, ``--task-memory``, the client's memory, the nanny memory sampler), stops them in reverse order and
merges what they return; a registered one is added here::

    from daskbench import catalog
    from daskbench.metrics import collectors

    catalog.declare(catalog.Metric("gc_seconds", "s", "runtime", "GC time", "GC time", "more GC", "less GC"))

    @collectors.register
    class GcTime:
        def start(self, client): ...
        def stop(self, client): return {"gc_seconds": 0.12}

A collector that raises, or returns an undeclared metric or a value its declaration
refuses, is reported under its class name in the measurement's
``extra["collector_errors"]``; it never loses the measurement. A metric the measured release
cannot give (an older distributed meters less) is left out and said in
``extra["not_available"]`` (name -> why, `not_available`), never recorded as 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from daskbench import catalog
from daskbench.model import Case, TaskMemory
from daskbench.text import one_line


@dataclass(frozen=True)
class Collected:
    """What one collector measured, or all of one measurement's collectors merged."""

    metrics: Mapping[str, float | int] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    tasks: tuple[TaskMemory, ...] = ()
    #: The cluster memory over the compute phase, ``(seconds since its start, bytes)`` pairs.
    timeline: tuple[tuple[float, int], ...] = ()


Stopped = Collected | Mapping[str, float | int | None]

#: The ``extra`` entry naming what this release could not measure: metric or extra name -> why.
NOT_AVAILABLE = "not_available"


def not_available(why: str, *names: str) -> dict[str, dict[str, str]]:
    """The ``extra`` of a collector that left ``names`` out because the measured release lacks them."""
    return {NOT_AVAILABLE: dict.fromkeys(names, why)}


class Collector(Protocol):
    """Measures metrics around one compute phase."""

    def start(self, client: Any) -> None: ...

    def stop(self, client: Any) -> Stopped: ...


@dataclass
class Window:
    """The facts of one measurement that a built-in collector reads at ``stop``.

    ``runtime_s`` (the compute phase) is set by the Measurer after the timed region,
    before any collector stops.
    """

    case: Case
    runtime_s: float = 0.0

    @property
    def thread_seconds(self) -> float:
        """The thread-seconds the cluster had during the compute phase (workers x threads x runtime)."""
        spec = self.case.cluster
        return spec.n_workers * spec.threads_per_worker * self.runtime_s


Factory = Callable[[], Collector]
_FACTORIES: list[Factory] = []


def register(factory: Factory) -> Factory:
    """Add a collector factory (a class, or any zero-argument callable); usable as a decorator."""
    if factory not in _FACTORIES:
        _FACTORIES.append(factory)
    return factory


@contextmanager
def registered(factory: Factory) -> Iterator[Factory]:
    """``factory`` registered for the duration of a ``with`` block."""
    register(factory)
    try:
        yield factory
    finally:
        _FACTORIES.remove(factory)


def create() -> list[Collector]:
    """A fresh collector from every registered factory, for one measurement."""
    return [factory() for factory in _FACTORIES]


# -- the loop ------------------------------------------------------------------------------


def start_all(client: Any, found: Iterable[Collector], errors: dict[str, str]) -> list[Collector]:
    """Start each collector in order; the ones that started. One that raises is left out, its error noted."""
    started = []
    for collector in found:
        try:
            collector.start(client)
        except Exception as exc:
            errors[type(collector).__name__] = one_line(exc)
        else:
            started.append(collector)
    return started


def stop_all(client: Any, started: Sequence[Collector], errors: dict[str, str]) -> list[Collected]:
    """Stop the collectors in reverse order; what each measured, in start order."""
    stopped = [_stop(client, collector, errors) for collector in reversed(started)]
    return stopped[::-1]


def _stop(client: Any, collector: Collector, errors: dict[str, str]) -> Collected:
    """What ``collector`` measured, invalid values left out; empty (error noted) if it raises."""
    name = type(collector).__name__
    try:
        found, metrics = _parts(collector.stop(client))
    except Exception as exc:
        errors[name] = one_line(exc)
        return Collected()
    return replace(
        found, metrics=_valid(metrics, name, errors), tasks=tuple(found.tasks), timeline=tuple(found.timeline)
    )


def _parts(value: Stopped) -> tuple[Collected, Mapping[str, Any]]:
    """A ``stop`` value as its `Collected` and its metrics unchecked; a plain mapping is all metrics."""
    if isinstance(value, Collected):
        return value, value.metrics
    return Collected(), dict(value)


def _valid(metrics: Mapping[str, Any], name: str, errors: dict[str, str]) -> dict[str, float | int]:
    """The valid metric values (None: not measured, left out); each invalid one noted under ``name``."""
    kept: dict[str, float | int] = {}
    for metric, value in metrics.items():
        problem = invalid(metric, value)
        if problem:
            errors[name] = problem
        elif value is not None:
            kept[metric] = value
    return kept


def invalid(metric: str, value: Any) -> str | None:
    """Why a collector's value cannot be stored (undeclared metric, wrong type or sign), or None."""
    if not catalog.is_declared(metric):
        return f"returned {metric!r}, which is not a declared metric (daskbench.catalog.declare)"
    if value is None:
        return None
    problem = catalog.get(metric).check(value)
    return f"{metric} {problem}" if problem else None


def merge(found: Iterable[Collected]) -> Collected:
    """One `Collected` from many: metrics and extra by name (a later one wins; what each could not
    measure, `NOT_AVAILABLE`, is gathered), every task record in order, the last non-empty timeline."""
    return functools.reduce(_merged, found, Collected())


def _merged(a: Collected, b: Collected) -> Collected:
    extra = {**a.extra, **b.extra}
    missing = {**a.extra.get(NOT_AVAILABLE, {}), **b.extra.get(NOT_AVAILABLE, {})}
    if missing:
        extra[NOT_AVAILABLE] = missing
    return Collected({**a.metrics, **b.metrics}, extra, a.tasks + b.tasks, b.timeline or a.timeline)


# -- several calls in one window -------------------------------------------------------------

#: ``extra`` entries that are totals over the window (seconds by activity, by task prefix, the thread-seconds
#: they add up to): per call, like the metrics `catalog.Metric.per_call` marks, so they add up to the runtime.
PER_CALL_EXTRA = ("time_breakdown", "time_breakdown_by_prefix", "thread_seconds", "task_seconds")


def per_call(found: Collected, calls: int) -> Collected:
    """What the collectors measured over a window of ``calls`` calls of the benchmark, per call: each metric
    the catalog marks ``per_call`` (a whole number rounded) and the `PER_CALL_EXTRA` divided by ``calls``;
    peaks, levels, the timeline and the per-task records stay as the window saw them."""
    if calls <= 1:
        return found
    metrics = {name: _divided(name, value, calls) for name, value in found.metrics.items()}
    extra = {key: _scaled(value, calls) if key in PER_CALL_EXTRA else value for key, value in found.extra.items()}
    return replace(found, metrics=metrics, extra=extra)


def _divided(name: str, value: float | int, calls: int) -> float | int:
    metric = catalog.get(name)
    if not metric.per_call:
        return value
    return round(value / calls) if metric.integer else value / calls


def _scaled(value: Any, calls: int) -> Any:
    """A number, or the numbers of a nested mapping, divided by ``calls`` (anything else as it is)."""
    if isinstance(value, Mapping):
        return {key: _scaled(inner, calls) for key, inner in value.items()}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / calls
    return value
