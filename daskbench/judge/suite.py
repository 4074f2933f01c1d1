"""False alarms counted per suite: how often an unchanged suite gets any case blamed.

Each case's sequential rule (`daskbench.judge.sequential`) keeps its own false alarms under ``ALPHA`` (5%),
and a change within ``REPEAT_WITHIN`` of 1 counts only once a fresh pair of sessions repeats it
(`daskbench.judge.repeat`). But a pull request's check judges every case of a suite in every compared
metric (42 cases and 6 metrics are 252 verdicts), and what a person reading its comment sees is whether
*any* case was blamed. Left per case, that chance grows with the suite. So a comparison of a suite spends one
error, `SUITE_ALPHA` (10%), over its ``m`` verdicts (`Family`; Bonferroni: the chance that any of ``m``
events happens is at most the sum of theirs, whatever their correlation), on the readings that make a change
count, never on the screening:

- the first reading (one pair of sessions, the case's own ``ALPHA``) is a screen: it finds a change as fast
  as a case alone does. A change it reads counts only once a fresh pair repeats it at `Family.repeat_alpha`,
  ``SUITE_ALPHA / (m * ALPHA)``: a false alarm then needs both pairs wrong the same way, at most
  ``ALPHA/2 * repeat_alpha/2`` per side, ``m * ALPHA * repeat_alpha / 2 = SUITE_ALPHA / 2`` over the suite;
- a change too large for a session's bias on a quiet machine (its interval clears ``REPEAT_WITHIN``) counts at
  once only when its interval at `Family.alone_alpha`, ``SUITE_ALPHA / (2m)``, also lies wholly beyond 1;
  otherwise, or when it was read on a busy machine (`daskbench.judge.repeat.busy`), it is repeated like any
  other: at most ``alone_alpha`` per verdict, ``SUITE_ALPHA / 2`` over the suite;
- a comparison that never repeats (``--rounds N``: its rounds pooled) judges each verdict at
  `Family.pooled_alpha`, ``SUITE_ALPHA / m``.

Every one is capped at ``ALPHA``: no verdict is judged more loosely than a case alone is, and a comparison
of one verdict is judged exactly as before. The bound assumes what the rule and the repeat assume: the rounds
of one pair of sessions independent of each other, and pairs of sessions independent of each other (checked
by simulation in tests/test_suite_alarms.py). A metric derived from another (cost from runtime) counts as a
verdict of its own, which only makes the bound conservative.

Power: the screen is unchanged, so a change is found as soon as before; only the repeat of a small change
needs a surer interval (at 252 verdicts 99.2% instead of 95%), which costs it rounds, not its verdict.

`state` reads a comparison as the commands' exit codes do: regressed, undecided (some case without a
verdict, or not measured at all) or unchanged. Pure: numbers and verdicts in, numbers and words out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from daskbench import catalog
from daskbench.text import plural
from daskbench.verdicts import Verdict

#: The most chance that an unchanged suite gets any of its verdicts called changed (regressed or improved).
SUITE_ALPHA = 0.10
#: A comparison's own per-case error (`daskbench.judge.sequential.ALPHA`; restated to keep this module a leaf).
CASE_ALPHA = 0.05

State = Literal["regressed", "undecided", "unchanged"]
#: How `Family.text` begins, for a suite-level error (`said` finds it among a comparison's notes).
PER_SUITE = "false alarms counted per suite"


@dataclass(frozen=True)
class Family:
    """The verdicts whose false alarms add up: ``verdicts`` of them (a suite's cases times the metrics judged
    of each), sharing ``alpha``; ``alpha`` None: each case on its own (no suite-level control)."""

    verdicts: int = 1
    alpha: float | None = None

    def __post_init__(self) -> None:
        if self.verdicts < 1 or (self.alpha is not None and not 0.0 < self.alpha < 1.0):
            raise ValueError(f"Family: at least 1 verdict and an alpha between 0 and 1 needed ({self})")

    def repeat_alpha(self, first: float = CASE_ALPHA) -> float:
        """The error of the repeat of a change the first reading (at ``first``) found."""
        return first if self.alpha is None else min(first, self.alpha / (self.verdicts * first))

    def alone_alpha(self, first: float = CASE_ALPHA) -> float:
        """The error at which a change counts without a repeat (its interval must exclude 1 at it too)."""
        return first if self.alpha is None else min(first, self.alpha / (2 * self.verdicts))

    def pooled_alpha(self, first: float = CASE_ALPHA) -> float:
        """The error of every verdict of a comparison that never repeats (``--rounds N``)."""
        return first if self.alpha is None else min(first, self.alpha / self.verdicts)

    def at_least(self, verdicts: int) -> Family:
        """The same family, counting at least ``verdicts`` (the cases a comparison found, or a whole suite's)."""
        return self if verdicts <= self.verdicts else Family(verdicts, self.alpha)

    def text(self, cases: int | None = None) -> str:
        """What the suite-level rate is, in words for a comment or a summary."""
        if self.alpha is None:
            return (
                f"false alarms counted per case: each case and metric at most {CASE_ALPHA:.0%} (no suite-level bound)"
            )
        of = f" ({plural(cases, 'case')} x the metrics judged)" if cases else ""
        return (
            f"{PER_SUITE}: an unchanged suite gets any of its {plural(self.verdicts, 'verdict')}"
            f"{of} called changed at most {self.alpha:.0%} of the time"
        )


#: No suite-level control: each case and metric on its own (a bisection step, a calibration, an old group).
PER_CASE = Family()


def said(notes: Sequence[str]) -> str:
    """The suite-level rate a comparison's notes state (`daskbench.judge.compare.compare_group` adds it); ""."""
    return next((note for note in notes if note.startswith(PER_SUITE)), "")


def family_size(cases: int, metrics: int) -> int:
    """How many verdicts a comparison of ``cases`` cases judging ``metrics`` metrics each makes (at least 1)."""
    return max(cases * metrics, 1)


def metrics_judged(asked: str = "runtime_s") -> int:
    """How many metrics an A/B group judges of each case: the compared ones, and the one asked (``--metric``)."""
    compared = catalog.compared()
    return len(compared) + (asked not in compared and catalog.is_declared(asked))


def state(verdicts: Sequence[Verdict], not_measured: int = 0) -> State:
    """A comparison read as a whole: ``regressed`` (a regression or a newly failing case), else ``undecided``
    (a verdict still inconclusive, ``not_measured`` cases, or no verdict at all: a comparison that measured
    nothing decided nothing), else ``unchanged`` (improvements included)."""
    if any(v.is_regression for v in verdicts):
        return "regressed"
    if not verdicts or not_measured or any(v.verdict == "inconclusive" for v in verdicts):
        return "undecided"
    return "unchanged"
