"""``--cluster local``: a LocalCluster of worker processes (each with a nanny), forked from a server that has
imported the heavy libraries once (`daskbench.clusters.forkserver`) where distributed allows it."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from daskbench.clusters.common import (
    Backend,
    close_client,
    default_memory_per_worker,
    keep_restarted_workers,
    keywords_of,
)
from daskbench.model import ClusterSpec

if TYPE_CHECKING:
    from distributed import Client


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    """A LocalCluster of ``spec``'s size; ``kwargs`` override the defaults below."""
    import sys

    from distributed import Client, LocalCluster

    from daskbench.clusters.forkserver import METHOD_KEY, method, use_forkserver

    keep_restarted_workers()
    previous = method()
    forked = False
    if METHOD_KEY not in spec.config:  # a --config sweep of the method is the user's choice
        forked = use_forkserver(list(sys.modules)) == "forkserver"
    memory = spec.memory_per_worker or default_memory_per_worker(spec.n_workers, spec.threads_per_worker)
    options: dict[str, Any] = {
        "n_workers": spec.n_workers,
        "threads_per_worker": spec.threads_per_worker,
        "memory_limit": memory,
        "processes": True,
        "dashboard_address": ":0",  # the scheduler's HTTP server (health, metrics) on a free port
        "silence_logs": logging.ERROR,
    }
    if "dashboard_address" not in kwargs:  # no dashboard on it: importing bokeh for it took 1.2 s of each
        # session's start on a 2-core machine, for a page nobody opens in CI (docs/clusters.md)
        options["scheduler_kwargs"] = {"dashboard": False}
    if forked:
        options["worker_class"] = _nanny_handing_on_the_environment()
    cluster = LocalCluster(**{**options, **kwargs})
    _restore_on_close(cluster, previous)
    return Client(cluster), cluster


def _nanny_handing_on_the_environment() -> type:
    """A nanny that gives each worker it starts the variables this process set since the fork server started
    (a benchmark's ``monkeypatch.setenv``): a forked worker inherits the server's environment, not ours."""
    from distributed import Nanny

    from daskbench.clusters.forkserver import environ_changes

    class ForkedNanny(Nanny):  # type: ignore[misc]
        async def instantiate(self) -> Any:
            self.env.update(environ_changes())
            return await super().instantiate()

    return ForkedNanny


def _restore_on_close(cluster: Any, previous: str) -> None:
    """Give Dask's worker start method back its value when this cluster closes: the nannies read it at every
    worker (re)start, so it stays set while the cluster lives, but clusters the process starts after it
    (someone else's, in the same process) spawn their workers as they would have."""
    import dask

    from daskbench.clusters.forkserver import METHOD_KEY

    close = cluster.close

    def closed(*args: Any, **kwargs: Any) -> Any:
        try:
            return close(*args, **kwargs)
        finally:
            dask.config.set({METHOD_KEY: previous})

    cluster.close = closed


def keywords(target: str) -> list[str] | None:
    """What --cluster-kwargs may give: LocalCluster's keywords, and those it passes on to each nanny and worker."""
    from distributed import LocalCluster, Nanny, Worker
    from distributed.node import ServerNode

    return keywords_of(LocalCluster, Nanny, Worker, ServerNode)


#: Seconds a local cluster may take to close before the worker processes it started are killed: a worker that
#: no longer answered kept a bisection's orphaned session in ``Cluster.close`` for over an hour.
CLOSE_TIMEOUT_S = 60.0


def close(client: Client, cluster: Any, timeout: float = CLOSE_TIMEOUT_S) -> None:
    """Close the client, then the cluster within ``timeout`` seconds; when that runs out, the worker processes its
    nannies started (and what they started) are killed, so the session ends and leaves nothing running. Never
    raises."""
    import psutil

    close_client(client)
    started = [nanny.pid for nanny in getattr(cluster, "workers", {}).values() if getattr(nanny, "pid", None)]
    try:
        cluster.close(timeout=timeout)
        return
    except Exception:  # the close timed out (or failed): the workers it could not stop are stopped here
        pass
    for pid in started:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            for each in [*process.children(recursive=True), process]:
                with contextlib.suppress(psutil.Error):
                    each.kill()


LOCAL = Backend(
    "local",
    r"local",
    "local (worker processes on this machine)",
    start,
    close=close,
    records_target=False,
    keywords=keywords,
)
