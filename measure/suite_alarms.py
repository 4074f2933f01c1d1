"""False alarms counted per suite, replayed from recorded rounds (``measure/suite-alarms``; outside .ci/run).

A pull request check judges every case of a suite in every compared metric; what a person reading its comment
sees is whether *any* case was blamed. This script reads the stores of real suite checks (``daskbench pr`` or
``ab`` groups, each a store of its own or several groups in one) and says, for each:

1. **as measured**: the check's own verdicts (`compare_group`, the suite's family of false alarms as the check
   had it), leaving out the cases named with ``--planted`` (a planted slowdown is not a false alarm): how many
   cases were called changed (regressed or improved), how many stayed undecided;
2. **replayed**: ``--replays`` unchanged checks made from the same rounds. Each case and metric draws its rounds
   from its recorded rounds (each round's pair of values A and B, with replacement) and is judged by the real
   rule (`daskbench.judge.repeat.judge`, the check's floors, most rounds, repeat and family) at every look, as
   the lockstep does, until it is settled or its change waits for a repeat; a repeat draws a fresh pair's
   rounds the same way. Its verdict then passes the metric's smallest change that counts (memory: a change of
   less than 16 MiB is none), as `compare` applies it (the first version of this script left that out, and
   counted a tiny case's client memory, a few KiB above idle that swing by half, as undecided or changed). No
   budget: every case gets the rounds its plan allows, so a replay decides more than the budgeted check did.
   Two nulls:

   - ``centred``: each case's side B scaled so that its mean log ratio B/A is 0 (the case truly unchanged,
     with its measured spread and shape): what the rule promises to bound;
   - ``raw``: the ratios as measured. The cases were unchanged, so this is the same null with the bias the
     one recorded pair of sessions had, drawn again for the repeat: a repeat from the same sessions is what the
     rule is built to not trust, so this overstates false alarms (a worst case, not an estimate).

A replay's false alarm is any case called changed in any metric; the table prints how many replays had one
(the suite-level rate the comment states, at most 10%), and the undecided cases each left.

    measure/suite-alarms STORE_URL... [--planted WORKLOAD:SWEEP_ID] [--replays 200] [--seed 43]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from daskbench.errors import DaskbenchError
from daskbench.judge import stats, suite
from daskbench.judge.compare import AB_GROUP, compare_group, group_parts, group_questions, lockstep_rounds
from daskbench.judge.format import case_label
from daskbench.judge.repeat import judge
from daskbench.judge.sequential import Question, looks
from daskbench.store import Store
from daskbench.text import wrap_line
from measure.verdict_cost import header

CHANGED = ("regressed", "improved")
#: The fewest recorded rounds a case's metric needs to be replayed (fewer: drawn with replacement, 3 values would
#: repeat into a spread far smaller than the case has).
MIN_POOL = 10


@dataclass(frozen=True)
class Check:
    """One recorded check: its name, its question per metric (floor, most rounds, repeat, family), and each
    unplanted case's rounds per metric (all its parts), each a pair of values (A, B)."""

    name: str
    questions: dict[str, Question]
    pairs: dict[tuple[str, str], np.ndarray]  # (case label, metric) -> rounds x (A, B)
    called: list[str]
    undecided: int
    cases: int
    planted: frozenset[str]  # the labels of ``--planted`` that named a case of this check


def checks(url: str, planted: Sequence[str]) -> Check:
    """The check a store recorded: its groups together (shards of one check, each in a group of its own after
    ``daskbench merge``, are judged with the whole suite's family, as merge judges them)."""
    store = Store(url, create=False)
    groups = sorted({run.tags[AB_GROUP] for run in store.runs() if run.tags.get(AB_GROUP)})
    family = suite.family_size(len(store.cases()), suite.metrics_judged()) if len(groups) > 1 else 1
    parts = [_group(store, group, family, planted) for group in groups]
    return Check(
        f"{url} ({len(groups)} group{'s' if len(groups) > 1 else ''})",
        parts[0].questions,
        {key: value for part in parts for key, value in part.pairs.items()},
        sorted(name for part in parts for name in part.called),
        sum(part.undecided for part in parts),
        sum(part.cases for part in parts),
        frozenset().union(*(part.planted for part in parts)),
    )


def _group(store: Store, group: str, family: int, planted: Sequence[str]) -> Check:
    comparison = compare_group(store, group, family=family)
    named = {v.fingerprint: case_label(v.workload, v.params, v.cluster) for v in comparison.verdicts}
    labels = {fp: label for fp, label in named.items() if label not in planted}
    verdicts = [v for v in comparison.verdicts if v.fingerprint in labels]
    called = sorted({labels[v.fingerprint] for v in verdicts if v.verdict in CHANGED})
    undecided = len({v.fingerprint for v in verdicts if v.verdict == "inconclusive"})
    questions = group_questions(store, group, len(named), family=family)
    if not questions:
        raise SystemExit(f"suite-alarms: group {group} is not a lockstep group whose changes are repeated")
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for part in group_parts(store, group):
        for fp, (a_ms, b_ms) in part.items():
            if fp in labels:  # in one order (`group_parts` sorts): the draws repeat by seed
                for metric in questions:
                    found = lockstep_rounds(a_ms, b_ms, metric)
                    pairs.setdefault((labels[fp], metric), []).extend((a, b) for a, b, _ in found if a > 0 and b > 0)
    kept = {key: np.array(values) for key, values in pairs.items() if len(values) >= MIN_POOL}
    return Check(group, questions, kept, called, undecided, len(labels), frozenset(planted) & set(named.values()))


def _part(pairs: np.ndarray) -> tuple[list[float], list[float]]:
    return [float(a) for a in pairs[:, 0]], [float(b) for b in pairs[:, 1]]


def _case(rng: np.random.Generator, question: Question, pool: np.ndarray, metric: str) -> str:
    """One case and metric replayed: its first reading, and its repeat when it reads a change; its verdict, with
    the metric's smallest change that counts applied as `compare` applies it (`stats.within_min_change`)."""
    first = pool[rng.integers(len(pool), size=question.max_rounds)]
    for n in looks(question.max_rounds):
        parts = [_part(first[:n])]
        judged = judge(question, parts)
        if judged.settled or judged.repeating:
            break
    if judged.repeating:
        again = pool[rng.integers(len(pool), size=question.max_rounds)]
        for m in looks(question.max_rounds):
            parts = [_part(first[:n]), _part(again[:m])]
            judged = judge(question, parts)
            if judged.settled:
                break
    decision = judged.decision if judged.settled else replace(judged.decision, verdict="inconclusive")
    base, cand = [a for part in parts for a in part[0]], [b for part in parts for b in part[1]]
    return stats.within_min_change(decision, base, cand, metric).verdict


def _centred(pool: np.ndarray) -> np.ndarray:
    """The rounds with side B scaled so that the mean log ratio B/A is 0: the case truly unchanged."""
    shift = np.exp(-np.mean(np.log(pool[:, 1] / pool[:, 0])))
    return np.column_stack([pool[:, 0], pool[:, 1] * shift])


def replay(check: Check, rng: np.random.Generator, centred: bool) -> tuple[list[str], int]:
    """One unchanged check made from ``check``'s rounds: the cases called changed, and how many stayed undecided."""
    called, undecided = set(), set()
    for (label, metric), pool in check.pairs.items():
        verdict = _case(rng, check.questions[metric], _centred(pool) if centred else pool, metric)
        if verdict in CHANGED:
            called.add(f"{label} {metric}")
        elif verdict == "inconclusive":
            undecided.add(label)
    return sorted(called), len(undecided - {c.rsplit(" ", 1)[0] for c in called})


def main() -> int:
    parser = argparse.ArgumentParser(prog="measure/suite-alarms", description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", metavar="STORE_URL", help="stores of recorded suite checks")
    parser.add_argument("--planted", action="append", default=[], metavar="CASE",
                        help="a case label to leave out (a planted change), as the verdict table names it")  # fmt: skip
    parser.add_argument("--replays", type=int, default=200, help="unchanged checks replayed per recorded one")
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    try:
        found = [checks(url, args.planted) for url in args.stores]
    except DaskbenchError as error:  # a store that is not one: its one line, no traceback
        raise SystemExit(f"suite-alarms: {error}") from None
    header()
    rng = np.random.default_rng(args.seed)
    unknown = sorted(set(args.planted).difference(*(check.planted for check in found)))
    if unknown:  # a case left in by a misspelt label would be counted as an unchanged one
        raise SystemExit(f"suite-alarms: --planted {unknown[0]!r} names no case of these stores; give the label "
                         "`daskbench compare --group GROUP` prints")  # fmt: skip
    for check in found:
        fam = next(iter(check.questions.values())).family
        print()
        print("\n".join(wrap_line(f"{check.name}: {check.cases} unplanted cases; {fam.text()}", indent="  ")))
        measured = (
            f"  as measured: {len(check.called)} called changed {check.called or ''}; {check.undecided} undecided"
        )
        print("\n".join(wrap_line(measured, indent="    ")))
        replayed = len({label for label, _ in check.pairs})
        print(f"  replayed: the {replayed} cases with at least {MIN_POOL} rounds recorded, each metric's rounds drawn")
        for centred in (True, False):
            runs = [replay(check, rng, centred) for _ in range(args.replays)]
            blamed = sum(bool(called) for called, _ in runs)
            left = [undecided for _, undecided in runs]
            said = (f"  replayed ({'centred' if centred else 'raw'}): {blamed} of {args.replays} unchanged checks "
                    f"called some case changed ({blamed / args.replays:.1%}); undecided per check median "
                    f"{statistics.median(left):g} (range {min(left)}-{max(left)}) of {replayed}")  # fmt: skip
            print("\n".join(wrap_line(said, indent="    ")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
