"""What every cluster backend shares: the `Backend` declaration and the helpers backends use.

The backend modules import this module and `daskbench.clusters` imports the backends, so
this module imports no backend and nothing of ``daskbench.clusters``: the graph stays
acyclic. dask, distributed, psutil and yaml are imported inside the functions that use
them, so `daskbench.config` can read the registry (for ``--cluster``'s help) cheaply.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec
from daskbench.redact import redact_value
from daskbench.text import first_few, plural

if TYPE_CHECKING:
    from distributed import Client

SATURATION_KEY = "distributed.scheduler.worker-saturation"
#: A SpecCluster (LocalCluster, and most cluster managers) closes a worker for good when it has been
#: gone for ``lost-worker-timeout`` (15 s). The check is scheduled at every removal and reads the
#: scheduler's view then, so with a restart before every measurement a check from an earlier restart
#: can land while a later restart has the worker briefly away, and the nanny (or job) is closed: the
#: cluster is left with no workers. With restarts at a steady pace (one every 2.5 s: 15 s is 6 of
#: them) it happens within a few measurements. Our workers only go away because we restart them
#: (a worker truly gone still fails the restart's wait for it), so that clean-up is put off for the
#: clusters the harness starts in this process.
LOST_WORKER_TIMEOUT = {"distributed.deploy.lost-worker-timeout": "1 day"}


def no_preflight(target: str) -> None:
    """For backends with nothing to check before they start (their start fails clearly)."""


def any_keywords(target: str) -> list[str] | None:
    """For backends whose ``--cluster-kwargs`` are not checked ahead (None: any keyword)."""
    return None


def keep_restarted_workers() -> None:
    """Before the harness starts a cluster manager here: its restarted workers are not lost workers."""
    import dask

    dask.config.set(LOST_WORKER_TIMEOUT)


def close_client_and_cluster(client: Client, cluster: Any) -> None:
    """Close the client, then the cluster if the harness started one; closing never raises."""
    close_client(client)
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close()


@dataclass(frozen=True)
class Backend:
    """One kind of cluster ``--cluster`` can name; `daskbench.clusters.BACKENDS` lists them.

    ``pattern`` recognises a ``--cluster`` value (whole-value regex); ``form`` is the
    one phrase help and error text show; ``preflight(target)`` fails early with a
    `DaskbenchError` before any cluster starts; ``start(spec, kwargs)`` returns
    ``(client, cluster)`` (cluster None when the harness started none); ``close`` ends
    both. ``fixed_size``: the harness cannot choose the worker count (it is whatever the
    scheduler has), so only one count is requested. ``records_target``: whether the
    ``--cluster`` value is kept as the spec's ``target`` (it carries nothing for local).
    ``keywords(target)``: the ``--cluster-kwargs`` names its cluster takes (None: any), checked
    before it starts.
    """

    name: str
    pattern: str
    form: str
    start: Callable[[ClusterSpec, dict[str, Any]], tuple[Client, Any]]
    preflight: Callable[[str], None] = no_preflight
    close: Callable[[Client, Any], None] = close_client_and_cluster
    keywords: Callable[[str], list[str] | None] = any_keywords
    fixed_size: bool = False
    records_target: bool = True

    def matches(self, value: str) -> bool:
        """Whether the ``--cluster`` value names this backend."""
        return re.fullmatch(self.pattern, value) is not None


@dataclass
class OpenCluster:
    """A started cluster: its client, the effective spec, and how long it took to start."""

    client: Client
    spec: ClusterSpec
    start_seconds: float
    cluster: Any = None
    closer: Callable[[Client, Any], None] = close_client_and_cluster
    #: A running scheduler's (`watch`): the versions it and its workers run that are not this client's (empty when
    #: alike), and the watch on its silences.
    mismatch: str = ""
    watch: Any = None

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        self.closer(self.client, self.cluster)


#: Set by ``daskbench ab`` in lockstep: how many clusters share this machine at once (default 1).
MACHINE_SHARE_ENV = "DASKBENCH_MACHINE_SHARE"


def machine_share() -> int:
    """How many clusters share this machine's memory (``DASKBENCH_MACHINE_SHARE``; 1 unless set)."""
    text = os.environ.get(MACHINE_SHARE_ENV, "1")
    return int(text) if text.isdigit() and int(text) >= 1 else 1


def default_memory_per_worker(n_workers: int, threads_per_worker: int) -> int:
    """This machine's memory per core times threads, never more than an equal share per worker;
    divided by `machine_share` when several clusters run at once (lockstep ``daskbench ab``)."""
    import psutil

    total = psutil.virtual_memory().total // machine_share()
    per_core = total * threads_per_worker // (psutil.cpu_count() or 1)
    step = 2**28  # round down to 256 MiB so the value (and the fingerprint) is stable
    return max(step, min(per_core, total // n_workers) // step * step)


def load_kwargs(path: str | None) -> dict[str, Any]:
    """The ``--cluster-kwargs`` YAML mapping (``{}`` without a file); a one-line error otherwise."""
    if not path:
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise DaskbenchError(
            f"--cluster-kwargs {path}: cannot read it ({exc.strerror or exc}); give a YAML file"
        ) from None
    except yaml.YAMLError as exc:  # also !!python/... tags, which safe_load refuses
        reason = " ".join(str(exc).split())[:200]
        raise DaskbenchError(f"--cluster-kwargs {path}: not plain YAML ({reason}); give a YAML mapping file") from None
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise DaskbenchError(f"--cluster-kwargs {path}: expected a YAML mapping of keyword arguments (name: value)")
    return data


def check_kwargs(cluster: str, kwargs: dict[str, Any], keywords: Callable[[str], list[str] | None]) -> None:
    """Every ``--cluster-kwargs`` keyword is one the backend's cluster takes (``keywords(cluster)``, None:
    any), checked before it starts: a wrong one would only fail inside the worker processes."""
    accepted = keywords(cluster) if kwargs else None
    unknown = sorted(set(kwargs) - set(accepted)) if accepted is not None else []
    if accepted is not None and unknown:
        raise DaskbenchError(
            f"--cluster-kwargs: {cluster} does not take {first_few(unknown)}; it accepts {first_few(accepted, 6) or 'none'}"
        )


def keywords_of(*chain: Any) -> list[str] | None:
    """The keyword names a call of ``chain[0]`` takes, following its ``**kwargs`` into the next of ``chain``
    (``LocalCluster`` passes them to the nanny, which passes them to the worker...); None: any."""
    import inspect

    names: list[str] = []
    for target in chain:
        try:
            params = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            return None  # no signature to check against
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None


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


#: Prefixes of Dask config keys read by the scheduler, the workers or the nannies (not the client).
SERVER_PREFIXES = ("distributed.scheduler.", "distributed.worker.", "distributed.nanny.")


def typed_config(spec: ClusterSpec) -> dict[str, Any]:
    """The spec's swept Dask config (``--config``) as values: each text read as YAML (0.6, false, 64MiB)."""
    import yaml

    typed = {}
    for key, text in spec.config.items():
        try:
            typed[key] = yaml.safe_load(text)
        except yaml.YAMLError:
            typed[key] = text
    return typed


def _config_values(keys: list[str], dask_scheduler: Any = None, dask_worker: Any = None) -> dict[str, Any]:
    import dask

    return {key: dask.config.get(key, default=None) for key in keys}


def check_config_applied(client: Client, spec: ClusterSpec) -> None:
    """Read every swept key back where it is used (scheduler, each worker, this client) and
    fail with one line if any of them runs with another value than the sweep asked for."""
    wanted = typed_config(spec)
    if not wanted:
        return
    keys = list(wanted)
    seen = {"this client": _config_values(keys), "the scheduler": client.run_on_scheduler(_config_values, keys)}
    seen |= {f"worker {address}": values for address, values in client.run(_config_values, keys).items()}
    for where, values in seen.items():
        for key, value in values.items():
            if value != wanted[key] and _applies(key, where):
                raise DaskbenchError(
                    f"--config {key}={redact_value(spec.config[key], key)} did not take effect: {where} has "
                    f"{redact_value(value, key)!r}; the cluster may take its config from elsewhere "
                    "(its own config files or --cluster-kwargs)"
                )


def _applies(key: str, where: str) -> bool:
    """Scheduler keys matter on the scheduler, worker/nanny keys on workers, the rest on the client."""
    if key.startswith("distributed.scheduler."):
        return where == "the scheduler"
    if key.startswith(("distributed.worker.", "distributed.nanny.")):
        return where.startswith("worker ")
    return where == "this client"


#: Task states that mean a scheduler has work under way.
BUSY_STATES = ("queued", "processing", "no-worker")


def _busy(dask_scheduler: Any) -> int:
    return sum(1 for ts in dask_scheduler.tasks.values() if ts.state in BUSY_STATES)


def wait_until_idle(client: Client, seconds: float, poll: float = 0.5) -> int:
    """Wait up to ``seconds`` for a shared scheduler to have no work under way; returns the
    number of tasks still queued or running then (0: idle). Before a measurement nothing of
    ours runs, so every such task belongs to another client."""
    import time

    deadline = time.monotonic() + seconds
    while (busy := _busy_now(client)) and time.monotonic() < deadline:
        time.sleep(poll)
    return busy


def _busy_now(client: Client) -> int:
    """The shared scheduler's tasks under way; 0 once it is lost (the measurement that follows
    finds that and records it as ``cluster-lost``, instead of a traceback here)."""
    try:
        return 0 if scheduler_lost(client) else int(client.run_on_scheduler(_busy))
    except Exception as exc:
        if scheduler_lost(client, exc):
            return 0
        raise


#: Why a client cancels its futures when the connection to its scheduler breaks.
CONNECTION_LOST = "scheduler-connection-lost"
#: Client states once its scheduler is gone: reconnecting, or given up and closed.
LOST_STATES = ("connecting", "closing", "closed")


def scheduler_lost(client: Client, error: BaseException | None = None, grace: float = 2.0) -> bool:
    """Whether ``client`` has lost its scheduler (killed, unreachable), judged from ``error`` (a
    future cancelled for the lost connection, a closed comm) and the client's state. After a closed
    comm the client is given up to ``grace`` seconds to notice, so a race is not called a failure."""
    import time

    from distributed.comm import CommClosedError

    if getattr(error, "reason", None) == CONNECTION_LOST:
        return True
    deadline = time.monotonic() + (grace if isinstance(error, CommClosedError | ConnectionError) else 0.0)
    while client.status not in LOST_STATES and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.status in LOST_STATES


def close_client(client: Client) -> None:
    """Close ``client``; never raises. One that lost its scheduler is closed quietly: distributed would
    log its cancelled reconnection attempt as an error with a traceback."""
    import logging

    log = logging.getLogger("distributed.client")
    level = log.level
    if scheduler_lost(client):
        log.setLevel(logging.CRITICAL + 1)
    try:
        with contextlib.suppress(Exception):
            client.close()
    finally:
        log.setLevel(level)


def scheduler_address(client: Client) -> str:
    """The address of the client's scheduler, taken while it is connected (for the line that says it was lost)."""
    return str(getattr(getattr(client, "scheduler", None), "address", None) or "the scheduler's address")


def busy_message(target: str, busy: int, waited: float) -> str:
    """The one line for a shared scheduler busy with other clients' work."""
    after = f" after waiting {waited:g} s" if waited else ""
    return (
        f"the scheduler at {target} is running {plural(busy, 'task')} of other clients{after}; measuring now would "
        "measure their load and slow them: try again when it is idle, or wait for it with --wait-idle SECONDS"
    )


def set_saturation(client: Client, value: float) -> None:
    """Set worker-saturation on a running scheduler; refused unless it is idle."""

    def _set(dask_scheduler: Any, value: float = value) -> int:
        busy = _busy(dask_scheduler)
        if not busy or float(dask_scheduler.WORKER_SATURATION) == value:  # nothing to change
            dask_scheduler.WORKER_SATURATION = value
            return 0
        return busy

    busy = client.run_on_scheduler(_set)
    if busy:
        raise DaskbenchError(
            f"the scheduler has {busy} tasks queued or running; worker-saturation can only be changed while it is "
            "idle (ask for the value it runs with, or wait with --wait-idle)"
        )
