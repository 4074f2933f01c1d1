"""``--cluster coiled``: a coiled.Cluster in the cloud; kwargs come from --cluster-kwargs YAML.

coiled is imported only here, so the package is needed only by those who use it. The
local dask config (worker-saturation included) is sent to the cluster by coiled.
"""

from __future__ import annotations

import os
from typing import Any

import dask

from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec


def check_available() -> None:
    """Fail early, before any cluster starts, if coiled or its credentials are missing."""
    try:
        import coiled  # noqa: F401
    except ImportError:
        raise DaskbenchError("--cluster coiled needs the coiled package: pip install 'daskbench[coiled]'") from None
    if not (dask.config.get("coiled.token", None) or os.environ.get("DASK_COILED__TOKEN")):
        raise DaskbenchError("no Coiled credentials found: run `coiled login` or set DASK_COILED__TOKEN")


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    check_available()
    import coiled

    options = {"n_workers": spec.n_workers, "worker_options": {"nthreads": spec.threads_per_worker}, **kwargs}
    cluster = coiled.Cluster(**options)
    client = cluster.get_client()
    client.wait_for_workers(spec.n_workers)
    return client, cluster
