"""False alarms counted per suite (`daskbench.judge.suite`): the error a suite's verdicts share, planted
answers, and unchanged suites and a planted 1.20x simulated (seeded) through the real rule (`repeat.judge`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from daskbench import catalog
from daskbench.judge.repeat import Judged, Rounds, judge
from daskbench.judge.sequential import ALPHA, Question, looks
from daskbench.judge.suite import SUITE_ALPHA, Family, family_size, metrics_judged, state
from daskbench.verdicts import Verdict

#: 1.10x, spread about 0.02: regressed at the look of 5 rounds, its interval well inside 1.20x (a repeat).
SMALL = [1.12, 1.08, 1.10, 1.11, 1.09]
#: A repeat of it sure at a case's own 5%, not at the share of a suite of 42 cases x 6 metrics.
AGAIN = [1.12, 1.06, 1.10, 1.08, 1.11, 1.07]
#: The bundled suite's size at --size tiny, and the metrics an A/B group judges of each case.
CASES, METRICS = 42, len(catalog.compared())
#: Per-round spread (sd of the log ratio B/A): runtime in a noisy hour (A/A 16%: issue 43), memory.
RUNTIME_SD, MEMORY_SD = 0.14, 0.03


def part(ratios: list[float] | np.ndarray) -> Rounds:
    return ([1.0] * len(ratios), [float(r) for r in ratios])


def suite_question(verdicts: int, floor: float = 1.10) -> Question:
    return Question(floor, 30, family=Family(verdicts, SUITE_ALPHA))


def test_a_family_of_one_verdict_or_none_is_judged_as_a_case_alone() -> None:
    for family in (Family(), Family(1, SUITE_ALPHA), Family(40, SUITE_ALPHA)):
        assert family.repeat_alpha() == ALPHA
    assert Family().alone_alpha() == Family().pooled_alpha() == ALPHA
    assert Family(1, SUITE_ALPHA).pooled_alpha() == ALPHA  # capped: never looser than a case alone


@pytest.mark.parametrize("verdicts", [2, 84, 252, 1000])
def test_the_shares_of_a_suite_add_up_to_at_most_its_error(verdicts: int) -> None:
    """Repeated: both pairs wrong the same way, ALPHA/2 x repeat/2 a side; alone: its own share; pooled: m x its."""
    family = Family(verdicts, SUITE_ALPHA)
    repeated = verdicts * ALPHA * family.repeat_alpha() / 2
    assert repeated + verdicts * family.alone_alpha() <= SUITE_ALPHA + 1e-12
    assert verdicts * family.pooled_alpha() <= SUITE_ALPHA + 1e-12


def test_a_suite_counts_its_cases_times_the_metrics_judged_of_each() -> None:
    assert metrics_judged() == len(catalog.compared())
    assert metrics_judged("task_cpu_s") == len(catalog.compared()) + 1  # --metric: judged besides
    assert family_size(CASES, METRICS) == CASES * METRICS and family_size(0, METRICS) == 1
    assert Family(10, SUITE_ALPHA).at_least(84) == Family(84, SUITE_ALPHA)
    assert Family(300, SUITE_ALPHA).at_least(84).verdicts == 300
    assert "any of its 252 verdicts (42 cases" in Family(252, SUITE_ALPHA).text(42) and "10%" in Family(252, 0.1).text()


def test_a_repeat_must_be_sure_at_the_suites_share_for_a_small_change_to_count() -> None:
    """The same two readings: a case alone counts the change; in a suite of 42 cases x 6 metrics the repeat is
    not sure enough yet and takes more rounds."""
    alone = judge(Question(1.05, 30), [part(SMALL), part(AGAIN)])
    assert alone.settled and alone.decision.verdict == "regressed"
    suite = judge(Question(1.05, 30, family=Family(CASES * METRICS, SUITE_ALPHA)), [part(SMALL), part(AGAIN)])
    assert not suite.settled and suite.repeating and suite.decision.verdict == "inconclusive"
    more = judge(Question(1.05, 30, family=Family(CASES * METRICS, SUITE_ALPHA)), [part(SMALL), part(AGAIN * 2)])
    assert more.settled and more.decision.verdict == "regressed"


def test_a_large_change_counts_without_a_repeat_once_sure_at_the_suites_share() -> None:
    """2x at 3 rounds counts at once for a case alone; in a suite it first takes more rounds of the same pair of
    sessions (``confirming``, never a repeat); at its plan's end without that it is repeated instead."""
    planted = [2.0, 2.02, 1.98]
    assert judge(Question(1.10, 30), [part(planted)]).settled
    question = suite_question(CASES * METRICS)
    first = judge(question, [part(planted)])
    assert (first.settled, first.repeating, first.confirming) == (False, False, True)
    assert "counts once its interval at 99.98% excludes 1 too" in first.decision.note
    later = judge(question, [part([*planted, 2.0, 2.01, 1.99, 2.0, 2.0])])
    assert later.settled and later.decision.verdict == "regressed" and later.first == 8
    at_the_end = judge(Question(1.10, 4, family=question.family), [part([2.2, 1.8, 2.1, 1.9])])
    assert at_the_end.repeating and not at_the_end.confirming and at_the_end.first == 4


def _verdict(kind: str) -> Verdict:
    return Verdict("fp", "w", {}, "runtime_s", kind)  # type: ignore[arg-type]


def test_a_comparison_is_regressed_undecided_or_unchanged_and_one_that_measured_nothing_is_undecided() -> None:
    assert state([_verdict("unchanged"), _verdict("newly-failing"), _verdict("inconclusive")]) == "regressed"
    assert state([_verdict("unchanged"), _verdict("inconclusive")]) == "undecided"
    assert state([_verdict("unchanged"), _verdict("improved")]) == "unchanged"
    assert state([_verdict("unchanged")], not_measured=3) == "undecided"
    assert state([]) == "undecided"


# -- simulated ----------------------------------------------------------------------------------


def _first_reading(
    rng: np.random.Generator, question: Question, sd: float, effect: float = 1.0
) -> tuple[Judged, Rounds]:
    """One pair of sessions' rounds (true ratio ``effect``, per-round spread ``sd``), judged at every look as
    the lockstep does, until the reading counts or waits for its repeat in a fresh pair; and those rounds."""
    ratios = np.exp(rng.normal(math.log(effect), sd, question.max_rounds))
    for rounds in looks(question.max_rounds):
        judged = judge(question, [part(ratios[:rounds])])
        if judged.settled or judged.repeating:
            break
    return judged, part(ratios[:rounds])


def _repeat(rng: np.random.Generator, question: Question, first: Rounds, sd: float, effect: float = 1.0) -> Judged:
    """The fresh pair's rounds after the first reading ``first`` (a change), until the case is settled."""
    ratios = np.exp(rng.normal(math.log(effect), sd, question.max_rounds))
    for rounds in looks(question.max_rounds):
        judged = judge(question, [first, part(ratios[:rounds])])
        if judged.settled:
            break
    return judged


def _false_alarm(rng: np.random.Generator, question: Question, sd: float, trials: int) -> tuple[float, float, float]:
    """One unchanged verdict's chance of ending changed, and its parts: (the chance, a first reading's chance of
    a change to repeat, a repeat's chance of agreeing). Pairs of sessions are independent (the repeat's
    premise), so a repeated false alarm is the product of its readings' chances (one side; the other mirrors
    it); a change counted alone adds its own."""
    firsts = [_first_reading(rng, question, sd)[0] for _ in range(trials)]
    flagged = sum(j.repeating for j in firsts) / trials
    alone = sum(j.settled and j.decision.verdict in ("regressed", "improved") for j in firsts) / trials
    repeats = [_repeat(rng, question, part(SMALL), sd) for _ in range(trials)] if flagged else []
    agrees = sum(j.decision.verdict == "regressed" for j in repeats) / trials if repeats else 0.0
    return alone + flagged * agrees, flagged, agrees


def test_an_unchanged_suite_blames_some_case_at_most_one_time_in_ten() -> None:
    """42 cases x 2 metrics (runtime at a noisy hour's spread, memory), A/A: each verdict's chance of a false
    alarm, simulated through the real rule, makes the suite's chance of any at most 10%; the suite's share
    lets a repeat agree no more often than a case alone does."""
    question = suite_question(CASES * 2)
    rng = np.random.default_rng(20261127)
    runtime, flagged, agrees = _false_alarm(rng, question, RUNTIME_SD, 800)
    memory, _, _ = _false_alarm(rng, question, MEMORY_SD, 200)
    suite = 1.0 - (1.0 - runtime) ** CASES * (1.0 - memory) ** CASES
    assert flagged > 0.0 and suite <= SUITE_ALPHA, (runtime, flagged, agrees, memory)
    alone_rng = np.random.default_rng(20261127)
    _, _, case_agrees = _false_alarm(alone_rng, Question(1.10, 30), RUNTIME_SD, 800)
    assert agrees <= case_agrees


def test_a_planted_1_20x_in_one_case_of_a_suite_is_still_called() -> None:
    """In a suite of 42 cases x 6 metrics, at a noisy hour's spread: regressed in every simulated comparison."""
    question = suite_question(CASES * METRICS)
    rng = np.random.default_rng(43)
    called = 0
    for _ in range(30):
        judged, rounds = _first_reading(rng, question, RUNTIME_SD, 1.20)
        if judged.repeating:
            judged = _repeat(rng, question, rounds, RUNTIME_SD, 1.20)
        called += judged.settled and judged.decision.verdict == "regressed"
    assert called == 30
