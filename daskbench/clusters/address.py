"""``--cluster tcp://host:8786``: a scheduler someone else started (Kubernetes, HPC, gateway, ...).

The harness cannot restart this scheduler, so worker-saturation is set on it while it is
idle and read back; the cluster size is whatever workers it has.
"""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from daskbench.clusters.common import Backend, close_client, scheduler_lost, set_saturation
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec

if TYPE_CHECKING:
    from distributed import Client

#: The names of the plugins daskbench registers (``daskbench.metrics``) start with this;
#: `close` removes every such plugin from a scheduler the harness does not own.
HARNESS_PLUGIN_PREFIX = "daskbench-"


#: Seconds a running scheduler gets to answer who it is before the session starts.
ANSWER_S = 10.0


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail early, before any cluster work, when nothing listens at the scheduler address, or when what listens
    does not answer (a stopped or paused scheduler, one cut off by the network: its port still takes the
    connection, and distributed's client then waits with no end, its own timeout notwithstanding)."""
    parsed = urlsplit(address)
    if parsed.scheme not in ("tcp", "tls") or not parsed.hostname or not parsed.port:
        return
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=timeout).close()
    except OSError as exc:
        raise _unreachable(address, exc.strerror or type(exc).__name__) from None
    if parsed.scheme == "tcp" and not _answers(address, ANSWER_S):
        raise DaskbenchError(
            f"the scheduler at {address} takes connections but did not answer within {ANSWER_S:g} s (stopped, "
            "paused, or cut off by the network); check that it runs and answers (dask scheduler), or use --cluster "
            "local"
        )


def _answers(address: str, seconds: float) -> bool:
    """Whether the scheduler at ``address`` says who it is within ``seconds`` (True when asking fails otherwise:
    the client's start says that failure in its own words)."""
    import asyncio

    from distributed.core import rpc

    async def ask() -> None:
        async with rpc(address, timeout=seconds) as scheduler:
            await scheduler.identity()

    try:
        asyncio.run(asyncio.wait_for(ask(), seconds))
    except TimeoutError:
        return False
    except Exception:
        return True
    return True


def _unreachable(address: str, reason: str) -> DaskbenchError:
    """One message for the preflight and the connect, so the fix reads the same either way."""
    return DaskbenchError(
        f"cannot reach the scheduler at {address} ({reason}); "
        "check it is running (dask scheduler) and the address/port, or use --cluster local"
    )


def start(spec: ClusterSpec, kwargs: dict[str, Any]) -> tuple[Client, Any]:
    """A client of the running scheduler, its worker-saturation set; no cluster to close."""
    from distributed import Client

    timeout = kwargs.pop("timeout", 10)
    try:
        client = Client(spec.target, timeout=timeout, **kwargs)
    except (OSError, TimeoutError) as exc:
        raise _unreachable(spec.target, type(exc).__name__) from None
    try:
        before = client.run_on_scheduler(_current_saturation)
        set_saturation(client, spec.worker_saturation)  # refused while other clients' work runs
    except Exception:
        client.close()
        raise
    return client, _Borrowed(before)


class _Borrowed:
    """What to put back on a scheduler the harness does not own: its worker-saturation."""

    def __init__(self, saturation: float) -> None:
        self.saturation = saturation


def _current_saturation(dask_scheduler: Any) -> float:
    return float(dask_scheduler.WORKER_SATURATION)


def _harness_plugins(dask_scheduler: Any) -> list[tuple[str, bool]]:
    """(name, is a nanny plugin) of every plugin registered under the harness's prefix."""
    found = [(name, False) for name in dask_scheduler.worker_plugins]
    found += [(name, True) for name in dask_scheduler.nanny_plugins]
    return [(name, nanny) for name, nanny in found if name.startswith(HARNESS_PLUGIN_PREFIX)]


def close(client: Client, borrowed: Any) -> None:
    """Leave the shared scheduler as found: its worker-saturation restored and the harness's
    plugins removed (the memory sampler; a task-memory plugin a Ctrl-C left behind); then
    close the client (never the cluster, which is not ours). A scheduler that is gone has nothing
    to put back: the client is only closed, without waiting on connection attempts."""
    if not scheduler_lost(client):
        _put_back(client, borrowed)
    close_client(client)


def _put_back(client: Client, borrowed: Any) -> None:
    """Restore the scheduler's worker-saturation and remove the harness's plugins; never raises."""
    if isinstance(borrowed, _Borrowed):

        def _restore(dask_scheduler: Any, value: float = borrowed.saturation) -> None:
            dask_scheduler.WORKER_SATURATION = value

        with contextlib.suppress(Exception):
            client.run_on_scheduler(_restore)
    with contextlib.suppress(Exception):
        for name, nanny in client.run_on_scheduler(_harness_plugins):
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(name, nanny=nanny)


ADDRESS = Backend(
    "address",
    r"(tcp|tls|ws|wss|inproc|ucx)://\S+",
    "tcp://host:8786 (a running scheduler)",
    start,
    preflight=check_reachable,
    close=close,
    fixed_size=True,
)
