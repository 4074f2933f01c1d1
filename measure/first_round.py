"""How far a lockstep case's first round, its loops' calibration, lies from the case's other rounds.

A lockstep case that computes for under a second is measured with one call a side in its first round, which
fixes its loops; its later rounds make several calls each (`daskbench.lockstep.loops`). For each case of each
recorded suite check given (a store kept by ``measure/verdict-cost --keep``, or any store of lockstep groups)
whose first round made one call and whose next made more, with at least 8 rounds: how far (absolute log ratio)
round 1, round 2 and the later rounds lie from the median of rounds 3 onwards, in units of those rounds' sd.
Rounds of one call among looped ones are what `daskbench.model.calibration_set_aside` sets aside.

Pure reading, seconds: ``measure/first-round STORE_URL...``.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from daskbench.errors import DaskbenchError
from daskbench.judge.compare import group_parts, lockstep_rounds
from daskbench.store import Store
from measure.verdict_cost import header

#: The fewest rounds a case needs to be read here: the median and spread of rounds 3 onwards need some.
MIN_ROUNDS = 8


def case_rounds(store: Store) -> list[tuple[list[float], list[int]]]:
    """Every lockstep case's runtime log ratios and calls, round by round over its group's parts, per group."""
    found = []
    groups = {run.tags["ab_group"] for run in store.runs() if run.tags.get("ab_mode") == "lockstep"}
    for group in sorted(groups):
        per: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
        for part in group_parts(store, group):
            for fp, (a_ms, b_ms) in part.items():
                per[fp] += lockstep_rounds(a_ms, b_ms, "runtime_s")
        for rounds in per.values():
            kept = [(a, b, calls) for a, b, calls in rounds if a > 0 and b > 0]
            found.append(([math.log(b / a) for a, b, _ in kept], [calls for *_, calls in kept]))
    return found


def distances(logs: Sequence[float]) -> tuple[float, float, float]:
    """Round 1's, round 2's and the later rounds' mean distance from the later rounds' median, in their sd."""
    later = logs[2:]
    middle, spread = statistics.median(later), statistics.stdev(later) or 1e-12
    return (
        abs(logs[0] - middle) / spread,
        abs(logs[1] - middle) / spread,
        statistics.fmean(abs(x - middle) for x in later) / spread,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="measure/first-round", description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", metavar="STORE_URL")
    args = parser.parse_args(argv)
    try:
        stores = {url: Store(url, create=False) for url in args.stores}
    except DaskbenchError as error:  # a store that is not one: its one line, no traceback
        raise SystemExit(f"first-round: {error}") from None
    header()
    every: list[tuple[float, float, float]] = []
    for url, store in stores.items():
        read = [
            distances(logs)
            for logs, calls in case_rounds(store)
            if len(logs) >= MIN_ROUNDS and calls[0] == 1 and calls[1] > 1
        ]
        every += read
        print(f"{url}: {_line(read)}")
    print(f"all: {_line(every)}")
    return 0


def _line(read: Sequence[tuple[float, float, float]]) -> str:
    if not read:
        return "no case whose first round made one call and its next more, with 8 rounds or more"
    first, second, later = (statistics.fmean(column) for column in zip(*read, strict=True))
    return (
        f"{len(read)} cases; distance from the median of rounds 3+, in their sd: round 1 {first:.2f}, "
        f"round 2 {second:.2f}, rounds 3+ {later:.2f} (round 1 {first / later:.1f}x as far)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
