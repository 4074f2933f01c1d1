"""Interleaved with/without ``--task-memory`` benchmark (run by measure/task-memory-overhead).

Both sides go through ``Measurer.measure`` (restart, default collectors), one with
``task_memory=True``; ``runtime_s`` is the compute phase of each. Rounds alternate ABBA so
drift hits both sides alike; the printed figure is the median of the per-round ratios.
The workload has many short tasks (a chunked matrix product), the worst case for a
per-task hook. Installing the plugin and gathering its figures happen outside the timed
phase; their cost is printed apart (whole ``measure`` call, with minus without).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import dask.array as da

from daskbench.clusters import open_cluster
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec
from daskbench.plugin.measuring import Measurer


def workload() -> object:
    x = da.random.random((2000, 2000), chunks=(200, 200))
    return (x @ x.T).sum()


def _timed(measurer: Measurer, case: Case) -> tuple[float, float, int]:
    """(compute phase, whole measure call, tasks seen by task memory) of one measurement."""
    start = time.perf_counter()
    measurement, _ = measurer.measure(case, 0, workload(), {}, {})
    wall = time.perf_counter() - start
    assert measurement.outcome == "passed", measurement.message
    assert "collector_errors" not in measurement.extra, measurement.extra
    return float(measurement.runtime_s), wall, sum(t.tasks for t in measurement.tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore", da.PerformanceWarning)  # the product rechunks; it is the same on both sides
    opened = open_cluster(ClusterSpec("local", 1, 1, 2 * 2**30, 1.1))
    try:
        off = Measurer(opened.client, "overhead", load_prices(), 600, 1)
        on = Measurer(opened.client, "overhead", load_prices(), 600, 1, task_memory=True)
        case = Case("task_memory_overhead", {}, opened.spec)
        _timed(off, case)  # warm-up, not counted
        ratios, offs, extra_wall, tasks = [], [], [], 0
        for round_ in range(args.rounds):
            sides = (off, on) if round_ % 2 == 0 else (on, off)
            found = {id(side): _timed(side, case) for side in sides}
            (t_off, w_off, _), (t_on, w_on, tasks) = found[id(off)], found[id(on)]
            offs.append(t_off)
            ratios.append(t_on / t_off)
            extra_wall.append(w_on - w_off - (t_on - t_off))
            print(f"round {round_ + 1}/{args.rounds}: without {t_off:.3f} s, with {t_on:.3f} s", flush=True)
        q = statistics.quantiles(ratios, n=4)
        median = statistics.median(ratios)
        print(f"compute phase without (median): {statistics.median(offs):.3f} s, {tasks} tasks, {args.rounds} rounds")
        print(f"--task-memory with/without, median ratio: {median:.4f} "
              f"(quartiles {q[0]:.4f}..{q[2]:.4f}; overhead {100 * (median - 1):+.2f}%)")  # fmt: skip
        print(f"install + gather outside the timed phase: median {statistics.median(extra_wall):.3f} s per measurement")
    finally:
        opened.close()


if __name__ == "__main__":
    main()
