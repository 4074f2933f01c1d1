"""The memory of this process (the client) over one measurement: where a graph is built.

A benchmark's callable builds its graph here, in the client process (on a local cluster the
scheduler lives here too), so a release that builds a bigger graph, or builds it wastefully, shows
in this process and in no worker: dask/dask#12020, slicing with a boolean mask, took 2.9x the
client's memory from dask 2024.12.0. A thread reads this process's RSS every ``interval`` seconds
while the window is open and keeps the high-water mark; the metrics are that peak and the peak
above the RSS the window opened with (what the measured work added, whatever the session imported
or kept before). The young generations are collected when the window opens, so the recent garbage of a
previous repeat is neither counted nor freed in the middle of this one; not a full collection, which
takes 0.1-0.15 s in a session that has imported distributed, pandas and bokeh (every measurement paid it),
and which would not give the pages back to the system anyway (RSS rarely falls after a free).
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import psutil

#: Seconds between two readings: a graph build that matters takes seconds, and each reading
#: (one read of /proc) takes the GIL from the thread building the graph for some microseconds.
INTERVAL = 0.01


class ClientMemoryCollector:
    """Samples this process's RSS from ``start`` to ``stop``; ``stop`` returns
    ``client_peak_memory_bytes`` and ``client_peak_memory_above_idle_bytes``."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.process = psutil.Process()
        self.idle = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, client: Any) -> None:
        gc.collect(1)
        self.idle = self.peak = self._rss()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="daskbench-client-memory", daemon=True)
        self._thread.start()

    def stop(self, client: Any) -> dict[str, int]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return {
            "client_peak_memory_bytes": self.peak,
            "client_peak_memory_above_idle_bytes": max(0, self.peak - self.idle),
        }

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        self.peak = max(self.peak, self._rss())

    def _rss(self) -> int:
        return int(self.process.memory_info().rss)
