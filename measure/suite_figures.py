"""What measure/suite-figures prints from its store: per run, the measurements and the range of compute
time and memory; with two runs, the run-to-run spread of each memory metric per case."""

from __future__ import annotations

import math
import statistics
import sys

from daskbench.model import Measurement
from daskbench.store import Store

MIB = 2**20
FIGURES = (("runtime_s", "s", 1), ("peak_worker_memory_bytes", "MiB", MIB), ("idle_worker_memory_bytes", "MiB", MIB),
           ("peak_worker_memory_above_idle_bytes", "MiB", MIB))  # fmt: skip


def ranges(passed: list[Measurement]) -> None:
    for name, unit, scale in FIGURES:
        values = [v / scale for m in passed if (v := m.metrics.get(name)) is not None]
        if values:
            print(f"  {name}: {min(values):.3g}-{max(values):.3g} {unit} (median {statistics.median(values):.3g})")


def spread(first: list[Measurement], second: list[Measurement]) -> None:
    """Per memory metric: the log-ratio sd between the two runs' values of each case, and the largest gap."""
    pairs = {m.fingerprint: m for m in first}
    print("run to run, per case (both runs of one case):")
    for name, _, _ in FIGURES[1:]:
        found = [(a, b) for m in second if (a := pairs[m.fingerprint].metrics.get(name)) and (b := m.metrics.get(name))]
        if len(found) > 1:
            logs = [math.log(b / a) for a, b in found]
            gap = max(abs(b - a) for a, b in found) / MIB
            print(
                f"  {name}: log-ratio sd {statistics.pstdev(logs):.3f}, largest gap {gap:.1f} MiB, {len(found)} cases"
            )


def main(url: str) -> None:
    store = Store(url)
    runs = sorted(store.runs(), key=lambda run: run.started_at)
    found = [[m for m in store.measurements([run.run_id]) if m.ok] for run in runs]
    for run, passed in zip(runs, found, strict=True):
        print(f"{run.label}: {len(store.measurements([run.run_id]))} measurements, {len(passed)} passed")
        ranges(passed)
    if len(found) == 2:
        spread(*found)


if __name__ == "__main__":
    main(sys.argv[1])
