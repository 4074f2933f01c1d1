"""Re-read a calibration group (measure/power): the same rounds judged with other floors, and the
noise of each runtime metric daskbench records, so a default can be chosen from measured data.

    python measure/power.py sqlite:///.../power.db GROUP [--floors 1.05,1.10]

Replaying a floor at least as high as the one the group was collected with is exact: such a floor
decides at the same look or earlier (an interval inside the narrower band is inside the wider one,
and a regression called with the lower floor is called or found unchanged with the higher one), so
its stopping point lies inside the rounds that were measured.

Only each comparison's first pair of sessions is replayed, judged as one pair alone would be (no repeat of
a change in fresh sessions, `daskbench.judge.repeat`): set beside calibrate's own table (which has the
repeats), the A/A rows show how many false alarms the repeats caught.

``--discard N`` drops each comparison's first N rounds of every arm before judging (warm-up
measurements discarded), and the warm-up table compares the A/A log ratios of the first rounds with the
rest: whether a first round is noisier than a later one, from rounds already measured.

The noise table lists, for the A/A arm (both sides the same work), the sd of the per-round log
ratio B/A of ``runtime_s`` (wall clock of the compute phase), ``runtime_norm_s`` (scaled by the
CPU speed probe) and ``task_cpu_s`` (the tasks' thread CPU): the metric with the smallest sd
detects a change in the fewest rounds.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Sequence

from daskbench.calibrate.bench_calibration import ARMS
from daskbench.calibrate.run import AA_ARM, comparison_groups
from daskbench.judge.compare import group_rounds
from daskbench.judge.sequential import MAX_ROUNDS, is_decided, looks, sequential_decision
from daskbench.model import Measurement
from daskbench.store import Store

METRICS = ("runtime_s", "runtime_norm_s", "task_cpu_s")


def pairs(store: Store, group: str, arm: str, metric: str, discard: int = 0) -> list[tuple[float, float]]:
    """The (A, B) values of one arm in one comparison, round by round (after the first ``discard``)."""
    cases = store.cases()
    sides = next(iter(group_rounds(store, group).values()))
    by_side: dict[str, dict[int, float]] = {}
    for side, run in sides.items():
        for m in store.measurements([run.run_id]):
            value = _value(m, metric)
            if cases[m.fingerprint].params.get("arm") == arm and value is not None:
                by_side.setdefault(side, {})[m.repeat] = value
    a, b = by_side.get("A", {}), by_side.get("B", {})
    return [(a[r], b[r]) for r in sorted(a.keys() & b.keys())][discard:]


def _value(m: Measurement, metric: str) -> float | None:
    value = m.metrics.get(metric) if m.ok else None
    return float(value) if value else None


def replay(rounds: Sequence[tuple[float, float]], floor: float, max_rounds: int) -> tuple[str, int]:
    """The verdict and rounds of the sequential rule with ``floor``, stopping at its first decided look."""
    decision = None
    for n in looks(max_rounds):
        if n > len(rounds):
            break
        decision = sequential_decision([a for a, _ in rounds[:n]], [b for _, b in rounds[:n]], floor, max_rounds)
        if is_decided(decision):
            return decision.verdict, n
    return (decision.verdict if decision else "inconclusive"), len(rounds)


def table(
    store: Store, groups: list[str], floor: float, metric: str, discard: int = 0, max_rounds: int = MAX_ROUNDS
) -> list[str]:
    dropped = f", first {discard} rounds discarded" if discard else ""
    lines = [
        f"floor {floor:.2f}, metric {metric}{dropped}, first pair of sessions alone: arm, called, median rounds, "
        "comparisons"
    ]
    for arm, planted in ARMS:
        found = [replay(pairs(store, g, arm, metric, discard), floor, max_rounds) for g in groups]
        found = [f for f in found if f[1] >= 1]
        if not found:
            continue
        hits = sum(v in ("regressed", "improved") if arm == AA_ARM else v == "regressed" for v, _ in found)
        rounds = statistics.median(n for _, n in found)
        lines.append(f"  {arm:6} {planted:.2f}x  {hits / len(found):4.0%}  {rounds:4g}  {len(found)}")
    return lines


def noise(store: Store, groups: list[str]) -> list[str]:
    lines = ["A/A arm, per-round log ratio B/A: metric, sd, rounds"]
    for metric in METRICS:
        logs = [math.log(b / a) for g in groups for a, b in pairs(store, g, AA_ARM, metric)]
        shown = f"{statistics.stdev(logs):.4f}" if len(logs) > 2 else "-"
        lines.append(f"  {metric:15} {shown}  {len(logs)}")
    return lines


def warm_up(store: Store, groups: list[str], first: int = 3) -> list[str]:
    """Per round number 1..``first`` and after: the A/A ``runtime_s`` log ratios' root mean square."""
    by_round: dict[str, list[float]] = {}
    for g in groups:
        for index, (a, b) in enumerate(pairs(store, g, AA_ARM, "runtime_s")):
            key = f"round {index + 1}" if index < first else f"rounds {first + 1}+"
            by_round.setdefault(key, []).append(math.log(b / a))
    lines = ["A/A arm, runtime_s log ratio B/A by round: rounds, root mean square, comparisons' values"]
    for key, logs in by_round.items():
        rms = math.sqrt(statistics.fmean(x * x for x in logs))
        lines.append(f"  {key:10} {rms:.4f}  {len(logs)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("group")
    parser.add_argument("--floors", default="1.05,1.10")
    parser.add_argument("--discard", type=int, default=0, help="drop each comparison's first N rounds")
    parser.add_argument("--max-rounds", type=int, default=MAX_ROUNDS, help="the plan the rounds were collected with")
    args = parser.parse_args()
    store = Store(args.db, create=False)
    groups = comparison_groups(store, args.group)
    print(f"{len(groups)} comparisons in group {args.group}")
    print("\n".join(noise(store, groups)))
    print("\n".join(warm_up(store, groups)))
    for metric in METRICS:
        for floor in (float(f) for f in args.floors.split(",")):
            print("\n".join(table(store, groups, floor, metric, args.discard, args.max_rounds)))


if __name__ == "__main__":
    main()
