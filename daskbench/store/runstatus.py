"""What became of a run: running, finished, interrupted or crashed.

The session appends a ``running`` event when it inserts its run (detail: host name, pid
and the process's start time), and ``finished`` or ``interrupted`` when it ends
(`daskbench.store.Store.record_event`). A process killed outright (SIGKILL, power loss)
writes nothing more, so ``crashed`` is not stored but derived when read: the newest event
is ``running`` and that process is gone (same host: its pid is absent or belongs to a
younger process), or, seen from another host, nothing was heard from the run (no event,
no measurement: the heartbeat) for `STALE_AFTER`. Runs written before statuses existed
have no events: ``finished`` if their end was stamped, else judged by age the same way.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psutil

from daskbench.errors import DaskbenchError
from daskbench.model import Run
from daskbench.store.facade import Store
from daskbench.text import plural

RUNNING, FINISHED, INTERRUPTED, CRASHED = "running", "finished", "interrupted", "crashed"
#: A run cut short because its cluster (the scheduler) was lost: what was measured before is kept.
CLUSTER_LOST = "cluster-lost"
#: Statuses the session writes; the newest of them in a run's events decides its status.
WRITTEN = (RUNNING, FINISHED, INTERRUPTED, CRASHED, CLUSTER_LOST)
#: A running run not heard from (event or measurement) for this long, on another host, is crashed.
STALE_AFTER = timedelta(hours=12)


def running_detail() -> str:
    """The detail of a ``running`` event: which process to ask whether the run is still alive."""
    me = psutil.Process()
    return json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "pid_started": me.create_time()})


def statuses(store: Store, runs: Sequence[Run], now: datetime | None = None) -> dict[str, str]:
    """The status of each run, by run id (one query for events; one for the heartbeats of the runs
    whose events leave their status open: a finished run's measurements are not read)."""
    events = store.events([run.run_id for run in runs])
    heard = store.last_activity([run.run_id for run in runs if _open(run, events.get(run.run_id, []))])
    now = now or datetime.now(UTC)
    return {run.run_id: status_of(run, events.get(run.run_id, []), heard.get(run.run_id), now) for run in runs}


def _open(run: Run, events: Sequence[tuple[str, str, str]]) -> bool:
    """Whether `status_of` may need the run's heartbeat: its newest written event is ``running``, or it
    has none and no end."""
    written = [event for event in events if event[0] in WRITTEN]
    return written[-1][0] == RUNNING if written else not run.ended_at


def status_of(run: Run, events: Sequence[tuple[str, str, str]], last_measured: str | None, now: datetime) -> str:
    """One run's status from its events (oldest first), its newest measurement time and the clock."""
    written = [event for event in events if event[0] in WRITTEN]  # other features' events say nothing of it
    if not written:
        if run.ended_at:
            return FINISHED
        return CRASHED if _stale([run.started_at, last_measured], now) else RUNNING
    status, at, detail = written[-1]
    if status != RUNNING:
        return status
    alive = _process_alive(detail)
    if alive is not None:
        return RUNNING if alive else CRASHED
    return CRASHED if _stale([run.started_at, at, last_measured], now) else RUNNING


def _process_alive(detail: str) -> bool | None:
    """Whether the process named in a ``running`` event lives; None if it ran on another host."""
    try:
        facts: Mapping[str, Any] = json.loads(detail)
        host, pid, started = str(facts["host"]), int(facts["pid"]), float(facts["pid_started"])
    except (ValueError, KeyError, TypeError):
        return None
    if host != socket.gethostname():
        return None
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _stale(times: Sequence[str | None], now: datetime) -> bool:
    """Whether the newest of these ISO times is older than `STALE_AFTER` (unreadable ones ignored)."""
    parsed = []
    for text in times:
        try:
            when = datetime.fromisoformat(text) if text else None
        except ValueError:
            when = None
        if when is not None:
            parsed.append(when if when.tzinfo else when.replace(tzinfo=UTC))
    return not parsed or now - max(parsed) > STALE_AFTER


def describe(run: Run, status: str) -> str:
    """``run 1a2b3c4d (label) is crashed``, for notes about skipped or partial runs."""
    return f"run {run.run_id[:8]} ({run.label}) is {status}"


#: Tags of runs made by a comparison (``daskbench ab``, ``calibrate``, and ``bisect``, ``confirm``, ``pr``, whose
#: runs are lockstep groups): never a plain command's latest run, nor part of a case's history.
COMPARISON_TAGS = ("ab_group", "calibrate_group")


def made_side_by_side(run: Run) -> bool:
    """Whether ``run`` is one side of a comparison (other versions, a halved machine, a planted arm)."""
    return any(tag in run.tags for tag in COMPARISON_TAGS)


class NoFinishedRun(DaskbenchError):
    """The store has runs, but none that finished (the first run was interrupted, or is still going): the
    newest of them and its status, for each command to say what to do in its own words."""

    def __init__(self, store: Store, newest: Run, status: str) -> None:
        self.newest, self.status = newest, status
        super().__init__(
            f"no finished run in {store.display_url} (the newest, {describe(newest, status)}); name a run to use "
            f"it anyway: --candidate {newest.run_id[:8]}"
        )


def latest_finished(store: Store) -> tuple[Run, list[str]]:
    """The newest finished run that no comparison made, and a note for each newer run skipped
    because it is not finished (runs of ``daskbench ab``/``calibrate`` are skipped without a note:
    they are judged by ``compare --group GROUP``)."""
    everything = store.runs()
    if not everything:
        return store.latest_run(), []  # the store's own "no runs yet" error
    runs = [run for run in everything if not made_side_by_side(run)]
    if not runs:
        raise DaskbenchError(
            f"every run in {store.display_url} was made by daskbench ab or calibrate; judge a group with: "
            "daskbench compare --group GROUP, or name a run: daskbench compare --candidate <run-id>"
        )
    found = statuses(store, runs)
    for run in runs:
        if found[run.run_id] == FINISHED:
            newer = runs[: runs.index(run)]
            return run, [f"candidate: skipped the newer {describe(r, found[r.run_id])}" for r in newer]
    raise NoFinishedRun(store, runs[0], found[runs[0].run_id])


def finished_only(store: Store, runs: Sequence[Run], what: str) -> tuple[list[Run], list[str]]:
    """The finished ones of ``runs``, and a note naming how many ``what`` skipped and why."""
    found = statuses(store, runs)
    kept = [run for run in runs if found[run.run_id] == FINISHED]
    if len(kept) == len(runs):
        return kept, []
    counts: dict[str, int] = {}
    for run in runs:
        if found[run.run_id] != FINISHED:
            counts[found[run.run_id]] = counts.get(found[run.run_id], 0) + 1
    detail = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return kept, [f"{what} skips {plural(len(runs) - len(kept), 'unfinished run')} ({detail})"]


def partial_notes(store: Store, runs: Sequence[Run], role: str) -> list[str]:
    """A warning for each explicitly named run that did not finish: its results may be partial."""
    found = statuses(store, runs)
    return [
        f"warning: {role} {describe(run, found[run.run_id])}; its results may be partial"
        for run in runs
        if found[run.run_id] != FINISHED
    ]
