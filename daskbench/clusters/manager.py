"""``--cluster module:ClassName``: any Dask cluster manager, built with --cluster-kwargs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from daskbench.clusters.common import Backend
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec

if TYPE_CHECKING:
    from distributed import Client


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    """``ClassName(**kwargs)`` from ``module``, scaled to ``spec``'s size and waited for."""
    from distributed import Client

    module_name, _, class_name = spec.target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise DaskbenchError(
            f"--cluster {spec.target}: cannot import {class_name} from {module_name} ({exc})"
        ) from None
    cluster = cls(**kwargs)
    cluster.scale(spec.n_workers)
    client = Client(cluster)
    client.wait_for_workers(spec.n_workers)
    return client, cluster


CLASS_PATH = Backend("class", r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", "module:ClassName (any cluster manager)", start)
