"""Where a budgeted comparison's rounds go (`daskbench.judge.budget`): planted cases whose answer can be
worked out by hand."""

from __future__ import annotations

import math

import pytest

from daskbench.judge.budget import (
    DEFAULT_SPREAD,
    MIN_PART_SECONDS,
    OpenCase,
    allocate,
    part_seconds,
    rounds_to_decide,
    spread,
    suite_spread,
)
from daskbench.judge.sequential import spending
from daskbench.judge.stats import student_t_ppf


def case(key: str, ratios: list[float], seconds: float = 2.0, floor: float = 1.10, most: int = 30,
         boundary: float | None = None) -> OpenCase:  # fmt: skip
    return OpenCase(key, tuple(math.log(r) for r in ratios), seconds, most, floor, boundary)


def test_a_plain_2x_change_with_a_small_spread_is_decided_at_the_next_look() -> None:
    """Mean log 2 (0.69), spread about 0.02: at 4 rounds the half-width is a few hundredths, far inside."""
    assert rounds_to_decide(case("big", [2.0, 2.05, 1.95])) == 4


def test_the_estimate_is_the_first_look_whose_projected_half_width_fits_the_gap_worked_by_hand() -> None:
    """A/A-like case: mean log 0, spread s; unchanged needs the half-width below log(1.10) = 0.0953.
    The first look k with q_k * s / sqrt(k) < 0.0953 is the answer; computed here from the same formula."""
    ratios = [1.05, 0.95, 1.08, 0.93, 1.0]
    logs = [math.log(r) for r in ratios]
    s = spread(logs)
    mean = sum(logs) / len(logs)
    budget = spending(30)
    expected = next(
        k
        for k in budget
        if k > 5 and student_t_ppf(1 - budget[k] / 2, k - 1) * s / math.sqrt(k) < math.log(1.10) - abs(mean)
    )
    assert rounds_to_decide(case("aa", ratios)) == expected


def test_a_case_no_look_could_decide_has_no_estimate() -> None:
    """A 1.10x change right at the floor with a spread of 0.3: no look up to 30 rounds excludes both ends."""
    assert rounds_to_decide(case("noisy", [1.5, 0.8, 1.1, 1.45, 0.85])) is None


def test_a_step_judged_against_a_far_boundary_decides_at_once_where_the_floor_rule_would_not() -> None:
    """The bisection case of the issue: ratio about 0.7-1.4 (noisy), bad end 25x (boundary 3.16)."""
    noisy_good = [0.68, 1.4, 0.9, 1.2, 0.75]
    assert rounds_to_decide(case("step", noisy_good, boundary=math.sqrt(10.0))) == 6
    assert rounds_to_decide(case("step", noisy_good)) is None


def test_spread_falls_back_below_two_rounds() -> None:
    assert spread([]) == DEFAULT_SPREAD and spread([0.1]) == DEFAULT_SPREAD
    assert spread([0.0, 0.2]) == pytest.approx(0.1414, abs=1e-3)


def test_allocate_gives_the_cheapest_cases_first_while_the_budget_holds() -> None:
    cases = [
        case("slow-aa", [1.02, 0.97, 1.01], seconds=60.0),
        case("cheap-aa", [1.02, 0.97, 1.01], seconds=2.0),
        case("hopeless", [1.5, 0.8, 1.1, 1.45, 0.85], seconds=1.0),
    ]
    chosen = allocate(cases, seconds_left=100.0)
    assert [a.key for a in chosen] == ["cheap-aa", "hopeless"]  # slow-aa would cost more than the budget
    cheap = chosen[0]
    assert cheap.rounds == rounds_to_decide(cases[1]) and cheap.seconds == (cheap.rounds - 3) * 2.0
    assert chosen[1].rounds == 30  # no estimate: up to its most rounds, last


def test_allocate_always_continues_the_cheapest_while_any_time_is_left() -> None:
    slow = case("slow", [1.02, 0.97, 1.01], seconds=60.0)
    assert [a.key for a in allocate([slow], seconds_left=10.0)] == ["slow"]
    assert allocate([slow], seconds_left=0.0) == []


def test_a_part_is_planned_on_half_the_budget_left_but_not_on_less_than_its_minimum() -> None:
    """16 min left: a part of 8; 3 min left: the 2-minute minimum; 1 min left: all of it."""
    assert part_seconds(960.0) == 480.0
    assert part_seconds(180.0) == MIN_PART_SECONDS == 120.0
    assert part_seconds(60.0) == 60.0


def test_a_part_of_half_the_budget_takes_the_cases_closest_to_deciding_and_leaves_the_rest_for_later() -> None:
    """Four A/A-like cases of 10 s a round: each alone fits the budget left, all four do not fit its half, so
    the part takes the two with the smallest spread (the cheapest to decide), the next part plans again."""
    tight = [case(f"tight-{n}", [1.02, 0.98, 1.01], seconds=10.0) for n in range(2)]
    loose = [case(f"loose-{n}", [1.08, 0.93, 1.04], seconds=10.0) for n in range(2)]
    left = sum(a.seconds for a in allocate([*tight, *loose], math.inf))  # 2 x 20 s and 2 x 120 s: 280 s
    assert len(allocate([*loose, *tight], left)) == 4  # planned on the whole budget: every case at once
    chosen = allocate([*loose, *tight], part_seconds(left))
    assert sorted(a.key for a in chosen) == ["tight-0", "tight-1"], left


def test_a_case_at_its_most_rounds_gets_no_more() -> None:
    assert allocate([case("done", [1.5, 0.8, 1.1], most=3)], seconds_left=1000.0) == []


def test_an_open_case_checks_itself() -> None:
    with pytest.raises(ValueError, match="floor >= 1"):
        OpenCase("x", (), 1.0, 30, 0.9)


def test_a_repeat_not_begun_is_projected_from_its_first_reading_from_round_zero() -> None:
    """A 1.10x first reading (5 rounds, spread 0.02) waiting for its repeat: the repeat is expected to decide at
    a look of its own from 3 rounds on, not after the first reading's 5 (and not as an unknown case would)."""
    logs = tuple(math.log(r) for r in (1.12, 1.08, 1.10, 1.11, 1.09))
    fresh = OpenCase("c", logs, 1.0, 30, 1.05, done=0)
    continued = OpenCase("c", logs, 1.0, 30, 1.05)
    unknown = OpenCase("c", (), 1.0, 30, 1.05)
    found = rounds_to_decide(fresh)
    assert found is not None and 3 <= found <= 5
    assert (rounds_to_decide(continued) or 0) > 5
    assert (rounds_to_decide(unknown) or 99) > found
    assert allocate([fresh], 600.0)[0].rounds == found


def test_a_case_hopeless_on_its_screening_rounds_alone_is_projected_with_the_suites_typical_spread() -> None:
    """Four tidy A/A-like cases (spread about 0.03) and one whose three screening rounds hold wild ones (1.00,
    1.35, 0.75: mean about 1.00, spread 0.29): on its own spread no look decides it, so it would wait after every
    case; with the suite's typical spread (the median: the tidy cases') it is given the rounds to its projected
    look, within a part. Once it has more rounds than its screening and is still hopeless, its own spread stands:
    last, to its most rounds."""
    tidy = [case(f"tidy-{n}", [1.02, 0.98, 1.01], seconds=2.0) for n in range(4)]
    wild = case("wild", [1.0, 1.35, 0.75], seconds=2.0)
    assert rounds_to_decide(wild) is None
    typical = suite_spread([*tidy, wild])
    assert typical == pytest.approx(spread(tidy[0].log_ratios))
    expected = rounds_to_decide(wild, sd=typical)
    assert expected is not None and expected < 30
    chosen = {a.key: a for a in allocate([*tidy, wild], seconds_left=600.0)}
    assert chosen["wild"].rounds == expected and chosen["wild"].seconds == (expected - 3) * 2.0
    later = case("wild", [1.0, 1.35, 0.75, 1.0, 1.3, 0.78], seconds=2.0)
    assert rounds_to_decide(later) is None
    planned = allocate([*tidy, later], seconds_left=600.0)
    assert planned[-1].key == "wild" and planned[-1].rounds == 30


def test_the_suites_typical_spread_is_read_from_cases_with_their_screening_rounds() -> None:
    assert suite_spread([case("new", [1.1])]) is None
    three = [case("a", [1.0, 1.1, 0.9]), case("b", [1.0, 1.02, 0.98]), case("c", [1.0, 1.3, 0.7])]
    assert suite_spread(three) == pytest.approx(spread(three[0].log_ratios))
