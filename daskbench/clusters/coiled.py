"""``--cluster coiled``: a coiled.Cluster in the cloud; kwargs come from --cluster-kwargs YAML.

coiled is imported only here, so the package is needed only by those who use it. The
local dask config (worker-saturation included) is sent to the cluster by coiled.
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
        raise DaskbenchError("--cluster coiled needs the coiled package: pip install 'daskbench[coiled]'") from None
    if not (dask.config.get("coiled.token", None) or os.environ.get("DASK_COILED__TOKEN")):
        raise DaskbenchError("no Coiled credentials found: run `coiled login` or set DASK_COILED__TOKEN")


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """A coiled.Cluster of ``spec``'s size, waited for until every worker is up."""
    check_available()
    import coiled

    options = {"n_workers": spec.n_workers, "worker_options": {"nthreads": spec.threads_per_worker}, **kwargs}
    cluster = coiled.Cluster(**options)
    client = cluster.get_client()
    client.wait_for_workers(spec.n_workers)
    return client, cluster


COILED = Backend("coiled", r"coiled", "coiled (a Coiled cloud cluster)", start, preflight=check_available)
