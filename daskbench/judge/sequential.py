"""Rounds until decided: an interleaved A/B comparison that may stop as soon as it knows.

Each round gives one ratio B/A of one case (A and B measured seconds apart, in turn). After
round n the verdict may be read (a *look*); peeking at a t-interval after every round and
stopping at the first that excludes 1 would call an A/A pair "changed" far more often than 5%.
The error control used here is **repeated confidence intervals with alpha spending**
(Jennison & Turnbull 1989, with the power-family spending function of Lan & DeMets 1983):

- looks happen at a fixed grid of round counts (`looks`: 3, 4, 5, 6, 8, 10, 12, 15, ... and
  the last round allowed), never more often;
- the total error ``ALPHA`` (5%) is spent over the looks: look k at n_k rounds gets
  ``alpha_k = ALPHA * ((n_k/N)^RHO - (n_{k-1}/N)^RHO)`` of it, where N is the most rounds the
  comparison may take (`spending`);
- at look k the interval is the Student-t interval of the mean log ratio at confidence
  ``1 - alpha_k`` (df = n_k - 1).

By the union bound (Bonferroni), the chance that *any* look's interval misses the true ratio is
at most the sum of the alpha_k, i.e. ``ALPHA``, whatever the correlation between looks and
whenever the comparison stops. So every look's interval holds at once with 95%
confidence, and so does their intersection (the running intersection, `sequential_interval`),
which is what a verdict reads: it only narrows as rounds are added.

The verdict separates "is it real" (the interval) from "does it matter" (the floor):

- ``regressed``: the interval lies wholly above 1 (real) and reaches beyond the floor (it may
  matter): a true change *at* the floor is called as soon as it is shown to be real, instead of
  being a coin flip on whether its estimate lands above the floor;
- ``improved``: the mirror image;
- ``unchanged``: the interval lies wholly within the floor band [1/floor, floor] (a change, if
  any, too small to matter; the note says when it is real but small);
- otherwise the comparison is not decided yet (``inconclusive``): more rounds narrow it.

An A/A comparison (no true change) is called changed only when an interval excludes 1, which
happens with probability at most ``ALPHA`` over all looks (checked by simulation in
tests/test_sequential.py). Everything here is pure: no I/O, numbers in, a `Decision` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from daskbench.judge.stats import Decision, student_t_ppf
from daskbench.judge.suite import CASE_ALPHA, PER_CASE, Family
from daskbench.text import plural
from daskbench.verdicts import VerdictKind

#: Total chance of calling a change that is not there, over all looks of one comparison.
ALPHA = CASE_ALPHA
#: The power-family spending exponent: above 1 keeps most of ALPHA for the later, surer looks.
RHO = 1.5
#: Rounds before the first look: an interval needs a spread, and two rounds give a wild one.
MIN_ROUNDS = 3
#: The default most rounds of one case (``--max-rounds`` of ab, bisect, confirm, pr, calibrate).
MAX_ROUNDS = 30
#: The most rounds any comparison may be given (``--rounds``, ``--max-rounds``, ``--rounds-cap``).
ROUNDS_LIMIT = 200
#: A change verdict whose interval's nearer end lies within this factor of 1 is repeated in a fresh pair of
#: sessions before it counts (`daskbench.judge.repeat`): a session's own bias was measured up to about 0.91x.
REPEAT_WITHIN = 1.20
#: The grid of looks before the last: about 1.2x apart, so the spent alpha is not spread thin.
_GRID = (3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 26, 30, 36, 42, 50, 60, 72, 86, 100, 120, 150, 180, 200)


def looks(max_rounds: int) -> tuple[int, ...]:
    """The round counts at which a comparison of at most ``max_rounds`` rounds may stop."""
    if max_rounds < MIN_ROUNDS:
        return (max_rounds,) if max_rounds >= 2 else ()
    return (*(n for n in _GRID if n < max_rounds), max_rounds)


def spending(max_rounds: int, alpha: float = ALPHA, rho: float = RHO) -> dict[int, float]:
    """Look (rounds) -> the error it may spend; the values add up to ``alpha``."""
    grid = looks(max_rounds)
    spent = [alpha * (n / grid[-1]) ** rho for n in grid] if grid else []
    return {n: spent[i] - (spent[i - 1] if i else 0.0) for i, n in enumerate(grid)}


@dataclass(frozen=True)
class Look:
    """The interval of one look, on the ratio scale."""

    rounds: int
    low: float
    high: float


def look_interval(log_ratios: Sequence[float], alpha: float) -> Look:
    """The Student-t interval of the mean log ratio at confidence ``1 - alpha``, as ratios."""
    values = np.asarray(log_ratios, dtype=float)
    n = len(values)
    half = student_t_ppf(1.0 - alpha / 2.0, n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    mean = float(values.mean())
    return Look(n, math.exp(mean - half), math.exp(mean + half))


def sequential_interval(
    log_ratios: Sequence[float], max_rounds: int, alpha: float = ALPHA
) -> tuple[float, float] | None:
    """The running intersection of the intervals of every look reached by ``len(log_ratios)``
    rounds, ``alpha`` spent over the looks; None before the first look. (`look_interval` of each look, all
    looks at once: a suite's judging asks this after every round of hundreds of verdicts.)"""
    budget = spending(max_rounds, alpha)
    reached = [n for n in budget if n <= len(log_ratios)]
    if not reached:
        return None
    values = np.asarray(log_ratios[: reached[-1]], dtype=float)
    counts = np.asarray(reached)
    prefix = np.arange(len(values)) < counts[:, None]  # row k: the rounds of look k
    means = np.where(prefix, values, 0.0).sum(axis=1) / counts
    spreads = np.sqrt(np.where(prefix, (values - means[:, None]) ** 2, 0.0).sum(axis=1) / (counts - 1))
    quantiles = np.asarray([student_t_ppf(1.0 - budget[n] / 2.0, n - 1) for n in reached])
    halves = quantiles * spreads / np.sqrt(counts)
    low, high = math.exp(float(np.max(means - halves))), math.exp(float(np.min(means + halves)))
    return (low, high) if low <= high else (high, low)  # disjoint looks: the (rare) narrowest gap


def classify(low: float, high: float, floor: float) -> tuple[VerdictKind, str]:
    """(verdict, note) of an interval against the floor band; ``inconclusive`` means not decided."""
    if low > 1.0 and high > floor:
        return "regressed", ""
    if high < 1.0 and low < 1.0 / floor:
        return "improved", ""
    if low >= 1.0 / floor and high <= floor:
        real = low > 1.0 or high < 1.0
        return "unchanged", (f"a real change, smaller than the floor {floor:.2f}" if real else "")
    return "inconclusive", f"the interval still spans 1 and the floor {floor:.2f}; more rounds narrow it"


def boundary_between(bad_low: float | None, floor: float) -> float | None:
    """The boundary a bisection step is judged against, given the lower end of the interval step 0 measured
    for the bad end against the good one: their geometric midpoint ``sqrt(bad_low)``, as far (on the log
    scale) from 1, the good end, as from the least the bad end is. None when that midpoint is not beyond
    ``floor``: a change that small is hunted with the floor rule (`classify`), which decides it sooner."""
    if bad_low is None or bad_low <= 1.0:
        return None
    middle = math.sqrt(bad_low)
    return middle if middle >= floor else None


def classify_against(low: float, high: float, boundary: float, floor: float) -> tuple[VerdictKind, str]:
    """(verdict, note) of a bisection step's interval against ``boundary``: ``regressed`` (like the bad end)
    when it lies wholly above it, like the good end when wholly below (``improved`` when `classify` says
    so, else ``unchanged``), ``inconclusive`` while it straddles it. Either way it holds 95%: a step like the
    good end (ratio 1) is called bad only if its interval misses 1, and one like the bad end only if its
    interval misses the bad end's lower bound."""
    if low > boundary:
        return "regressed", f"like the bad end: above the boundary {boundary:.2f}x"
    if high < boundary:
        note = f"like the good end: below the boundary {boundary:.2f}x"
        return ("improved" if classify(low, high, floor)[0] == "improved" else "unchanged"), note
    return "inconclusive", f"the interval still spans the boundary {boundary:.2f}x; more rounds narrow it"


@dataclass(frozen=True)
class Question:
    """What a comparison asks of each case's rounds: is ``metric`` changed beyond ``floor`` (the floor
    band, `classify`), or, for a bisection step, is it like the bad end or the good one (``boundary``,
    `classify_against`); at most ``max_rounds`` rounds (the plan the error is spent over); a change verdict
    within ``repeat_within`` of 1 repeated in fresh sessions (`daskbench.judge.repeat`; None: never); the
    verdicts whose false alarms are counted together (``family``: `daskbench.judge.suite`; by default each
    case on its own)."""

    floor: float
    max_rounds: int = MAX_ROUNDS
    boundary: float | None = None
    metric: str = "runtime_s"
    repeat_within: float | None = REPEAT_WITHIN
    family: Family = PER_CASE

    def __post_init__(self) -> None:
        if self.floor < 1.0 or self.max_rounds < 1 or (self.boundary is not None and self.boundary <= 1.0):
            raise ValueError(f"Question: floor >= 1, max_rounds >= 1 and a boundary above 1 needed ({self})")
        if self.repeat_within is not None and self.repeat_within <= 1.0:
            raise ValueError(f"Question: repeat_within above 1 needed ({self})")

    def decide(self, a_rounds: Sequence[float], b_rounds: Sequence[float], alpha: float = ALPHA) -> Decision:
        """The sequential verdict of the rounds so far, ``alpha`` spent over the plan's looks."""
        return sequential_decision(a_rounds, b_rounds, self.floor, self.max_rounds, self.boundary, alpha)


def is_decided(decision: Decision) -> bool:
    """Whether more rounds are no longer needed."""
    return decision.verdict in ("regressed", "improved", "unchanged")


def sequential_decision(
    a_rounds: Sequence[float],
    b_rounds: Sequence[float],
    floor: float,
    max_rounds: int = MAX_ROUNDS,
    boundary: float | None = None,
    alpha: float = ALPHA,
) -> Decision:
    """The verdict of per-round values (``a_rounds[i]`` and ``b_rounds[i]`` measured side by side)
    after ``len(a_rounds)`` rounds of a comparison allowed ``max_rounds``, ``alpha`` spent over its looks:
    against the floor band (`classify`), or, for a bisection step, against ``boundary`` (`classify_against`)."""
    if len(a_rounds) != len(b_rounds) or not a_rounds:
        raise ValueError(f"rounds must pair up: {len(a_rounds)} A values, {len(b_rounds)} B values")
    if min(a_rounds) <= 0 or min(b_rounds) <= 0:
        return Decision("inconclusive", method="exact", note="a value of 0 or less has no ratio")
    logs = [math.log(b / a) for a, b in zip(a_rounds, b_rounds, strict=True)]
    ratio = math.exp(sum(logs) / len(logs))
    method = (
        f"sequential: {len(logs)} of at most {max(max_rounds, len(logs))} rounds, alpha {alpha:.2g} spent over looks"
    )
    interval = sequential_interval(logs, max(max_rounds, len(logs)), alpha)
    if interval is None:
        return Decision(
            "inconclusive",
            ratio,
            method=method,
            note=f"{plural(len(logs), 'round')}: the first look is at {MIN_ROUNDS}",
        )
    low, high = interval
    verdict, note = classify(low, high, floor) if boundary is None else classify_against(low, high, boundary, floor)
    return Decision(verdict, min(max(ratio, low), high), low, high, method, note)


def rounds_decision(
    a_rounds: Sequence[float],
    b_rounds: Sequence[float],
    floor: float,
    max_rounds: int | None = None,
    boundary: float | None = None,
    alpha: float = ALPHA,
) -> Decision:
    """`sequential_decision` with the per-round ratios B/A in the note (what ``compare --group``
    shows); ``max_rounds`` defaults to the rounds given (a comparison of fixed length)."""
    most = max(max_rounds or len(a_rounds), len(a_rounds))
    decision = sequential_decision(a_rounds, b_rounds, floor, most, boundary, alpha)
    parts = (rounds_text(len(a_rounds), most, is_decided(decision)), decision.note, ratios_text(a_rounds, b_rounds))
    return replace(decision, note="; ".join(part for part in parts if part))


def ratios_text(a_rounds: Sequence[float], b_rounds: Sequence[float]) -> str:
    """``per-round ratios 1.020, 0.990``: every round's ratio B/A, as a verdict's note ends."""
    per_round = ", ".join(f"{b / a:.3f}" for a, b in zip(a_rounds, b_rounds, strict=True) if a > 0)
    return f"per-round ratios {per_round}"


def rounds_text(rounds: int, most: int, decided: bool) -> str:
    """How many rounds a case took and why it stopped there."""
    if decided:
        return f"decided after {rounds} round{'s' if rounds != 1 else ''}"
    if rounds >= most:
        return f"not decided in the most rounds allowed ({most})"
    return f"not decided after {rounds} of at most {most} rounds (time budget, or stopped)"
