"""A change verdict repeated in a fresh pair of sessions before it counts.

The sequential rule (`daskbench.judge.sequential`) holds its 5% when the rounds of a comparison are
independent. In lockstep they come from one pair of sessions, alive for the whole comparison, and a
session can carry a bias of its own for its whole life: measured on this project's 2-core machine, A/A
comparisons run beside other test suites (load 4-5) called 6 of 29 changed, and in one of them side B was
faster in 25 of 30 rounds (0.91x) while the CPU probes matched; the comparisons' means spread 1.8x what
their rounds allowed, with no autocorrelation between rounds. No number of rounds from the same pair of
sessions sees such a bias: only other sessions do.

So a change verdict whose interval comes within `REPEAT_WITHIN` of 1 (a bias as large as any measured
could have made it) is only the first of two: the case is measured again in a fresh pair of sessions
(new processes, new cluster) with its own sequential plan, from its first round, and

- when the repeat decides the same change, the verdict stands (its ratio from all the rounds, its
  interval the span of both pairs' intervals: what either pair of sessions allows);
- when the repeat decides otherwise (unchanged, or the other way), the pairs of sessions disagree: the
  case ends ``inconclusive``, both readings in its note, and is measured no further;
- until the repeat decides, the case is ``inconclusive``, its first reading in the note.

A false alarm then needs two independent pairs of sessions to be wrong the same way: with the 21% measured beside
other suites, about 21% x 10% = 2% (simulated in tests/test_repeat.py: 16% for one pair, 1.8% repeated; measured
beside other suites: 0 of 40, where the first pairs alone called 2). A true change pays the repeat's rounds and one
session start (a quiet 1.10x: a median 16 rounds, 0.6 minutes). A change whose interval clears `REPEAT_WITHIN` (a
bisection's 25x, a planted 1.5x) is not repeated on a quiet machine: no bias measured there comes near it. On a busy
one (`busy`: other work used more than `BUSY_CORES` of the machine's cores while the part measured) the bias can: in
this project's CI, beside the other test worker (load 3.4 on 2 cores), side B of an unchanged head read 1.52-1.56x
slower in all 3 rounds of one pair of sessions. There a change is repeated unless its interval clears
`BUSY_REPEAT_WITHIN`.

A comparison of a whole suite counts its false alarms per suite (`daskbench.judge.suite`): the first reading
still screens at the case's own 5%, the repeat is judged at the suite's share (`Family.repeat_alpha`), and a
change too large to repeat counts only once its interval at `Family.alone_alpha` excludes 1 too (``confirming``:
more rounds of the same pair of sessions; at the plan's end it is repeated instead). A comparison of one case
is judged as before.

Rounds come in parts (`parts`: each part one pair of sessions, in order). The first reading pools the parts up to
the first part whose end decides it (or counts it, when it is confirming; a suite within a budget gives a case
rounds in several parts before it decides); the repeat pools every later part. Pure: numbers in, a `Judged` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from daskbench.judge.sequential import ALPHA, REPEAT_WITHIN, Question, is_decided, ratios_text
from daskbench.judge.stats import Decision

Rounds = tuple[Sequence[float], Sequence[float]]  # one part's (A values, B values), round by round

#: Cores other work may use, on average over a part's measurements, before the machine counts as busy: what
#: the measured side's idle twin and the controller use is a tenth of a core or less (``extra["others_cores"]``,
#: `daskbench.metrics.probe.others_cores`: the machine's busy CPU time less the measuring session's own).
BUSY_CORES = 0.5
#: Within what factor of 1 a change read on a busy machine is repeated: the largest bias measured of a pair of
#: sessions beside other work was 1.56x (CI, load 3.4 on 2 cores).
BUSY_REPEAT_WITHIN = 2.0


def busy(others: Sequence[float | None]) -> bool:
    """Whether the machine was busy with other work while a part measured: the mean of the cores other work used
    during its measurements (None: not read) above `BUSY_CORES`."""
    read = [cores for cores in others if cores is not None]
    return bool(read) and sum(read) / len(read) > BUSY_CORES


@dataclass(frozen=True)
class Judged:
    """What a case's rounds say: its ``decision``; ``settled`` when it needs no more rounds; ``first`` the
    rounds of its first reading (all its rounds when not repeated); ``repeating`` when that reading is a
    change to repeat (every round after ``first`` must come from fresh sessions), ``first_verdict`` its verdict;
    ``confirming`` when it is a change too large to repeat that counts once its interval at the suite's share
    (`daskbench.judge.suite.Family.alone_alpha`) excludes 1 too: more rounds of the same sessions."""

    decision: Decision
    settled: bool = False
    first: int = 0
    repeating: bool = False
    first_verdict: str = ""
    confirming: bool = False


def needs_repeat(decision: Decision, within: float = REPEAT_WITHIN) -> bool:
    """Whether a change verdict's interval comes within ``within`` of 1 (so a session's bias could explain it)."""
    if decision.verdict == "regressed":
        return decision.ci_low is None or decision.ci_low < within
    if decision.verdict == "improved":
        return decision.ci_high is None or decision.ci_high > 1.0 / within
    return False


def judge(question: Question, parts: Sequence[Rounds], busy_parts: Sequence[bool] = ()) -> Judged:
    """The verdict of a case's rounds, part by part (each part one pair of sessions), as the module says;
    ``question.repeat_within`` None: the rounds pooled, never repeated (a fixed ``--rounds N``, an old group).
    The errors are the question's family's (`daskbench.judge.suite`): the first reading screens at the case's
    own; its repeat, or a change counted without one, is judged at the suite's share. ``busy_parts``: which
    parts were measured on a busy machine (`busy`); a change read in one is repeated unless its interval clears
    `BUSY_REPEAT_WITHIN`."""
    family, within = question.family, question.repeat_within
    screen = ALPHA if within is not None else family.pooled_alpha(ALPHA)
    a: list[float] = []
    b: list[float] = []
    first: Decision | None = None
    used = 0  # the parts of the first reading
    while used < len(parts):
        a += parts[used][0]
        b += parts[used][1]
        used += 1
        first = question.decide(a, b, screen) if a else None
        if first is None or not is_decided(first):
            continue
        if within is not None and needs_repeat(first, _within(within, busy_parts[:used])):
            break
        alone = _alone(question, first, a, b)
        if alone is not None:
            return Judged(alone, settled=is_decided(alone), first=len(a))
        if len(a) >= question.max_rounds:  # not sure enough alone by the plan's end: repeated instead
            break
    if first is None:
        return Judged(Decision("inconclusive", method="sequential", note="no round measured yet"))
    if not is_decided(first):
        return Judged(first, first=len(a))
    again_a = [value for part in parts[used:] for value in part[0]]
    again_b = [value for part in parts[used:] for value in part[1]]
    if not again_a:
        return _waiting(question, first, len(a), any(busy_parts[:used]))
    again = question.decide(again_a, again_b, family.repeat_alpha(ALPHA))
    return _repeated(first, again, a + again_a, b + again_b, len(a))


def _within(within: float, busy_parts: Sequence[bool]) -> float:
    """The factor a change read in these parts must clear to count without a repeat."""
    return max(within, BUSY_REPEAT_WITHIN) if any(busy_parts) else within


def _waiting(question: Question, first: Decision, rounds: int, busy_first: bool = False) -> Judged:
    """A change read by one pair of sessions that does not count yet: to repeat in a fresh pair, or, too large
    for that and its plan not at its end, to read surer in more rounds of the same pair."""
    within = question.repeat_within
    large = within is not None and not needs_repeat(first, _within(within, [busy_first]))
    if large and rounds < question.max_rounds:
        alpha = question.family.alone_alpha(ALPHA)
        note = f"{first.verdict} {reading(first)}; it counts once its interval at {1 - alpha:.2%} excludes 1 too"
        return Judged(_open(first, note), first=rounds, first_verdict=first.verdict, confirming=True)
    where = " on a busy machine" if busy_first else ""
    note = f"{first.verdict} {reading(first)} in one pair of sessions{where}; it counts once a fresh pair repeats it"
    return Judged(_open(first, note), first=rounds, repeating=True, first_verdict=first.verdict)


def _alone(question: Question, first: Decision, a: Sequence[float], b: Sequence[float]) -> Decision | None:
    """The first reading as the verdict when it needs no repeat: not a change, pooled rounds (no repeats
    asked), or a change whose interval at the suite's share for a change counted alone (`Family.alone_alpha`)
    excludes 1 as well (that interval is the one shown); None: the change must be repeated."""
    alpha = question.family.alone_alpha(ALPHA)
    if question.repeat_within is None or first.verdict not in ("regressed", "improved") or alpha >= ALPHA:
        return first
    alone = question.decide(a, b, alpha)
    return alone if alone.verdict == first.verdict else None


def _repeated(first: Decision, again: Decision, a: Sequence[float], b: Sequence[float], used: int) -> Judged:
    """A change read twice: its repeat (in a fresh pair of sessions) still open, disagreeing, or agreeing."""
    if not is_decided(again):
        note = f"{first.verdict} {reading(first)} in the first pair of sessions; its repeat in a fresh pair so far"
        return Judged(_open(again, note), first=used, repeating=True, first_verdict=first.verdict)
    both = _both(first, again, a, b)
    if again.verdict != first.verdict:
        note = (
            f"the sessions disagree: {first.verdict} {reading(first)} in the first pair, {again.verdict} "
            f"{reading(again)} in a fresh pair; a difference between sessions, not between A and B"
        )
        return Judged(_open(both, note), settled=True, first=used, repeating=True, first_verdict=first.verdict)
    note = f"repeated in a fresh pair of sessions: {reading(first)} in the first, {reading(again)} in the second"
    return Judged(replace(both, note=note), settled=True, first=used, repeating=True, first_verdict=first.verdict)


def reading(decision: Decision) -> str:
    """``1.08x (1.01-1.16)``: a decision's ratio and interval."""
    ratio = f"{decision.ratio:.2f}x" if decision.ratio is not None else "-"
    if decision.ci_low is None or decision.ci_high is None:
        return ratio
    return f"{ratio} ({decision.ci_low:.2f}-{decision.ci_high:.2f})"


def _open(decision: Decision, note: str) -> Decision:
    """Not a verdict yet (or none: the sessions disagree), the figures of ``decision`` kept."""
    return replace(decision, verdict="inconclusive", note=note)


def _both(first: Decision, again: Decision, a: Sequence[float], b: Sequence[float]) -> Decision:
    """The first verdict with the ratio of all the rounds and the span of both intervals (what either pair of
    sessions allows)."""
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    lows = [d.ci_low for d in (first, again) if d.ci_low is not None]
    highs = [d.ci_high for d in (first, again) if d.ci_high is not None]
    low, high = (min(lows), max(highs)) if lows and highs else (None, None)
    ratio = math.exp(sum(logs) / len(logs))
    if low is not None and high is not None:
        ratio = min(max(ratio, low), high)
    return replace(first, ratio=ratio, ci_low=low, ci_high=high)


def with_rounds(judged: Judged, a: Sequence[float], b: Sequence[float]) -> Decision:
    """The decision as ``compare --group`` shows it: how many rounds, the note, every round's ratio B/A."""
    decision = judged.decision
    if decision.verdict != "inconclusive":
        said = f"decided after {len(a)} rounds"
    elif judged.settled:
        said = f"not decided: the sessions disagree after {len(a)} rounds"
    else:
        said = f"not decided after {len(a)} rounds"
    parts = (said, decision.note, ratios_text(a, b))
    return replace(decision, note="; ".join(part for part in parts if part))
