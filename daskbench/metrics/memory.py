"""Per-worker process memory, sampled from each worker's nanny at a short interval.

Why the nanny: the scheduler's view (heartbeats, ~0.5-1 s apart) misses short spikes and
only shows the cluster sum; a sampler inside the worker competes for the worker's GIL
and dies with it. A thread in the nanny reads the worker process's RSS every
``interval`` seconds, keeps the high-water mark, survives the worker being killed for
memory, and notices the restart (a new pid) together with the last fraction of the
memory limit it saw, which is how an out-of-memory kill is told from other deaths.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

import psutil
from distributed.diagnostics.plugin import NannyPlugin

from daskbench.compat import register_plugin
from daskbench.metrics.collectors import Collected

#: `daskbench.clusters.address` removes the plugins named ``daskbench-...`` from a shared scheduler.
PLUGIN_NAME = "daskbench-memory"
#: A worker that disappeared after using this much of its limit is counted as killed for memory.
OOM_FRACTION = 0.9


class MemoryWatch(NannyPlugin):
    """Nanny plugin: samples the worker process RSS while a measurement window is open."""

    idempotent = True
    name = PLUGIN_NAME

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval

    def setup(self, nanny: Any) -> None:
        self.nanny = nanny
        self._lock = threading.Lock()
        self._active = False
        self._reset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="daskbench-memory", daemon=True)
        self._thread.start()

    def teardown(self, nanny: Any) -> None:
        self._stop.set()

    def _reset(self) -> None:
        self.high_water = 0
        self.samples: list[tuple[float, int]] = []
        self.deaths: list[dict[str, float]] = []
        self._pid: int | None = None
        self._proc: psutil.Process | None = None
        self._pid_high = 0  # high water of the current worker process only

    def start(self) -> None:
        with self._lock:
            self._reset()
            self.started_at = time.time()  # this machine's clock: the offset to the harness's t0
            self._active = True
        self.idle = self._sample()  # the footprint the window opens on: after restart and warm-up

    def stop(self) -> dict[str, Any]:
        with self._lock:
            self._active = False
            return {
                "high_water": self.high_water,
                "samples": list(self.samples),
                "deaths": list(self.deaths),
                "memory_limit": self._limit(),
                "started": getattr(self, "started_at", None),
                "idle": getattr(self, "idle", None),
            }

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if self._active:
                self._sample()

    def _sample(self) -> int | None:
        """Read the worker process's RSS into the window; returns it (None: no worker process)."""
        process = getattr(self.nanny, "process", None)
        pid = getattr(getattr(process, "process", None), "pid", None)
        if pid is None:
            return None
        try:
            rss = self._process(pid).memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        with self._lock:
            if self._active:
                self.high_water = max(self.high_water, rss)
                self.samples.append((time.time(), rss))
                self._pid_high = max(self._pid_high, rss)
        return int(rss)

    def _process(self, pid: int) -> psutil.Process:
        if pid != self._pid:
            if self._pid is not None:
                self._record_death()
            self._pid, self._proc = pid, psutil.Process(pid)
        assert self._proc is not None
        return self._proc

    def _limit(self) -> int:
        manager = getattr(self.nanny, "memory_manager", None)
        return int(getattr(manager, "memory_limit", None) or getattr(self.nanny, "memory_limit", None) or 0)

    def _record_death(self) -> None:
        # The high water of the dead process, not its last sample: RSS shrinks while it exits.
        limit = self._limit()
        fraction = self._pid_high / limit if limit else 0.0
        self.deaths.append({"time": time.time(), "peak_rss": self._pid_high, "fraction": fraction})
        self._pid_high = 0


def _start_on_nanny(dask_worker: Any) -> bool:
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return False
    plugin.start()
    return True


def _stop_on_nanny(dask_worker: Any) -> dict[str, Any] | None:
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    return plugin.stop() if plugin is not None else None


@dataclass(frozen=True)
class MemorySummary:
    peak_cluster: int
    mean_cluster: int
    peak_worker: int
    peak_worker_fraction: float | None
    timeline: tuple[tuple[float, int], ...]
    deaths: int
    oom_deaths: int
    idle: Idle | None = None


@dataclass(frozen=True)
class Idle:
    """The footprint each worker had when the window opened (after restart and warm-up),
    and the peaks above it: what the measured work itself added, whatever else the session
    imported (the idle footprint differs between suites; the peak above it does not)."""

    worker: int  # the largest worker's idle footprint
    above_cluster: int  # the cluster's peak minus the sum of the idle footprints
    above_worker: int  # the largest rise of one worker above its own idle footprint


def idle_of(reports: list[dict[str, Any]], peak_cluster: int) -> Idle | None:
    """None when a nanny could not read its worker's footprint at the window's start."""
    idle = [r.get("idle") for r in reports]
    if not reports or not all(idle):
        return None
    return Idle(
        worker=max(i for i in idle if i),
        above_cluster=max(0, peak_cluster - sum(i for i in idle if i)),
        above_worker=max(max(0, r["high_water"] - r["idle"]) for r in reports),
    )


class MemoryCollector:
    """Opens a sampling window on every nanny; ``stop`` returns the memory metrics, the
    timeline, and ``extra["oom_deaths"]`` (the restarts that were out-of-memory kills)."""

    def __init__(self, n_workers: int, bin_seconds: float = 0.05, max_points: int = 300) -> None:
        self.n_workers = n_workers
        self.bin_seconds = bin_seconds
        self.max_points = max_points

    def install(self, client: Any) -> None:
        """Register the nanny plugin (once per cluster; it survives worker restarts)."""
        register_plugin(client, MemoryWatch())

    def start(self, client: Any) -> None:
        self.t0 = time.time()
        started = client.run(_start_on_nanny, nanny=True)
        if not started or not all(started.values()):
            raise RuntimeError("daskbench memory sampler is not running on every nanny (workers need nannies)")

    def stop(self, client: Any) -> Collected:
        # A worker killed in the window is being restarted by its nanny; the nanny kept its
        # samples, but it is only reachable once its new worker has registered again.
        with contextlib.suppress(TimeoutError):
            client.wait_for_workers(self.n_workers, timeout=60)
        reports = [r for r in client.run(_stop_on_nanny, nanny=True).values() if r is not None]
        return collected(summarize(reports, self.t0, self.bin_seconds, self.max_points))


def collected(summary: MemorySummary) -> Collected:
    """The summary as metrics (worker deaths as ``worker_restarts``), ``oom_deaths`` and the timeline."""
    metrics = {
        "peak_memory_bytes": summary.peak_cluster,
        "mean_memory_bytes": summary.mean_cluster,
        "peak_worker_memory_bytes": summary.peak_worker,
        "peak_worker_memory_fraction": summary.peak_worker_fraction,
        "worker_restarts": summary.deaths,
    }
    if summary.idle is not None:
        metrics |= {
            "idle_worker_memory_bytes": summary.idle.worker,
            "peak_memory_above_idle_bytes": summary.idle.above_cluster,
            "peak_worker_memory_above_idle_bytes": summary.idle.above_worker,
        }
    return Collected(
        metrics={k: v for k, v in metrics.items() if v is not None},
        extra={"oom_deaths": summary.oom_deaths},
        timeline=summary.timeline,
    )


def summarize(reports: list[dict[str, Any]], t0: float, bin_seconds: float, max_points: int) -> MemorySummary:
    """Combine per-worker samples: per-worker high water, and the binned cluster sum over time.

    Sample times are each nanny's wall clock, which may be skewed against the harness's; each
    report is aligned by its own window start (``started``, taken when the window opened on
    that nanny, at nearly the same moment everywhere), so a skewed clock cannot stack one
    worker's peak onto another's.
    """
    binned = [_bin_max(r["samples"], r.get("started") or t0, bin_seconds) for r in reports]
    n_bins = max((len(b) for b in binned), default=0)
    filled = [_forward_fill(b, n_bins) for b in binned]
    total = [sum(column) for column in zip(*filled, strict=True)] if filled else []
    peak_worker, fraction = _peak_worker(reports)
    deaths = [d for r in reports for d in r["deaths"]]
    peak_cluster = max(total, default=0)
    return MemorySummary(
        peak_cluster=peak_cluster,
        mean_cluster=int(sum(total) / len(total)) if total else 0,
        peak_worker=peak_worker,
        peak_worker_fraction=fraction,
        timeline=_downsample(total, bin_seconds, max_points),
        deaths=len(deaths),
        oom_deaths=sum(1 for d in deaths if d["fraction"] >= OOM_FRACTION),
        idle=idle_of(reports, peak_cluster),
    )


def _bin_max(samples: list[tuple[float, int]], t0: float, bin_seconds: float) -> list[int | None]:
    bins: list[int | None] = []
    for t, rss in samples:
        index = max(0, int((t - t0) / bin_seconds))
        bins.extend([None] * (index + 1 - len(bins)))
        current = bins[index]
        bins[index] = rss if current is None else max(current, rss)
    return bins


def _forward_fill(bins: list[int | None], n_bins: int) -> list[int]:
    """Fill empty bins with the worker's last seen value, out to ``n_bins``."""
    filled, last = [], 0
    for i in range(n_bins):
        value = bins[i] if i < len(bins) else None
        last = last if value is None else value
        filled.append(last)
    return filled


def _peak_worker(reports: list[dict[str, Any]]) -> tuple[int, float | None]:
    if not reports:
        return 0, None
    best = max(reports, key=lambda r: r["high_water"])
    peak = best["high_water"]
    return peak, (peak / best["memory_limit"] if best["memory_limit"] else None)


def _downsample(total: list[int], bin_seconds: float, max_points: int) -> tuple[tuple[float, int], ...]:
    """At most ``max_points`` points; each keeps the maximum of the bins it covers."""
    step = max(1, -(-len(total) // max_points))
    return tuple((round(i * bin_seconds, 3), max(total[i : i + step])) for i in range(0, len(total), step))
