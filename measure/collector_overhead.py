"""The cost of daskbench's default collectors, as a lockstep A/B with rounds until decided (measure/collector-overhead).

Side A ("off"): restart the workers, time ``client.compute(x).result()``. Side B ("on"): the same
work through ``Measurer.measure`` with the default collectors (memory sampler, counters, time
breakdown, scheduler sampler), whose ``runtime_s`` is the same compute phase. Each round runs
both, ABBA, seconds apart on one cluster; the per-round ratios on/off are judged by daskbench's
sequential rule (`daskbench.judge.sequential`: repeated t intervals, alpha spent over looks),
and rounds are added until the interval of the overhead lies wholly below or wholly above the
target (2%), or ``--max-rounds`` is reached. With ``--evidence`` a third measurement per round
keeps the performance report and task stream and its cost is printed too.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import dask
import dask.array as da

from daskbench.clusters import open_cluster
from daskbench.judge.sequential import sequential_interval
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec
from daskbench.plugin.measuring import Measurer

TARGET = 1.02


#: The side of the square matrix (chunks of a sixth): 3000 took 8 s a round, too slow for the rounds a
#: sequential decision against 2% needs; 1500 took 2.0-3.5 s on 2026-11-23 (2 cores, other jobs running).
SIDE = 1500


def workload(side: int = SIDE) -> object:
    """``--work matmul``: a matrix product of 36 chunks (numpy releases the GIL)."""
    x = da.random.random((side, side), chunks=(side // 6, side // 6))
    return (x @ x.T).sum()


def burn_workload(side: int = SIDE) -> object:
    """``--work burn``: the calibration benchmark's graph, four tasks of a pure-Python loop holding the
    GIL (about 1 s in all at tiny), the worst case for the collectors' sampling threads; per-round
    log-ratio sd 0.110 against 0.126 for the matrix product, the same hour here (2026-11-23)."""
    from daskbench.calibrate.bench_calibration import TASKS, UNITS, burn

    return dask.delayed(sum)([dask.delayed(burn)(UNITS["tiny"]) for _ in range(TASKS)])


WORK = {"matmul": workload, "burn": burn_workload}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rounds", type=int, default=200)
    parser.add_argument("--evidence", action="store_true", help="also time a side that keeps evidence")
    parser.add_argument("--side", type=int, default=SIDE, help=f"side of the square matrix (default {SIDE})")
    parser.add_argument("--work", choices=sorted(WORK), default="matmul", help="the workload (default matmul)")
    args = parser.parse_args()
    opened = open_cluster(ClusterSpec("local", 1, 1, 2 * 2**30, 1.1))
    scratch = Path(tempfile.mkdtemp(prefix="daskbench-overhead-"))
    try:
        run(opened, scratch, args.max_rounds, args.evidence, lambda: WORK[args.work](args.side))
    finally:
        opened.close()


def run(opened: object, scratch: Path, max_rounds: int, evidence: bool, work: Callable[[], object]) -> None:
    client = opened.client  # type: ignore[attr-defined]
    plain = Measurer(client, "overhead", load_prices(), 600, 1)
    keeping = Measurer(client, "overhead", load_prices(), 600, 1, evidence_dir=scratch)
    case = Case("overhead", {}, opened.spec)  # type: ignore[attr-defined]

    def off() -> float:
        plain.restart()
        start = time.perf_counter()
        client.compute(work()).result()
        return time.perf_counter() - start

    def on(measurer: Measurer) -> tuple[float, float]:
        measurement, _ = measurer.measure(case, 0, work(), {}, {})
        assert measurement.outcome == "passed", measurement.message
        return float(measurement.runtime_s), float(measurement.extra.get("evidence_seconds", 0.0))

    off()  # warm-up, not counted
    logs: list[float] = []
    offs, evidence_ratios, evidence_costs = [], [], []
    interval = None
    for round_ in range(max_rounds):
        first, second = (off, lambda: on(plain)[0]) if round_ % 2 == 0 else (lambda: on(plain)[0], off)
        a, b = first(), second()
        t_off, t_on = (a, b) if round_ % 2 == 0 else (b, a)
        offs.append(t_off)
        logs.append(math.log(t_on / t_off))
        if evidence:
            t_ev, cost = on(keeping)
            evidence_ratios.append(t_ev / t_off)
            evidence_costs.append(cost)
        interval = sequential_interval(logs, max_rounds)
        shown = f", interval {interval[0]:.4f}-{interval[1]:.4f}" if interval else ""
        print(f"round {round_ + 1}: off {t_off:.3f} s, on {t_on:.3f} s{shown}", flush=True)
        if interval and (interval[1] < TARGET or interval[0] > TARGET):
            break
    report(logs, offs, interval, evidence_ratios, evidence_costs)


def report(logs: list[float], offs: list[float], interval: tuple[float, float] | None,
           evidence_ratios: list[float], evidence_costs: list[float]) -> None:  # fmt: skip
    effect = math.exp(statistics.fmean(logs))
    print(f"compute phase off (median): {statistics.median(offs):.3f} s over {len(logs)} rounds")
    print(f"per-round log ratio sd: {statistics.stdev(logs):.4f}" if len(logs) > 1 else "one round")
    if interval is None:
        print(f"collectors on/off: {effect:.4f} (too few rounds for an interval)")
        return
    verdict = "below" if interval[1] < TARGET else "above" if interval[0] > TARGET else "not decided against"
    print(
        f"collectors on/off: {effect:.4f} (overhead {100 * (effect - 1):+.2f}%), sequential 95% interval "
        f"{interval[0]:.4f}-{interval[1]:.4f}: {verdict} the {100 * (TARGET - 1):.0f}% target"
    )
    if evidence_ratios:
        print(
            f"--evidence on/off, median ratio: {statistics.median(evidence_ratios):.4f}; "
            f"keeping the files afterwards: median {statistics.median(evidence_costs):.3f} s per measurement"
        )


if __name__ == "__main__":
    main()
