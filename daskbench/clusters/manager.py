"""``--cluster module:ClassName``: any Dask cluster manager, built with --cluster-kwargs."""

from __future__ import annotations

import importlib
from typing import Any

from distributed import Client

from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
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
