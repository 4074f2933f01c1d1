"""Open a Dask cluster from a spec and report the settings it actually runs with.

`BACKENDS` is THE list of cluster kinds ``--cluster`` can name, in match order; each
backend module declares its `Backend` once. ``local`` (LocalCluster of worker
processes), ``tcp://host:port`` (or tls://, ws://: a running scheduler), ``coiled``
(coiled.Cluster, imported lazily) or ``module:ClassName`` (any cluster manager).
worker-saturation is applied when the scheduler starts (or, for a running scheduler, set
while it is idle) and always read back: the recorded value is what the scheduler uses,
not what was asked for. Swept Dask config (``--config``) is set while the cluster starts
(the scheduler and the nannies' worker processes take it then) and read back where each
key is used; the session keeps it set on the client while the cluster's cases run.
Nothing heavy is imported here at module level, so `daskbench.config` can build
``--cluster``'s help from `BACKENDS`.

This module is the package's face: the rest of daskbench imports the names in ``__all__`` from
``daskbench.clusters`` (``forkserver`` as a namespace: ``forkserver.LIBRARIES``), never from its modules.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from daskbench.clusters import forkserver
from daskbench.clusters.address import ADDRESS
from daskbench.clusters.coiled import COILED
from daskbench.clusters.common import (
    MACHINE_SHARE_ENV,
    SATURATION_KEY,
    SERVER_PREFIXES,
    Backend,
    OpenCluster,
    busy_message,
    check_config_applied,
    check_kwargs,
    load_kwargs,
    machine_share,
    read_back,
    scheduler_address,
    scheduler_lost,
    typed_config,
    wait_until_idle,
)
from daskbench.clusters.local import LOCAL
from daskbench.clusters.manager import CLASS_PATH
from daskbench.clusters.watch import version_mismatch, watch
from daskbench.deadline import within
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec
from daskbench.text import inf_or_number

__all__ = [
    "BACKENDS",
    "MACHINE_SHARE_ENV",
    "SERVER_PREFIXES",
    "Backend",
    "OpenCluster",
    "backend_named",
    "backend_of",
    "busy_message",
    "check_config_applied",
    "check_kwargs",
    "forkserver",
    "forms",
    "load_kwargs",
    "machine_share",
    "open_cluster",
    "scheduler_address",
    "scheduler_lost",
    "typed_config",
    "wait_until_idle",
]

#: Every backend, in match order: the first whose pattern matches a ``--cluster`` value wins.
BACKENDS: tuple[Backend, ...] = (LOCAL, ADDRESS, COILED, CLASS_PATH)


def forms() -> str:
    """Every accepted ``--cluster`` form in one phrase, for help and error text."""
    phrases = [backend.form for backend in BACKENDS]
    return f"{', '.join(phrases[:-1])} or {phrases[-1]}"


def backend_of(cluster: str) -> str:
    """The backend name of a ``--cluster`` value, or a one-line error naming every form."""
    for backend in BACKENDS:
        if backend.matches(cluster):
            return backend.name
    raise DaskbenchError(f"--cluster {cluster!r} is not a cluster spec; use {forms()}")


def backend_named(name: str) -> Backend:
    """The registered backend called ``name`` (a `ClusterSpec.backend`)."""
    for backend in BACKENDS:
        if backend.name == name:
            return backend
    known = ", ".join(backend.name for backend in BACKENDS)
    raise DaskbenchError(f"cluster backend {name!r} is not registered; use one of {known}")


def open_cluster(
    requested: ClusterSpec, kwargs: dict[str, Any] | None = None, timeout: float | None = None
) -> OpenCluster:
    """Start (or connect to) the cluster for ``requested`` within ``timeout`` seconds (None: no
    limit); the returned spec is read back."""
    import dask
    import distributed  # noqa: F401  its config defaults loaded before a key under it is set, or the set's exit drops them

    backend = backend_named(requested.backend)
    start = time.perf_counter()
    with dask.config.set({**typed_config(requested), SATURATION_KEY: inf_or_number(requested.worker_saturation)}):
        begin = partial(backend.start, requested, dict(kwargs or {}))
        try:
            client, cluster = begin() if timeout is None else within(begin, timeout, "cluster start")
        except TimeoutError as exc:
            raise DaskbenchError(
                f"{exc}; check the cluster (--cluster {requested.target or requested.backend}) "
                "or raise --timeout (the limit is the larger of it and 600 s)"
            ) from None
    try:
        spec = read_back(client, requested)
        with dask.config.set(typed_config(requested)):  # the client side is set while the case runs
            check_config_applied(client, spec)
    except Exception:
        backend.close(client, cluster)
        raise
    if not backend.fixed_size:  # a cluster daskbench started runs this environment, and no network between
        return OpenCluster(client, spec, time.perf_counter() - start, cluster, backend.close)
    seconds = time.perf_counter() - start
    return OpenCluster(client, spec, seconds, cluster, backend.close, version_mismatch(client), watch(client))
