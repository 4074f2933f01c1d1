"""``--cluster tcp://host:8786``: a scheduler someone else started (Kubernetes, HPC, gateway, ...).

The harness cannot restart this scheduler, so worker-saturation is set on it while it is
idle and read back; the cluster size is whatever workers it has.
"""

from __future__ import annotations

import math
import socket
from typing import Any
from urllib.parse import urlsplit

from distributed import Client

from daskbench.clusters import set_saturation
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail early, before any cluster work, when nothing listens at the scheduler address."""
    parsed = urlsplit(address)
    if parsed.scheme not in ("tcp", "tls") or not parsed.hostname or not parsed.port:
        return
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=timeout).close()
    except OSError as exc:
        raise DaskbenchError(
            f"cannot reach the scheduler at {address} ({exc.strerror or type(exc).__name__}); "
            "check it is running (dask scheduler) and the address/port, or use --cluster local"
        ) from None


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    timeout = kwargs.pop("timeout", 10)
    try:
        client = Client(spec.target, timeout=timeout, **kwargs)
    except (OSError, TimeoutError) as exc:
        raise DaskbenchError(
            f"cannot reach the scheduler at {spec.target} ({type(exc).__name__}); "
            "check it is running (dask scheduler) and the address/port, or use --cluster local"
        ) from None
    try:
        set_saturation(client, math.inf if math.isinf(spec.worker_saturation) else spec.worker_saturation)
    except Exception:
        client.close()
        raise
    return client, None
