"""How long a benchmark session takes, said before and while it runs (issue 32).

Before: the measurements planned and an estimate of their time on this machine, from this store's own
history (the newest finished runs of the same size on this kind of CPU: their seconds per measurement,
worker restarts included), else from the documented seconds per measurement of that size scaled by the
CPU probe (`daskbench.metrics.probe`: this machine's speed against the nominal). While: each progress
line says how many are measured and the time left at this session's own pace so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from daskbench.errors import DaskbenchError
from daskbench.metrics.probe import probe_seconds
from daskbench.model import Run
from daskbench.store import Store, runstatus
from daskbench.text import plural

#: (Seconds one measurement took, its worker restart included; the CPU probe then): the default sweep of 42
#: measurements on this project's 2-core machine (docs/measured.md), workers forked from a preloading server:
#: tiny 27 s and small 690 s on 2026-11-26 (741 s on 2026-11-22 with spawned workers), the probe at 22 ms.
DOCUMENTED = {"tiny": (0.65, 0.022), "small": (16.4, 0.022)}
#: How many of the newest finished runs of the same size teach the estimate (of the newest `LOOKED_AT` runs).
HISTORY_RUNS, LOOKED_AT = 3, 20


@dataclass(frozen=True)
class Estimate:
    """Seconds a measurement is expected to take here, and what says so (for the header)."""

    seconds_each: float
    basis: str


def clock(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``: a time to plan with, not to the second."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def estimate(db: str, size: str, cpu_model: str) -> Estimate | None:
    """From the store's history of this size on this CPU model, else the documented figure scaled by the
    probe; None for a size with neither (the progress lines still say the time left)."""
    found = _from_history(db, size, cpu_model)
    if found is not None:
        return found
    documented = DOCUMENTED.get(size)
    if documented is None:
        return None
    seconds, probe_then = documented
    scale = probe_seconds() / probe_then  # this machine's speed now against the documenting machine's then
    return Estimate(seconds * scale, f"{seconds:g} s a measurement at {size} as documented, x{scale:.1f} by CPU probe")


def _from_history(db: str, size: str, cpu_model: str) -> Estimate | None:
    """Seconds per measurement of the newest finished runs of ``size`` on ``cpu_model`` (their median)."""
    try:
        store = Store(db, create=False)
        runs = [
            run
            for run in store.runs(limit=LOOKED_AT)
            if run.ended_at and not runstatus.made_side_by_side(run) and run.host.get("cpu_model") == cpu_model
        ]
        finished = runstatus.statuses(store, runs)
        each = []
        for run in (run for run in runs if finished[run.run_id] == runstatus.FINISHED):
            seconds = _seconds_each(store, run, size)
            if seconds is not None:
                each.append(seconds)
            if len(each) == HISTORY_RUNS:
                break
    except DaskbenchError:  # no store yet (the first run), or one this session will report on itself
        return None
    if not each:
        return None
    middle = sorted(each)[len(each) // 2]
    shown = f"{middle:.1f}" if middle < 10 else f"{middle:.0f}"
    return Estimate(middle, f"{shown} s a measurement in the last {plural(len(each), 'run')} of {size} here")


def _seconds_each(store: Store, run: Run, size: str) -> float | None:
    """The run's seconds per measurement if every case it measured was of ``size``."""
    measured = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measured})
    if not measured or any(case.params.get("size") != size for case in cases.values()):
        return None
    try:
        took = (datetime.fromisoformat(str(run.ended_at)) - datetime.fromisoformat(run.started_at)).total_seconds()
    except ValueError:
        return None
    return took / len(measured) if took > 0 else None


def plan_line(planned: int, found: Estimate | None) -> str:
    """``daskbench: 42 measurements; about 8 min here (the last 3 runs of size tiny ...)``."""
    if found is None:
        return f"daskbench: {plural(planned, 'measurement')} planned; each progress line says the time left"
    total = clock(planned * found.seconds_each)
    return f"daskbench: {plural(planned, 'measurement')} planned, about {total} here ({found.basis})"


def pace(done: int, planned: int, elapsed: float) -> str:
    """``3/42 measured, about 7 min left`` at the pace of this session so far."""
    planned = max(planned, done)
    left = f", about {clock(elapsed / done * (planned - done))} left" if done and planned > done else ""
    return f"{done}/{planned} measured{left}"
