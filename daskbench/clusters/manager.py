"""``--cluster module:ClassName``: any Dask cluster manager, built with --cluster-kwargs."""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

from daskbench.clusters.common import Backend, keep_restarted_workers, keywords_of
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec
from daskbench.text import one_line

if TYPE_CHECKING:
    from distributed import Client


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    """``ClassName(**kwargs)`` from ``module``, scaled to ``spec``'s size and waited for."""
    from distributed import Client

    keep_restarted_workers()
    cluster = cluster_class(spec.target)(**kwargs)
    cluster.scale(spec.n_workers)
    client = Client(cluster)
    client.wait_for_workers(spec.n_workers)
    return client, cluster


def cluster_class(target: str) -> type:
    """The class ``module:ClassName`` names, if it imports and is a cluster manager (it has ``scale``)."""
    module_name, _, class_name = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except Exception as exc:  # the module is the user's: whatever its import raises is one line
        raise DaskbenchError(
            f"--cluster {target}: cannot import {class_name} from {module_name} ({one_line(exc)})"
        ) from None
    if not inspect.isclass(found) or not callable(getattr(found, "scale", None)):
        what = "a class without scale()" if inspect.isclass(found) else f"a {type(found).__name__}"
        raise DaskbenchError(
            f"--cluster {target} is {what}, not a cluster manager class; e.g. distributed:LocalCluster"
        )
    return found


def check_class(target: str) -> None:
    """The preflight: ``target`` names a cluster manager class."""
    cluster_class(target)


def keywords(target: str) -> list[str] | None:
    return keywords_of(cluster_class(target))


CLASS_PATH = Backend(
    "class",
    r"[A-Za-z_][\w.]*:[A-Za-z_]\w*",
    "module:ClassName (any cluster manager)",
    start,
    preflight=check_class,
    keywords=keywords,
)
