"""``--cluster local``: a LocalCluster of worker processes (each with a nanny)."""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client, LocalCluster

from daskbench.clusters import default_memory_per_worker
from daskbench.model import ClusterSpec


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
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
