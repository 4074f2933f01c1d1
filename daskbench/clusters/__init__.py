"""Open a Dask cluster from a spec and report the settings it actually runs with.

``--cluster`` values: ``local`` (LocalCluster of worker processes), ``tcp://host:port``
(or tls://, ws://: a running scheduler), ``coiled`` (coiled.Cluster, imported lazily), or
``module:ClassName`` (any cluster manager). worker-saturation is applied when the
scheduler starts (or, for a running scheduler, set while it is idle) and always read
back: the recorded value is what the scheduler uses, not what was asked for.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dask
import psutil
import yaml
from distributed import Client

from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec

SATURATION_KEY = "distributed.scheduler.worker-saturation"
_ADDRESS = re.compile(r"^(tcp|tls|ws|wss|inproc|ucx)://\S+$")
_CLASS_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def backend_of(cluster: str) -> str:
    """The backend kind of a ``--cluster`` value, or a one-line error naming the forms."""
    if cluster == "local":
        return "local"
    if cluster == "coiled":
        return "coiled"
    if _ADDRESS.match(cluster):
        return "address"
    if _CLASS_PATH.match(cluster):
        return "class"
    raise DaskbenchError(
        f"--cluster {cluster!r} is not a cluster spec; use local, tcp://host:8786, coiled or module:ClassName"
    )


def default_memory_per_worker(n_workers: int, threads_per_worker: int) -> int:
    """This machine's memory per core times threads, never more than an equal share per worker."""
    total = psutil.virtual_memory().total
    per_core = total * threads_per_worker // (psutil.cpu_count() or 1)
    step = 2**28  # round down to 256 MiB so the value (and the fingerprint) is stable
    return max(step, min(per_core, total // n_workers) // step * step)


def load_kwargs(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DaskbenchError(f"--cluster-kwargs {path}: cannot read YAML ({exc}); give a YAML mapping file") from None
    if not isinstance(data, dict):
        raise DaskbenchError(f"--cluster-kwargs {path}: expected a YAML mapping of keyword arguments")
    return data


@dataclass
class OpenCluster:
    """A started cluster: its client, the effective spec, and how long it took to start."""

    client: Client
    spec: ClusterSpec
    start_seconds: float
    cluster: Any = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


def open_cluster(requested: ClusterSpec, kwargs: dict[str, Any] | None = None) -> OpenCluster:
    """Start (or connect to) the cluster for ``requested``; the returned spec is read back."""
    start = time.perf_counter()
    if requested.backend == "address":
        from daskbench.clusters import address as backend
    elif requested.backend == "coiled":
        from daskbench.clusters import coiled as backend  # type: ignore[no-redef]
    elif requested.backend == "class":
        from daskbench.clusters import manager as backend  # type: ignore[no-redef]
    else:
        from daskbench.clusters import local as backend  # type: ignore[no-redef]
    with dask.config.set({SATURATION_KEY: _config_value(requested.worker_saturation)}):
        client, cluster = backend.start(requested, dict(kwargs or {}))
    try:
        spec = read_back(client, requested)
    except Exception:
        OpenCluster(client, requested, 0.0, cluster).close()
        raise
    return OpenCluster(client, spec, time.perf_counter() - start, cluster)


def _config_value(saturation: float) -> float | str:
    return "inf" if math.isinf(saturation) else saturation


def _scheduler_facts(dask_scheduler: Any) -> dict[str, Any]:
    workers = list(dask_scheduler.workers.values())
    return {
        "saturation": float(dask_scheduler.WORKER_SATURATION),
        "n_workers": len(workers),
        "threads": sorted({ws.nthreads for ws in workers}),
        "memory": sorted({int(ws.memory_limit or 0) for ws in workers}),
    }


def read_back(client: Client, requested: ClusterSpec) -> ClusterSpec:
    """The spec as the scheduler sees it: saturation, worker count, threads and memory."""
    facts = client.run_on_scheduler(_scheduler_facts)
    if facts["n_workers"] == 0:
        raise DaskbenchError(f"cluster {requested.target or requested.backend} has no workers; start some and retry")
    memory = facts["memory"][-1] or None
    return replace(
        requested,
        worker_saturation=facts["saturation"],
        n_workers=facts["n_workers"],
        threads_per_worker=facts["threads"][-1],
        memory_per_worker=memory,
    )


def set_saturation(client: Client, value: float) -> None:
    """Set worker-saturation on a running scheduler; refused unless it is idle."""

    def _set(dask_scheduler: Any, value: float = value) -> int:
        busy = sum(1 for ts in dask_scheduler.tasks.values() if ts.state in ("queued", "processing", "no-worker"))
        if not busy:
            dask_scheduler.WORKER_SATURATION = value
        return busy

    busy = client.run_on_scheduler(_set)
    if busy:
        raise DaskbenchError(
            f"the scheduler has {busy} tasks queued or running; worker-saturation can only be changed while it is idle"
        )
