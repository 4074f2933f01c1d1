"""What differs between the dask and distributed releases daskbench measures (2023.1.0 to today).

The measuring side (the plugin, the collectors, the clusters and the workloads) runs inside the
environment being measured, so it cannot assume today's APIs. Each difference is detected here, once,
by looking for the feature (never by comparing version numbers), and each function says from which
release the newer form exists. dask and distributed are imported inside the functions: this module
stays cheap to import and below every layer that needs it.
"""

from __future__ import annotations

from typing import Any

#: Why a metric is missing on a distributed without fine performance metrics (``extra["not_available"]``).
NO_FINE_METRICS = "this distributed meters no task execution (fine performance metrics arrived in 2023.3.2)"


def register_plugin(client: Any, plugin: Any, name: str | None = None) -> None:
    """Register a worker or nanny plugin: ``Client.register_plugin`` (distributed >= 2023.9.2), else
    ``register_worker_plugin(..., nanny=...)`` (the only form before it; gone from today's)."""
    keywords = {} if name is None else {"name": name}
    if hasattr(client, "register_plugin"):
        client.register_plugin(plugin, **keywords)
        return
    from distributed.diagnostics.plugin import NannyPlugin

    client.register_worker_plugin(plugin, nanny=isinstance(plugin, NannyPlugin), **keywords)


def fine_metrics() -> bool:
    """Whether this process's distributed meters task execution by activity (``context_meter``,
    distributed >= 2023.3.2): the time breakdown and ``task_cpu_s`` need it. Run it on a worker."""
    import distributed.metrics

    return hasattr(distributed.metrics, "context_meter")


def uniform(shape: tuple[int, ...], chunks: Any, seed: int) -> Any:
    """Seeded uniform numbers in [0, 1) as a lazy dask array: ``da.random.default_rng`` (dask >= 2023.3.0),
    before it ``da.random.RandomState`` (the same distribution and graph, other numbers)."""
    import dask.array as da

    make = getattr(da.random, "default_rng", None)
    if make is not None:
        return make(seed).random(shape, chunks=chunks)
    return da.random.RandomState(seed).random_sample(shape, chunks=chunks)


def merge_shuffle_keyword(frame: Any) -> str:
    """The keyword that names a merge's shuffle method: ``shuffle_method`` (dask >= 2024.1 and dask-expr),
    ``shuffle`` in the legacy ``dask.dataframe`` before it."""
    import inspect

    params = inspect.signature(type(frame).merge).parameters
    return "shuffle" if "shuffle" in params and "shuffle_method" not in params else "shuffle_method"


def task_prefix(task: Any, key: Any) -> str:
    """A worker task's prefix: its ``TaskState.prefix`` (distributed >= 2023.2), else read off its key."""
    prefix = getattr(task, "prefix", None)
    if prefix:
        return str(prefix)
    from dask.utils import key_split

    return str(key_split(key))
