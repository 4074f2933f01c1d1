"""``--cluster coiled``: a coiled.Cluster in the cloud; kwargs come from --cluster-kwargs YAML.

coiled is imported only here, so the package is needed only by those who use it. The
local dask config (worker-saturation included) is sent to the cluster by coiled. The
cluster gets an idle timeout (`IDLE_TIMEOUT`), so one the harness could not close (SIGKILL)
stops itself; Coiled cannot be reached from this project's CI, so tests check the keywords
passed to a stand-in ``coiled`` module.
"""

from __future__ import annotations

import os
from typing import Any

from daskbench.clusters.common import Backend
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec


def check_available(target: str = "coiled") -> None:
    """Fail early, before any cluster starts, if coiled or its credentials are missing.

    ``target`` (the ``--cluster`` value) carries nothing here; it is taken so this is
    the backend's ``preflight``.
    """
    import dask

    try:
        import coiled  # noqa: F401
    except ImportError:
        raise DaskbenchError("--cluster coiled needs the coiled package: pip install 'coiled>=1.0'") from None
    if not (dask.config.get("coiled.token", None) or os.environ.get("DASK_COILED__TOKEN")):
        raise DaskbenchError("no Coiled credentials found: run `coiled login` or set DASK_COILED__TOKEN")


#: A Coiled cluster left behind (the harness killed with SIGKILL, the CI job cancelled) shuts
#: itself down after this long without work, instead of billing until someone notices.
IDLE_TIMEOUT = "20 minutes"


def defaults(spec: ClusterSpec) -> dict[str, Any]:
    """coiled.Cluster keywords for ``spec`` (--cluster-kwargs override each): size, threads,
    memory per worker (so a --memory-per-worker sweep picks the instance), and an idle timeout."""
    options: dict[str, Any] = {
        "n_workers": spec.n_workers,
        "worker_options": {"nthreads": spec.threads_per_worker},
        "idle_timeout": IDLE_TIMEOUT,
    }
    if spec.memory_per_worker:
        options["worker_memory"] = f"{spec.memory_per_worker / 2**30:g}GiB"
        options["worker_options"]["memory_limit"] = spec.memory_per_worker
    return options


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """A coiled.Cluster of ``spec``'s size, waited for until every worker is up."""
    check_available()
    import coiled

    options = {**defaults(spec), **kwargs}
    cluster = coiled.Cluster(**options)
    client = cluster.get_client()
    client.wait_for_workers(spec.n_workers)
    return client, cluster


COILED = Backend("coiled", r"coiled", "coiled (a Coiled cloud cluster)", start, preflight=check_available)
