"""What a running scheduler (``--cluster tcp://...``) does behind a measurement's back: going silent for a while
(a network partition, a paused VM or process: no connection closes, so nothing fails), or running other versions
of dask than this client.

A partition of 30 s inside a task of 2 s was stored as a passed measurement of 30.2 s, a 15x "slowdown" `compare`
would judge (issue 45). `SchedulerWatch` asks the scheduler who it is every `INTERVAL_S` on a connection of its own
(its own thread and event loop: the client's loop, which the measurement times, is not touched) and keeps each
time an answer took longer than `SILENCE_S`; the session asks it whether the scheduler went silent during a
measurement (`silence_since`). `version_mismatch` names the versions the scheduler and its workers run when they
are not this client's, once, as the cluster opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distributed import Client

#: Seconds between two questions to the scheduler.
INTERVAL_S = 1.0
#: An answer slower than this is a silence: the scheduler did not answer (its event loop blocked for as long would
#: also count; distributed warns of such a loop from 3 s).
SILENCE_S = 5.0
#: The packages whose versions must be the client's on the scheduler and every worker for the figures to be this
#: environment's (distributed's own check warns of these too, in a table pytest shows at the end).
COMPARED = ("dask", "distributed")


class SchedulerWatch:
    """A thread asking the scheduler at ``address`` who it is, every `INTERVAL_S`; the silences it met."""

    def __init__(self, address: str, connection_args: Mapping[str, Any] | None = None) -> None:
        self.address, self.connection_args = address, dict(connection_args or {})
        self.silences: list[tuple[float, float]] = []  # (asked at, answered at), time.monotonic()
        self.asking: float | None = None  # when the question in flight was asked
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daskbench-scheduler-watch", daemon=True)

    def start(self) -> SchedulerWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop asking (a question in flight is left to end with the thread, which is a daemon)."""
        self._stop.set()

    def silence_since(self, since: float) -> float:
        """The longest the scheduler left a question unanswered among those answered after ``since`` (or still
        unanswered now), in seconds; 0.0 when every answer came within `SILENCE_S`."""
        now = time.monotonic()
        found = [answered - asked for asked, answered in self.silences if answered > since]
        asking = self.asking
        if asking is not None and now - asking > SILENCE_S:
            found.append(now - asking)
        return max(found, default=0.0)

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # a watch that fails watches nothing: the measurement goes on
            asyncio.run(self._ask())

    async def _ask(self) -> None:
        from distributed.core import rpc

        async with rpc(self.address, connection_args=self.connection_args) as scheduler:
            while not self._stop.is_set():
                self.asking = asked = time.monotonic()
                await scheduler.identity()
                self.asking, answered = None, time.monotonic()
                if answered - asked > SILENCE_S:
                    self.silences.append((asked, answered))
                await asyncio.sleep(INTERVAL_S)


def watch(client: Client) -> SchedulerWatch:
    """A started watch on ``client``'s scheduler, on a connection of its own (the client's security)."""
    address: Any = getattr(client.scheduler, "address", None) or client.scheduler_info().get("address", "")
    return SchedulerWatch(str(address), getattr(client, "connection_args", None)).start()


def version_mismatch(client: Client) -> str:
    """``dask 2023.1.0 on the scheduler and 2 workers, 2026.8.0 here`` for each of `COMPARED` whose version on the
    scheduler or a worker is not this client's; empty when they all match (or cannot be asked)."""
    try:
        found: Any = client.get_versions()
    except Exception:  # a scheduler that cannot say: nothing to name
        return ""
    here = found["client"]["packages"]
    elsewhere = {"the scheduler": [found["scheduler"]["packages"]]}
    elsewhere["workers"] = [info["packages"] for info in found["workers"].values() if isinstance(info, dict)]
    said = []
    for name in COMPARED:
        other = sorted({str(p.get(name)) for side in elsewhere.values() for p in side if p.get(name) != here.get(name)})
        if other:
            where = _where(name, here.get(name), elsewhere)
            said.append(f"{name} {', '.join(other)} on {where}, {here.get(name)} here")
    return "; ".join(said)


def _where(name: str, mine: str | None, elsewhere: Mapping[str, list[Mapping[str, Any]]]) -> str:
    """``the scheduler and 2 workers``: where ``name`` is not at ``mine``."""
    scheduler = any(p.get(name) != mine for p in elsewhere["the scheduler"])
    workers = sum(p.get(name) != mine for p in elsewhere["workers"])
    parts = (["the scheduler"] if scheduler else []) + (
        [f"{workers} worker{'s' if workers != 1 else ''}"] if workers else []
    )
    return " and ".join(parts)
