"""How long a benchmark session takes, said before and while it runs (issues 32 and 42).

Before: the measurements planned and an estimate of their time on this machine now. The base figure is the
median seconds a measurement took in this store's newest finished runs of the same size on this kind of CPU,
else the documented seconds a measurement of that size; it is scaled by how much slower this machine runs now
than when that figure was measured (`slowdown`): on a machine busier than then, by the contention (the load
plus the session's own workers, over the cores; the load is the 1-minute average or the processes runnable now,
the larger), else by the CPU probe (`daskbench.metrics.probe`).
Under load 3-12 on 2 cores the probe alone read 2x where tiny sessions ran 3-7x longer: their restarts and
short tasks are many processes competing for the cores, and they slow as the square of the contention
(`LOAD_EXPONENT`; how far the estimates were off: docs/measured.md, measure/estimate-error).

While: each progress line's time left is the measurements left at a pace that starts at the estimate and moves
to the session's own as it measures (`time_left`), one-off input generation left out; so a slow first
measurement (a cluster start) does not dictate the rest, and an estimate far off is soon corrected.
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass
from datetime import datetime

from daskbench.errors import DaskbenchError
from daskbench.metrics.probe import load_average, probe_seconds, runnable_others
from daskbench.model import Run
from daskbench.store import Store, runstatus
from daskbench.text import plural

#: (Seconds one measurement took, its worker restart included; the CPU probe then): the default sweep of 42
#: measurements on this project's 2-core machine (docs/measured.md), workers forked from a preloading server:
#: tiny 27 s and small 690 s on 2026-11-26 (741 s on 2026-11-22 with spawned workers), the probe at 22 ms.
DOCUMENTED = {"tiny": (0.65, 0.022), "small": (16.4, 0.022)}
#: The load average and cores the documented figures were measured at: a quiet 2-core machine.
DOCUMENTED_LOAD, DOCUMENTED_CORES = 1.0, 2
#: How a size's sessions slow with contention: as its square at ``tiny``, whose measurements are worker restarts
#: and round trips between processes that each wait for a core (load 13 on 2 cores: contention 4.9x, measured
#: 5.2x more than that; at load 6 the issue's tiny sessions ran 6.4-7.6x longer, contention 2.7x); as itself else.
LOAD_EXPONENT = {"tiny": 2.0}
#: How many of the newest finished runs of the same size teach the estimate (of the newest `LOOKED_AT` runs).
HISTORY_RUNS, LOOKED_AT = 3, 20
#: How many measurements' worth the estimate weighs against the session's own pace in the time left.
PRIOR_MEASUREMENTS = 1
#: Probes read for the header (their median): one alone wanders by 13-22% on a shared machine.
PROBES = 3
#: The keys of a run's host record that say how fast the machine was when its session planned.
LOAD_KEY, PROBE_KEY = "load_1m", "probe_s"


@dataclass(frozen=True)
class Conditions:
    """How fast this machine runs a session at one moment: the CPU probe's seconds, the load (`current`) and
    the cores (None where not known: a figure measured before they were recorded)."""

    probe_s: float | None
    load: float | None
    cores: int | None


@dataclass(frozen=True)
class Estimate:
    """Seconds a measurement is expected to take here, and what says so (for the header)."""

    seconds_each: float
    basis: str


def current() -> Conditions:
    """This machine now: the median of `PROBES` CPU probes, its load, the logical cores. The load is the 1-minute
    average, or the processes runnable beside this one while the probes ran (their median) when more: load that
    began under a minute ago is in the average only in part (four busy loops started 20 s before a session read
    1.5-1.7 there on 2 cores, and the session took 1.7x its estimate)."""
    probes: list[float] = []
    runnable: list[int] = []
    for _ in range(PROBES):
        found = runnable_others()
        if found is not None:
            runnable.append(found)
        probes.append(probe_seconds())
    return Conditions(statistics.median(probes), busiest(load_average(), runnable), os.cpu_count())


def busiest(average: float | None, runnable: list[int]) -> float | None:
    """The load to plan with: the 1-minute ``average`` or the median of the ``runnable`` readings, the larger;
    either alone when the other is not known."""
    now = statistics.median(runnable) if runnable else None
    known = [value for value in (average, now) if value is not None]
    return max(known) if known else None


def recorded(now: Conditions) -> dict[str, float]:
    """What a run's host record keeps of ``now``, so later estimates can scale from it."""
    found = {LOAD_KEY: now.load, PROBE_KEY: now.probe_s}
    return {key: round(value, 4) for key, value in found.items() if value is not None}


def contention(load: float, cores: int, demand: float) -> float:
    """How many times over its cores the machine is asked to run: (the load average + the session's own busy
    processes) / cores, at least 1 (below that every process has a core)."""
    return max(1.0, (load + demand) / max(cores, 1))


def slowdown(now: Conditions, then: Conditions, demand: float, exponent: float = 1.0) -> tuple[float, str]:
    """How many times longer a measurement takes now than under ``then``, and why (for the header). On a
    machine busier than then, the contention's ratio to the ``exponent`` (`LOAD_EXPONENT`): the load average is
    a minute's sustained state, where the probe's 90 ms reading on a loaded machine says less, noisier.
    Otherwise the CPU probe's ratio: a slower or faster core. A reading either side lacks counts as no change."""
    if now.load is not None and then.load is not None and now.cores and then.cores:
        busier = contention(now.load, now.cores, demand) / contention(then.load, then.cores, demand)
        if busier > 1:
            power = f", {'squared' if exponent == 2 else f'to the power {exponent:g}'}" if exponent != 1 else ""
            return (
                busier**exponent,
                f"for load {now.load:.1f} on {plural(now.cores, 'core')} (was {then.load:.1f}{power})",
            )
    if not now.probe_s or not then.probe_s:
        return 1.0, "(this machine's speed unknown)"
    return now.probe_s / then.probe_s, f"by CPU probe {1000 * now.probe_s:.0f} ms (was {1000 * then.probe_s:.0f})"


def estimate(
    db: str, size: str, cpu_model: str, now: Conditions, demand: float, documented: bool = True
) -> Estimate | None:
    """From the store's history of this size on this CPU model, else the documented figure (the bundled suite's:
    not for a suite of its own, ``documented=False``); either scaled to this machine ``now`` (`slowdown`,
    ``demand``: the cores the session's largest cluster keeps busy). None for a size with neither (the
    progress lines still say the time left)."""
    found = _from_history(db, size, cpu_model)
    if found is not None:
        seconds, then, basis = found
    elif documented and size in DOCUMENTED:
        seconds, then = DOCUMENTED[size][0], Conditions(DOCUMENTED[size][1], DOCUMENTED_LOAD, DOCUMENTED_CORES)
        basis = f"{seconds:g} s a measurement at {size} as documented"
    else:
        return None
    factor, why = slowdown(now, then, demand, LOAD_EXPONENT.get(size, 1.0))
    return Estimate(seconds * factor, f"{basis}, x{factor:.1f} {why}")


def clock(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``: a time to plan with, not to the second."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def _from_history(db: str, size: str, cpu_model: str) -> tuple[float, Conditions, str] | None:
    """Seconds per measurement of the newest finished runs of ``size`` on ``cpu_model`` (their median), the
    conditions they ran under (the medians of what their host records say), and the header's words for it."""
    try:
        store = Store(db, create=False)
        runs = [
            run
            for run in store.runs(limit=LOOKED_AT)
            if run.ended_at and not runstatus.made_side_by_side(run) and run.host.get("cpu_model") == cpu_model
        ]
        finished = runstatus.statuses(store, runs)
        each: list[tuple[float, Run, float | None]] = []
        for run in (run for run in runs if finished[run.run_id] == runstatus.FINISHED):
            paced = _paced(store, run, size)
            if paced is not None:
                seconds, load = paced
                each.append((seconds, run, load))
            if len(each) == HISTORY_RUNS:
                break
    except DaskbenchError:  # no store yet (the first run), or one this session will report on itself
        return None
    if not each:
        return None
    middle = statistics.median_high([seconds for seconds, _, _ in each])
    shown = f"{middle:.1f}" if middle < 10 else f"{middle:.0f}"
    basis = f"{shown} s a measurement in the last {plural(len(each), 'run')} of {size} here"
    return middle, _conditions_of([(run, load) for _, run, load in each]), basis


def _conditions_of(runs: list[tuple[Run, float | None]]) -> Conditions:
    """The median load and probe the runs ran under, and their cores: a run's load is the load average its
    measurements read while it measured (the one its host record kept at the start, a minute's average, lags
    load that came with or just before the session: 1.7 where its measurements read 4-5), else that record."""

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    def recorded(run: Run, key: str) -> float | None:
        value = run.host.get(key)
        return float(value) if isinstance(value, (int, float)) else None

    loads = [load if load is not None else recorded(run, LOAD_KEY) for run, load in runs]
    probes = [recorded(run, PROBE_KEY) for run, _ in runs]
    cores = runs[0][0].host.get("cores")
    return Conditions(
        median([p for p in probes if p is not None]),
        median([load for load in loads if load is not None]),
        cores if isinstance(cores, int) else None,
    )


def _paced(store: Store, run: Run, size: str) -> tuple[float, float | None] | None:
    """The run's seconds per measurement if every case it measured was of ``size``, and the median load average
    its measurements read (None when none kept one)."""
    measured = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measured})
    if not measured or any(case.params.get("size") != size for case in cases.values()):
        return None
    try:
        took = (datetime.fromisoformat(str(run.ended_at)) - datetime.fromisoformat(run.started_at)).total_seconds()
    except ValueError:
        return None
    loads = [float(m.extra[LOAD_KEY]) for m in measured if isinstance(m.extra.get(LOAD_KEY), (int, float))]
    return (took / len(measured), statistics.median(loads) if loads else None) if took > 0 else None


def plan_line(planned: int, found: Estimate | None) -> str:
    """``daskbench: 42 measurements; about 8 min here (the last 3 runs of size tiny ...)``."""
    if found is None:
        return f"daskbench: {plural(planned, 'measurement')} planned; each progress line says the time left"
    total = clock(planned * found.seconds_each)
    return f"daskbench: {plural(planned, 'measurement')} planned, about {total} here ({found.basis})"


def time_left(done: int, planned: int, elapsed: float, each: float | None) -> float | None:
    """Seconds the rest of the session takes: the measurements left, each at a pace that starts at the
    estimate ``each`` and moves to this session's own (``elapsed`` over ``done``) as it measures: their
    geometric mean weighted `PRIOR_MEASUREMENTS` to ``done``, so an estimate 10x off is 3.2x off after one
    measurement and 1.3x after nine. Without an estimate, the session's own pace alone (None before the first)."""
    left = max(planned, done) - done
    own = elapsed / done if done and elapsed > 0 else None
    if own is None or not each:
        alone = own if own is not None else each
        return alone * left if alone else None
    weight = PRIOR_MEASUREMENTS / (PRIOR_MEASUREMENTS + done)
    return math.exp(weight * math.log(each) + (1 - weight) * math.log(own)) * left


def pace(done: int, planned: int, elapsed: float, each: float | None = None) -> str:
    """``3/42 measured, about 7 min left`` (`time_left`)."""
    left = time_left(done, planned, elapsed, each) if done < planned else None
    return f"{done}/{max(planned, done)} measured" + (f", about {clock(left)} left" if left is not None else "")
