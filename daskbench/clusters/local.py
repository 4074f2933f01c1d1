"""``--cluster local``: a LocalCluster of worker processes (each with a nanny), forked from a server that has
imported the heavy libraries once (`daskbench.clusters.forkserver`) where distributed allows it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from daskbench.clusters.common import Backend, default_memory_per_worker, keep_restarted_workers, keywords_of
from daskbench.model import ClusterSpec

if TYPE_CHECKING:
    from distributed import Client


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    """A LocalCluster of ``spec``'s size; ``kwargs`` override the defaults below."""
    import sys

    from distributed import Client, LocalCluster

    from daskbench.clusters.forkserver import METHOD_KEY, use_forkserver

    keep_restarted_workers()
    if METHOD_KEY not in spec.config:  # a --config sweep of the method is the user's choice
        use_forkserver(list(sys.modules))
    memory = spec.memory_per_worker or default_memory_per_worker(spec.n_workers, spec.threads_per_worker)
    options: dict[str, Any] = {
        "n_workers": spec.n_workers,
        "threads_per_worker": spec.threads_per_worker,
        "memory_limit": memory,
        "processes": True,
        "dashboard_address": ":0",
        "silence_logs": logging.ERROR,
    }
    cluster = LocalCluster(**{**options, **kwargs})
    return Client(cluster), cluster


def keywords(target: str) -> list[str] | None:
    """What --cluster-kwargs may give: LocalCluster's keywords, and those it passes on to each nanny and worker."""
    from distributed import LocalCluster, Nanny, Worker
    from distributed.node import ServerNode

    return keywords_of(LocalCluster, Nanny, Worker, ServerNode)


LOCAL = Backend(
    "local", r"local", "local (worker processes on this machine)", start, records_target=False, keywords=keywords
)
