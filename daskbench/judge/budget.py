"""Where a comparison's next rounds go when a whole suite shares one time budget.

``daskbench ab|pr|bisect --budget MINUTES``: every case first gets a screening of a few rounds
(`SCREEN_ROUNDS`: the first look, where an effect plainly far from every floor is decided at once);
then, part after part, the rounds go to the open cases closest to deciding, until all are decided or
the budget ends. Which cases are closest is read from what each has shown so far, by hand-checkable
arithmetic (`rounds_to_decide`): with its mean log ratio ``m`` and per-round spread ``s`` after ``n``
rounds, the interval at a later look ``k`` is about ``m +- q_k s / sqrt(k)`` (``q_k`` the Student-t
quantile that look's spent error gives, `daskbench.judge.sequential`); the first look whose interval
would be decided is the case's estimate, and its cost is the rounds still missing times the seconds
a round of that case took. Cases go cheapest first while the part's share of the budget holds (`allocate`).
A case that only has its screening rounds and that no look would decide on them is projected with the suite's
typical spread instead (`suite_spread`): one wild round among three made such a case's interval 0.03-36.67 and left
it at three rounds, placed after every other case (seven of eight undecided in a 20-minute check, 2026-11-29).

A part is given half of the budget left (`part_seconds`; at least `MIN_PART_SECONDS`, never more than is
left), not all of it: the estimates come from a few rounds each (a spread read off 3 rounds is below half the
true one time in five), so a part planned on the whole budget took every open case at once, advanced each a
little, and the budget ended with most of them undecided (2026-11-29, one machine, 20 minutes: 18 of 42
decided after a part of 38 cases). A part of half the budget takes the cases closest to deciding, and the next
part plans again on their rounds so far.

This only chooses which cases get more rounds and how many; each case is still judged by the
sequential rule alone, whose error bound holds whenever a comparison stops (every look's interval
holds at once), so spending rounds where they decide soonest never loosens a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from daskbench.judge.sequential import ALPHA, classify, classify_against, looks, spending
from daskbench.judge.stats import student_t_ppf

#: Rounds every case gets first (the first look of the sequential rule).
SCREEN_ROUNDS = 3
#: The share of the budget left that one part is planned on (`part_seconds`).
PART_SHARE = 0.5
#: The least a part is planned on while the budget has that much left: a part's start-up (a new pair of
#: sessions, 3-12 s here) is paid again for each part.
MIN_PART_SECONDS = 120.0
#: The per-round spread assumed for a case with fewer than two rounds or none at all (log ratio sd;
#: this project's A/A arms measured 0.05-0.14).
DEFAULT_SPREAD = 0.10


@dataclass(frozen=True)
class OpenCase:
    """A case not decided yet: its per-round log ratios so far, what a round of it costs, how it is judged;
    ``done`` the rounds its plan has (default: its log ratios; a repeat in fresh sessions not begun has 0,
    and is projected from the first reading's log ratios); ``alpha`` the error its plan spends (a repeat's
    is the suite's share, `daskbench.judge.suite`)."""

    key: str
    log_ratios: tuple[float, ...]
    seconds_per_round: float
    max_rounds: int
    floor: float
    boundary: float | None = None  # a bisection step's boundary (`sequential.classify_against`), else the floor
    done: int | None = None
    alpha: float = ALPHA

    @property
    def have(self) -> int:
        return len(self.log_ratios) if self.done is None else self.done

    def __post_init__(self) -> None:
        if self.seconds_per_round < 0 or self.max_rounds < 1 or self.floor < 1.0:
            raise ValueError(f"OpenCase {self.key}: seconds_per_round >= 0, max_rounds >= 1 and floor >= 1 needed")

    def decided_at(self, low: float, high: float) -> bool:
        """Whether an interval (ratios) would decide this case."""
        if self.boundary is not None:
            return classify_against(low, high, self.boundary, self.floor)[0] != "inconclusive"
        return classify(low, high, self.floor)[0] != "inconclusive"


def spread(log_ratios: Sequence[float], fallback: float = DEFAULT_SPREAD) -> float:
    """The per-round spread (sd of the log ratios) to project with; ``fallback`` with fewer than 2 rounds."""
    if len(log_ratios) < 2:
        return fallback
    return float(np.std(np.asarray(log_ratios, dtype=float), ddof=1)) or fallback


def suite_spread(cases: Sequence[OpenCase]) -> float | None:
    """The suite's typical per-round spread: the median of the spreads of its cases with at least
    `SCREEN_ROUNDS` rounds (one wild round moves a case's spread, not the median); None when none has."""
    spreads = [spread(case.log_ratios) for case in cases if len(case.log_ratios) >= SCREEN_ROUNDS]
    return float(np.median(spreads)) if spreads else None


def rounds_to_decide(case: OpenCase, fallback: float = DEFAULT_SPREAD, sd: float | None = None) -> int | None:
    """The first look after the rounds ``case`` has at which, if its mean and spread (or ``sd``) held, its
    interval would be decided; None when no look up to its most rounds would decide it."""
    mean = float(np.mean(case.log_ratios)) if case.log_ratios else 0.0
    sd = spread(case.log_ratios, fallback) if sd is None else sd
    budget = spending(case.max_rounds, case.alpha)
    for rounds in looks(case.max_rounds):
        if rounds <= case.have or rounds < 2:
            continue
        half = student_t_ppf(1.0 - budget[rounds] / 2.0, rounds - 1) * sd / math.sqrt(rounds)
        if case.decided_at(math.exp(mean - half), math.exp(mean + half)):
            return rounds
    return None


def part_seconds(left: float) -> float:
    """The seconds the next part is planned on, of ``left`` in the budget: half of it, at least
    `MIN_PART_SECONDS` (all of ``left`` when less is left)."""
    return min(left, max(left * PART_SHARE, MIN_PART_SECONDS))


@dataclass(frozen=True)
class Allotment:
    """Rounds given to one case in the next part: run it up to ``rounds`` in all (or until decided)."""

    key: str
    rounds: int
    seconds: float  # what those rounds are expected to cost


def allocate(cases: Sequence[OpenCase], seconds_left: float, fallback: float = DEFAULT_SPREAD) -> list[Allotment]:
    """The open cases to continue, cheapest to decide first, each up to the look its estimate names, as
    long as their expected cost fits ``seconds_left`` (the cheapest always, when there is any time left:
    the budget's end, not its estimate, stops it). A case no look would decide on its screening rounds alone is
    projected with the suite's typical spread instead (`suite_spread`: one wild round among three makes any
    case look hopeless, and it would stay at three rounds); a case no look would decide after more rounds
    comes after the rest, up to its most rounds, if the budget still has room for it (estimates err; its rounds
    are not lost)."""
    planned: list[tuple[float, int, Allotment]] = []
    typical = suite_spread(cases)
    for order, case in enumerate(cases):
        have = case.have
        if have >= case.max_rounds:
            continue
        target = rounds_to_decide(case, fallback)
        if target is None and typical is not None and have <= SCREEN_ROUNDS:
            target = rounds_to_decide(case, fallback, sd=typical)
        hopeless = target is None
        rounds = case.max_rounds if target is None else target
        cost = (rounds - have) * case.seconds_per_round
        planned.append((math.inf if hopeless else cost, order, Allotment(case.key, rounds, cost)))
    chosen: list[Allotment] = []
    spent = 0.0
    for _, _, allotment in sorted(planned, key=lambda item: (item[0], item[1])):
        if seconds_left > 0 and (not chosen or spent + allotment.seconds <= seconds_left):
            chosen.append(allotment)
            spent += allotment.seconds
    return chosen
