"""How fast the machine is right now: a fixed CPU probe, taken on the client and on every worker.

The CPU speed of a shared or power-managed machine wanders (measured here: a 0.6 s pure-Python
loop varies by 13-22% from run to run, in slow phases lasting seconds), and every runtime carries
it. The probe is the same fixed work every time (``PROBE_UNITS`` iterations of a pure-Python
loop, about 30 ms on a 2026 server core); its seconds are a reading of the machine's speed.

`SpeedProbe` probes every worker (and the client) just before and just after the compute phase of a measurement,
keeps the readings, how many cores other work used meanwhile (``extra["others_cores"]``: the machine's busy CPU
seconds less those of this process and its descendants, the cluster's, over the window's wall time; a lockstep
comparison's verdict heeds it, `daskbench.judge.repeat.busy`) and the 1-minute load average after it
(``extra["load_1m"]``), and records ``cpu_probe_s`` (the median of those readings) and ``runtime_norm_s``, the
runtime scaled to the nominal probe time (``runtime x NOMINAL / probe``): a runtime as if the machine had run at its
nominal speed. It is a second runtime metric beside the raw one, never a replacement; ``daskbench calibrate`` shows
whether it is the quieter of the two on a given machine. A run's speed (the median probe of its measurements) is
what tells a slower machine from slower code.

Probing once, after the compute only, would save a tenth of a second of each measurement's fixed cost here
(issue 43); it was tried and not kept: the readings bracketing the compute are what the guard against a
machine that slowed during a case reads (`daskbench.judge.compare`: a time verdict the speed could explain is
set aside), and with one reading the loaded-machine quickstart test called a loaded case regressed (1.81x) in
the CI run that had it. Several calls per measurement (`daskbench.lockstep.loops`) amortise the probes instead.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from daskbench.metrics.collectors import Collected, Window

#: Loop iterations of one probe: about 30 ms on one core of a 2026 server.
PROBE_UNITS = 400_000
#: Seconds of one probe at the nominal speed runtime_norm_s is scaled to.
NOMINAL_S = 0.030


def probe_seconds(units: int = PROBE_UNITS) -> float:
    """Seconds this process takes for the fixed probe work (CPU-bound, holding the GIL)."""
    start = time.perf_counter()
    total = 0
    for i in range(units):
        total += i * i % 7
    return time.perf_counter() - start if total >= 0 else 0.0


def probe_cluster(client: Any) -> list[float]:
    """One probe on every worker and one on the client, in seconds."""
    on_workers = client.run(probe_seconds)
    return [float(seconds) for seconds in on_workers.values()] + [probe_seconds()]


def normalised(runtime: float | None, probe: float | None) -> float | None:
    """``runtime`` scaled to the nominal probe time; None without both."""
    if runtime is None or not probe:
        return None
    return runtime * NOMINAL_S / probe


class SpeedProbe:
    """Probes the cluster before and after the compute phase (a collector: start/stop), and
    scales the window's runtime to the nominal speed."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self.readings: list[float] = []
        self.cpu: CpuSnapshot | None = None

    def start(self, client: Any) -> None:
        self.readings = probe_cluster(client)
        self.cpu = cpu_snapshot()

    def stop(self, client: Any) -> Collected:
        others = others_cores(self.cpu, cpu_snapshot())
        self.readings += probe_cluster(client)
        probe = statistics.median(self.readings)
        found = {"cpu_probe_s": round(probe, 6), "runtime_norm_s": normalised(self.window.runtime_s or None, probe)}
        return Collected(
            metrics={name: value for name, value in found.items() if value is not None},
            extra={"cpu_probes_s": [round(r, 5) for r in self.readings], **load_read(),
                   **({"others_cores": others} if others is not None else {})},
        )  # fmt: skip


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds so far: every core's on anything but idling (``system``), and this process's and its
    descendants' (``own``: the session and the cluster it started), at ``wall`` (monotonic seconds)."""

    wall: float
    system: float
    own: float


def cpu_snapshot() -> CpuSnapshot | None:
    """Now's `CpuSnapshot`; None where the platform does not say."""
    try:
        times = psutil.cpu_times()
        spent = ("user", "nice", "system", "irq", "softirq", "steal")  # guest time is counted in user already
        system = sum(float(getattr(times, name, 0.0)) for name in spent)
        me = psutil.Process()
        own = sum(_cpu_seconds(process) for process in (me, *me.children(recursive=True)))
    except (psutil.Error, OSError):
        return None
    return CpuSnapshot(time.monotonic(), system, own)


def _cpu_seconds(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.Error:  # ended meanwhile
        return 0.0
    return float(times.user + times.system)


def others_cores(before: CpuSnapshot | None, after: CpuSnapshot | None) -> float | None:
    """How many cores other work used between two snapshots, on average (None without both, or no time between)."""
    if before is None or after is None or after.wall <= before.wall:
        return None
    others = (after.system - before.system) - max(after.own - before.own, 0.0)
    return round(max(others, 0.0) / (after.wall - before.wall), 2)


def load_average() -> float | None:
    """The machine's 1-minute load average now (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def runnable_others(stat: Path = Path("/proc/stat")) -> int | None:
    """How many processes besides this one are runnable now (Linux's ``procs_running``, which counts the
    reader): load that began a few seconds ago, which the 1-minute average shows only in part (None where the
    platform does not say)."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "procs_running" and value.strip().isdigit():
            return max(int(value) - 1, 0)
    return None


def load_read() -> dict[str, float]:
    """``{"load_1m": 3.42}``: `load_average` as a measurement keeps it; empty where the platform has none."""
    load = load_average()
    return {} if load is None else {"load_1m": round(load, 2)}
