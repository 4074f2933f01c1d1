"""Rounds until decided (`daskbench.judge.sequential`): planted answers, and the error rate of
peeking after every look checked over many simulated A/A comparisons (seeded)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from daskbench.judge.sequential import (
    ALPHA,
    MAX_ROUNDS,
    boundary_between,
    classify,
    classify_against,
    is_decided,
    looks,
    sequential_decision,
    spending,
)


def test_looks_follow_the_grid_and_end_at_the_most_rounds() -> None:
    assert looks(30) == (3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 26, 30)
    assert looks(7) == (3, 4, 5, 6, 7)
    assert looks(2) == (2,)


def test_the_spent_error_adds_up_to_alpha_and_grows_towards_the_last_look() -> None:
    spent = spending(30)
    assert sum(spent.values()) == pytest.approx(ALPHA)
    assert spent[3] == pytest.approx(ALPHA * 0.1**1.5)  # (3/30)^1.5 of the total at the first look
    assert spent[30] > spent[26] > spent[3]


def test_a_change_at_the_floor_shown_real_is_regressed_not_a_coin_flip() -> None:
    """Interval 1.02-1.18 around a 1.10x change, floor 1.10: real (above 1), may matter (beyond 1.10)."""
    assert classify(1.02, 1.18, 1.10) == ("regressed", "")


def test_an_interval_inside_the_band_is_unchanged_and_a_real_small_change_says_so() -> None:
    assert classify(0.97, 1.04, 1.10) == ("unchanged", "")
    verdict, note = classify(1.01, 1.04, 1.10)
    assert verdict == "unchanged" and "real change, smaller than the floor 1.10" in note


def test_an_interval_spanning_1_and_the_floor_is_not_decided() -> None:
    verdict, note = classify(0.98, 1.15, 1.10)
    assert verdict == "inconclusive" and "more rounds" in note


def test_improved_is_the_mirror_of_regressed() -> None:
    assert classify(0.80, 0.97, 1.10) == ("improved", "")


def test_every_round_1_5x_slower_is_regressed_at_the_first_look() -> None:
    a = [1.0, 1.02, 0.98]
    b = [1.5 * x for x in a]
    decision = sequential_decision(a, b, 1.10)
    assert decision.verdict == "regressed" and decision.ratio == pytest.approx(1.5)
    assert decision.ci_low is not None and decision.ci_low > 1.0


def test_two_rounds_are_before_the_first_look() -> None:
    decision = sequential_decision([1.0, 1.0], [2.0, 2.1], 1.10)
    assert decision.verdict == "inconclusive" and "first look is at 3" in decision.note


def test_the_interval_only_narrows_as_rounds_are_added() -> None:
    rng = np.random.default_rng(7)
    a = list(np.exp(rng.normal(0, 0.05, 30)))
    b = [x * math.exp(rng.normal(0.08, 0.05)) for x in a]
    widths = []
    for n in (5, 10, 15, 30):
        d = sequential_decision(a[:n], b[:n], 1.10)
        assert d.ci_low is not None and d.ci_high is not None
        widths.append(d.ci_high - d.ci_low)
    assert widths == sorted(widths, reverse=True)


def _stops(rng: np.random.Generator, effect: float, sd: float, floor: float) -> tuple[str, int]:
    """One simulated comparison read at every look: the verdict where it stopped, and its rounds."""
    a = np.exp(rng.normal(0.0, 0.02, MAX_ROUNDS))
    b = a * np.exp(rng.normal(math.log(effect), sd, MAX_ROUNDS))
    for n in looks(MAX_ROUNDS):
        decision = sequential_decision(list(a[:n]), list(b[:n]), floor)
        if is_decided(decision):
            return decision.verdict, n
    return decision.verdict, MAX_ROUNDS


def test_peeking_at_every_look_keeps_a_a_false_alarms_under_alpha() -> None:
    """600 simulated A/A comparisons with per-round sd 0.10, stopped at the first decided look:
    at most 5% come out changed (the union bound promises it; the observed rate is ~1-2%)."""
    rng = np.random.default_rng(20_261_123)
    verdicts = [_stops(rng, 1.0, 0.10, 1.05)[0] for _ in range(600)]
    changed = sum(v in ("regressed", "improved") for v in verdicts) / len(verdicts)
    assert changed <= ALPHA


def test_a_true_1_10x_change_with_sd_0_05_is_caught_nearly_always_within_12_rounds() -> None:
    """The arithmetic behind the power targets, on simulated rounds (the real figures come from measure/power)."""
    rng = np.random.default_rng(11)
    runs = [_stops(rng, 1.10, 0.05, 1.05) for _ in range(200)]
    caught = sum(v == "regressed" for v, _ in runs) / len(runs)
    assert caught >= 0.95
    assert float(np.median([n for _, n in runs])) <= 12


def test_the_boundary_is_the_geometric_midpoint_of_1_and_the_bad_ends_lower_bound() -> None:
    assert boundary_between(10.0, 1.10) == pytest.approx(math.sqrt(10.0))
    assert boundary_between(1.16, 1.10) is None  # sqrt(1.16) = 1.077 is inside the floor: the floor rule hunts it
    assert boundary_between(None, 1.10) is None and boundary_between(0.9, 1.10) is None


def test_a_step_like_the_good_end_is_decided_against_a_far_boundary_where_the_floor_rule_is_not() -> None:
    """The stalled step of the issue: interval 0.75-1.61 after many rounds; the bad end was 25x (low 10)."""
    assert classify(0.75, 1.61, 1.10)[0] == "inconclusive"
    verdict, note = classify_against(0.75, 1.61, math.sqrt(10.0), 1.10)
    assert verdict == "unchanged" and "like the good end" in note and "3.16x" in note


def test_a_step_like_the_bad_end_is_regressed_and_one_straddling_the_boundary_is_not_decided() -> None:
    boundary = math.sqrt(10.0)
    assert classify_against(8.0, 40.0, boundary, 1.10)[0] == "regressed"
    assert classify_against(2.0, 9.0, boundary, 1.10)[0] == "inconclusive"
    assert classify_against(0.5, 0.8, boundary, 1.10)[0] == "improved"


def test_the_boundary_rule_decides_a_noisy_good_step_the_floor_rule_cannot() -> None:
    """Per-round ratios 0.68-1.4 (spread 0.3): after 5 rounds the interval (0.29-3.12) lies below the
    boundary 3.16, while against the floor 1.10 it would need its half-width under 0.1 (hundreds of rounds)."""
    a = [1.0] * 5
    b = [0.68, 1.4, 0.9, 1.2, 0.75]
    floor_rule = sequential_decision(a, b, 1.10)
    boundary_rule = sequential_decision(a, b, 1.10, boundary=math.sqrt(10.0))
    assert floor_rule.verdict == "inconclusive" and boundary_rule.verdict == "unchanged"


def test_a_a_pairs_are_called_bad_against_the_boundary_at_most_alpha_of_the_time() -> None:
    """The boundary rule only decides 'like bad' when an interval misses 1 from above (boundary > 1), so its
    false alarms are bounded as the floor rule's: simulated A/A steps, spread 0.3, boundary 1.2."""
    rng = np.random.default_rng(7)
    called = 0
    trials = 400
    for _ in range(trials):
        logs = rng.normal(0.0, 0.3, MAX_ROUNDS)
        a = [1.0] * MAX_ROUNDS
        b = [math.exp(x) for x in logs]
        for n in looks(MAX_ROUNDS):
            decision = sequential_decision(a[:n], b[:n], 1.10, boundary=1.2)
            if is_decided(decision):
                called += decision.verdict == "regressed"
                break
    assert called / trials <= ALPHA
