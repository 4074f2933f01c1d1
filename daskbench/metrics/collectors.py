"""Collectors: what measures metrics around the timed region of one measurement.

A collector is started on the open cluster just before the compute phase and stopped
right after it; ``stop`` returns declared metric values by name (`daskbench.catalog`).
The built-in memory sampler and counters are wired into `daskbench.measure.Measurer`
directly (the memory sampler also decides the outcome); anything else registers here::

    from daskbench import catalog
    from daskbench.metrics import collectors

    catalog.declare(catalog.Metric("gc_seconds", "s", "runtime", "GC time", "GC time", "more GC", "less GC"))

    @collectors.register
    class GcTime:
        def start(self, client): ...
        def stop(self, client): return {"gc_seconds": 0.12}

A collector that raises is reported in the measurement's ``extra["collector_errors"]``;
it never loses the measurement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol


class Collector(Protocol):
    """Measures metrics around one compute phase."""

    def start(self, client: Any) -> None: ...

    def stop(self, client: Any) -> Mapping[str, float | int | None]: ...


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
