"""What the lockstep rule catches at a given per-round noise: planted changes simulated through the real rule.

A noisy hour (the issue's A/A per-round sd of 16%) cannot be made on demand on a quiet machine: a load beside the
measurement makes it busy instead (`daskbench.judge.repeat.busy`), a different case. So this script asks the rule
itself. For each per-round sd (``--sd``), plan (``--max-rounds``) and planted factor, ``--comparisons`` simulated
lockstep comparisons of one case: each pair of sessions gives rounds whose log ratio B/A is normal around the
factor's log with that sd (plus a bias of the pair, normal with ``--bias-sd``; 0 by default, a quiet machine),
judged at every look (`daskbench.judge.sequential.looks`) by `daskbench.judge.repeat.judge` at floor ``--floor``,
as the lockstep controller does: a change within 1.20x of 1 is repeated by a fresh pair of sessions from its first
round, a larger one counts at once. Prints how often each factor was called changed (for 1.00x: false alarms), the
median rounds of both pairs, and the minutes at ``--round-s`` seconds a round (2.5 s: `measure/power`'s arms).

Pure simulation (seeded), a minute: ``measure/power-at-noise [--sd 0.16] [--max-rounds 30 60]``. Real rounds need
not be normal: read its rates as what the rule gives normal rounds, not as a measurement.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Sequence

import numpy as np

from daskbench.judge import repeat
from daskbench.judge.sequential import Question, looks
from measure.verdict_cost import header

CHANGED = ("regressed", "improved")


def comparison(
    rng: np.random.Generator, question: Question, factor: float, sd: float, bias_sd: float
) -> tuple[str, int]:
    """One simulated comparison: its verdict and the rounds both pairs of sessions measured."""
    plan = question.max_rounds

    def pair() -> list[float]:
        centre = math.log(factor) + (rng.normal(0.0, bias_sd) if bias_sd else 0.0)
        return [float(x) for x in np.exp(rng.normal(centre, sd, plan))]

    first, ones = pair(), [1.0] * plan
    for n in looks(plan):
        judged = repeat.judge(question, [(ones[:n], first[:n])])
        if judged.settled or judged.repeating:
            break
    if not judged.repeating:
        return (judged.decision.verdict if judged.settled else "inconclusive"), n
    again = pair()
    for m in looks(plan):
        judged = repeat.judge(question, [(ones[:n], first[:n]), (ones[:m], again[:m])])
        if judged.settled:
            break
    return (judged.decision.verdict if judged.settled else "inconclusive"), n + m


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="measure/power-at-noise", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sd", type=float, nargs="+", default=[0.16], help="per-round sd of the log ratio")
    parser.add_argument("--max-rounds", type=int, nargs="+", default=[30, 60], help="the plans compared")
    parser.add_argument("--factors", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.5])
    parser.add_argument("--floor", type=float, default=1.05)
    parser.add_argument("--bias-sd", type=float, default=0.0, help="sd of each pair of sessions' own bias")
    parser.add_argument("--comparisons", type=int, default=1000)
    parser.add_argument("--round-s", type=float, default=2.5, help="seconds a round takes")
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args(argv)
    if min(args.sd) <= 0 or min(args.max_rounds) < 1 or args.floor < 1.0 or args.comparisons < 1:
        raise SystemExit(
            "power-at-noise: --sd above 0, --max-rounds at least 1, --floor at least 1 and --comparisons at least 1"
        )
    header()
    rng = np.random.default_rng(args.seed)
    print(f"{args.comparisons} comparisons a row, floor {args.floor}, bias of a pair sd {args.bias_sd}, "
          f"{args.round_s} s a round; normal rounds (simulated)")  # fmt: skip
    print(f"{'sd':>5} {'plan':>5} {'factor':>7} {'called':>7} {'median rounds':>14} {'median min':>11}")
    for sd in args.sd:
        for plan in args.max_rounds:
            question = Question(args.floor, max_rounds=plan)
            for factor in args.factors:
                found = [comparison(rng, question, factor, sd, args.bias_sd) for _ in range(args.comparisons)]
                called = sum(verdict in CHANGED for verdict, _ in found) / len(found)
                rounds = statistics.median(r for _, r in found)
                print(f"{sd:>5.3g} {plan:>5} {factor:>6.2f}x {called:>7.1%} {rounds:>14g} "
                      f"{rounds * args.round_s / 60:>11.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
