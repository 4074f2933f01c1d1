"""Interleaved on/off benchmark of daskbench's default collectors (run by ci/overhead).

Off: restart the workers, time ``client.compute(x).result()``. On: the same through
``Measurer.measure`` (memory sampler, counters, time breakdown, scheduler sampler), whose
``runtime_s`` is the same compute phase. Rounds alternate ABBA so drift hits both sides
alike; the printed figure is the median of the per-round on/off ratios. With ``--evidence``
a third side keeps the performance report and task stream and prints their cost too.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import dask.array as da

from daskbench.clusters import open_cluster
from daskbench.measure import Measurer
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec


def workload() -> object:
    x = da.random.random((3000, 3000), chunks=(300, 300))
    return (x @ x.T).sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--evidence", action="store_true", help="also time a side that keeps evidence")
    args = parser.parse_args()
    opened = open_cluster(ClusterSpec("local", 1, 1, 2 * 2**30, 1.1))
    scratch = Path(tempfile.mkdtemp(prefix="daskbench-overhead-"))
    try:
        plain = Measurer(opened.client, "overhead", load_prices(), 600, 1)
        keeping = Measurer(opened.client, "overhead", load_prices(), 600, 1, evidence_dir=scratch)
        case = Case("overhead", {}, opened.spec)

        def off() -> float:
            plain.restart()
            start = time.perf_counter()
            opened.client.compute(workload()).result()
            return time.perf_counter() - start

        def on(measurer: Measurer) -> tuple[float, float]:
            measurement, _ = measurer.measure(case, 0, workload(), {}, {})
            assert measurement.outcome == "passed", measurement.message
            return float(measurement.runtime_s), float(measurement.extra.get("evidence_seconds", 0.0))

        off()  # warm-up, not counted
        ratios, evidence_ratios, evidence_costs, offs = [], [], [], []
        for round_ in range(args.rounds):
            first, second = (off, lambda: on(plain)[0]) if round_ % 2 == 0 else (lambda: on(plain)[0], off)
            a, b = first(), second()
            t_off, t_on = (a, b) if round_ % 2 == 0 else (b, a)
            offs.append(t_off)
            ratios.append(t_on / t_off)
            if args.evidence:
                t_ev, cost = on(keeping)
                evidence_ratios.append(t_ev / t_off)
                evidence_costs.append(cost)
            print(f"round {round_ + 1}/{args.rounds}: off {t_off:.3f} s, on {t_on:.3f} s", flush=True)
        q = statistics.quantiles(ratios, n=4)
        print(f"compute phase off (median): {statistics.median(offs):.3f} s over {args.rounds} rounds")
        print(
            f"collectors on/off, median ratio: {statistics.median(ratios):.4f} "
            f"(quartiles {q[0]:.4f}..{q[2]:.4f}; overhead {100 * (statistics.median(ratios) - 1):+.2f}%)"
        )
        if args.evidence:
            print(
                f"--evidence on/off, median ratio: {statistics.median(evidence_ratios):.4f}; "
                f"keeping the files afterwards: median {statistics.median(evidence_costs):.3f} s per measurement"
            )
    finally:
        opened.close()


if __name__ == "__main__":
    main()
