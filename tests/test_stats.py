"""daskbench.judge.stats: planted answers on seeded data, and agreement with scipy."""

from __future__ import annotations

import math
from collections import Counter
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats as sp

from daskbench.judge import stats
from tests.helpers import MIB

FLOOR = 1.10


def lognormal(rng: np.random.Generator, n: int, sigma: float, ratio: float = 1.0, scale: float = 10.0) -> list[float]:
    """n values around ``scale * ratio`` with multiplicative noise of ``sigma`` (log sd)."""
    return (scale * ratio * np.exp(rng.normal(0.0, sigma, n))).tolist()


def ab_verdicts(
    ratio: float, sigma: float, n: int, *, paired: bool, trials: int, seed: int, n_cand: int | None = None
) -> Counter[str]:
    rng = np.random.default_rng(seed)
    found: Counter[str] = Counter()
    for _ in range(trials):
        base, cand = lognormal(rng, n, sigma), lognormal(rng, n_cand or n, sigma, ratio)
        found[stats.ab_decision(base, cand, FLOOR, paired=paired).verdict] += 1
    return found


def history_verdicts(ratio: float, sigma: float, n: int, *, trials: int, seed: int) -> Counter[str]:
    rng = np.random.default_rng(seed)
    found: Counter[str] = Counter()
    for _ in range(trials):
        history, cand = lognormal(rng, n, sigma), lognormal(rng, 1, sigma, ratio)
        found[stats.history_decision(history, cand, FLOOR).verdict] += 1
    return found


# -- against scipy ------------------------------------------------------------------------


@pytest.mark.parametrize("q", [0.6, 0.9, 0.975, 0.995, 0.025])
def test_student_t_ppf_matches_closed_forms(q: float) -> None:
    """df 1 is Cauchy, tan(pi (q - 1/2)); df 2 is (2q - 1) / sqrt(2q(1 - q)); 0.975 at df 1000 is near 1.96."""
    assert stats.student_t_ppf(q, 1) == pytest.approx(math.tan(math.pi * (q - 0.5)), rel=1e-12)
    assert stats.student_t_ppf(q, 2) == pytest.approx((2 * q - 1) / math.sqrt(2 * q * (1 - q)), rel=1e-12)
    assert stats.student_t_ppf(0.975, 1000) == pytest.approx(1.962339, abs=1e-6)
    assert stats.student_t_ppf(0.975, 1e9) == pytest.approx(NormalDist().inv_cdf(0.975), rel=1e-8)


@pytest.mark.parametrize(("q", "df"), [(0.0, 3), (1.0, 3), (0.5, 0), (0.5, -1)])
def test_student_t_ppf_refuses_values_outside_its_domain(q: float, df: float) -> None:
    """A quantile needs 0 < q < 1 and df > 0; anything else is a ValueError, not a nan."""
    with pytest.raises(ValueError, match="needs 0 < q < 1 and df > 0"):
        stats.student_t_ppf(q, df)


def test_mad_scale_matches_scipy_normal_scale() -> None:
    """mad_scale is scipy's median_abs_deviation(scale='normal') (1.4826 x MAD)."""
    data = np.random.default_rng(1).lognormal(0.0, 0.3, 17)
    assert stats.mad_scale(data.tolist()) == pytest.approx(sp.median_abs_deviation(data, scale="normal"), rel=1e-12)
    assert abs(stats.MAD_TO_SD - 1.4826) < 1e-4


def test_paired_t_interval_matches_scipy_ttest_rel() -> None:
    """The paired interval is exp of scipy's ttest_rel confidence interval on the logs."""
    rng = np.random.default_rng(2)
    base, cand = lognormal(rng, 5, 0.05), lognormal(rng, 5, 0.05, 1.2)
    expected = sp.ttest_rel(np.log(cand), np.log(base)).confidence_interval(0.95)
    found = stats.paired_t_interval(base, cand)
    assert (found.low, found.high) == pytest.approx((math.exp(expected.low), math.exp(expected.high)), rel=1e-9)
    assert found.ratio == pytest.approx(math.exp(np.mean(np.log(cand) - np.log(base))))


def test_welch_interval_matches_scipy_ttest_ind() -> None:
    """The unpaired interval is exp of scipy's Welch (equal_var=False) interval on the logs."""
    rng = np.random.default_rng(3)
    base, cand = lognormal(rng, 4, 0.03), lognormal(rng, 6, 0.08, 1.1)
    expected = sp.ttest_ind(np.log(cand), np.log(base), equal_var=False).confidence_interval(0.95)
    found = stats.welch_t_interval(base, cand)
    assert (found.low, found.high) == pytest.approx((math.exp(expected.low), math.exp(expected.high)), rel=1e-9)


def test_prediction_interval_uses_the_spread_of_the_side_with_repeats() -> None:
    """1 candidate value vs 4 baseline values: mean log diff +- t(0.975, 3) * s * sqrt(1 + 1/4)."""
    base, cand = [10.0, 10.4, 9.7, 10.1], [12.0]
    logs = np.log(base)
    half = sp.t.ppf(0.975, 3) * np.std(logs, ddof=1) * math.sqrt(1 + 1 / 4)
    centre = math.log(12.0) - float(np.mean(logs))
    found = stats.prediction_t_interval(base, cand)
    assert (found.low, found.high) == pytest.approx((math.exp(centre - half), math.exp(centre + half)), rel=1e-9)


@pytest.mark.parametrize("paired", [True, False])
def test_bootstrap_interval_agrees_with_scipy_percentile_bootstrap(paired: bool) -> None:
    """Our percentile bootstrap of the median ratio lands where scipy.stats.bootstrap does."""
    rng = np.random.default_rng(4)
    base, cand = lognormal(rng, 25, 0.1), lognormal(rng, 25, 0.1, 1.2)
    b, c = np.log(base), np.log(cand)
    if paired:
        data, statistic = (c - b,), np.median
    else:
        data, statistic = (c, b), lambda x, y, axis: np.median(x, axis=axis) - np.median(y, axis=axis)
    ref = sp.bootstrap(
        data, statistic, paired=False, n_resamples=20_000, method="percentile", rng=np.random.default_rng(5)
    )
    found = stats.bootstrap_ratio_interval(base, cand, paired=paired, n_resamples=20_000)
    expected = (math.exp(ref.confidence_interval.low), math.exp(ref.confidence_interval.high))
    assert (found.low, found.high) == pytest.approx(expected, rel=0.015)


def test_bootstrap_is_reproducible_from_its_fixed_seed() -> None:
    """Same data, same interval: the bootstrap draws from a seeded numpy Generator."""
    rng = np.random.default_rng(6)
    base, cand = lognormal(rng, 12, 0.1), lognormal(rng, 12, 0.1)
    first = stats.bootstrap_ratio_interval(base, cand, paired=False)
    assert stats.bootstrap_ratio_interval(base, cand, paired=False) == first


# -- which interval, and the interval rule --------------------------------------------------


@pytest.mark.parametrize(
    ("n_base", "n_cand", "paired", "method"),
    [
        (3, 3, True, "paired t"),
        (3, 3, False, "Welch t"),
        (3, 5, True, "Welch t"),
        (1, 4, False, "prediction"),
        (4, 1, False, "prediction"),
        (12, 12, True, "bootstrap"),
        (10, 14, False, "bootstrap"),
    ],
)
def test_ratio_interval_picks_the_documented_method(n_base: int, n_cand: int, paired: bool, method: str) -> None:
    """t on logs below 10 per side (paired if asked and sizes match), bootstrap from 10, prediction for 1 vs n."""
    rng = np.random.default_rng(7)
    found = stats.ratio_interval(lognormal(rng, n_base, 0.05), lognormal(rng, n_cand, 0.05), paired=paired)
    assert found is not None and method in found.method


def test_ratio_interval_is_none_for_one_value_per_side() -> None:
    """1 vs 1 has no spread, so no interval."""
    assert stats.ratio_interval([10.0], [11.0]) is None


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1.15, 1.40, "regressed"),
        (0.70, 0.85, "improved"),
        (0.95, 1.08, "unchanged"),
        (1.05, 1.40, "inconclusive"),
        (0.80, 0.95, "inconclusive"),
        (0.85, 1.20, "inconclusive"),
    ],
)
def test_classify_interval_needs_the_whole_interval_beyond_the_floor(low: float, high: float, expected: str) -> None:
    """regressed iff low > floor, improved iff high < 1/floor, unchanged iff inside the band."""
    assert stats.classify_interval(low, high, FLOOR) == expected


# -- A/B: planted answers ---------------------------------------------------------------


def test_ab_finds_a_planted_30_percent_step_with_three_repeats() -> None:
    """A 1.3x slowdown with 3% noise and 3 repeats a side is 'regressed' in nearly every trial."""
    found = ab_verdicts(1.3, 0.03, 3, paired=False, trials=200, seed=10)
    assert found["regressed"] >= 190
    assert found["improved"] == found["unchanged"] == 0


def test_ab_finds_a_planted_30_percent_step_with_paired_repeats() -> None:
    """Paired, 5 repeats, 5% noise: the 1.3x step is found in nearly every trial."""
    found = ab_verdicts(1.3, 0.05, 5, paired=True, trials=200, seed=11)
    assert found["regressed"] >= 190


def test_ab_finds_a_planted_30_percent_speedup() -> None:
    """The mirror image: a run 1.3x faster is 'improved'."""
    found = ab_verdicts(1 / 1.3, 0.03, 5, paired=False, trials=200, seed=12)
    assert found["improved"] >= 195


def test_ab_bootstrap_finds_a_planted_step_with_many_repeats() -> None:
    """12 pairs (bootstrap path) find a 1.3x step despite 10% noise."""
    found = ab_verdicts(1.3, 0.10, 12, paired=True, trials=40, seed=13)
    assert found["regressed"] >= 36


@pytest.mark.parametrize(("sigma", "paired"), [(0.03, False), (0.05, True)])
def test_ab_pure_noise_below_the_floor_almost_never_changes(sigma: float, paired: bool) -> None:
    """A/A with 3 repeats and noise well under the floor: a change in under 1% of 600 seeded trials."""
    found = ab_verdicts(1.0, sigma, 3, paired=paired, trials=600, seed=14)
    assert found["regressed"] + found["improved"] <= 6


@pytest.mark.parametrize(("sigma", "paired"), [(0.10, False), (0.20, True), (0.20, False)])
def test_ab_noisy_aa_false_positives_stay_under_the_nominal_rate(sigma: float, paired: bool) -> None:
    """A/A with noise as big as the floor: each direction stays under the interval's one-sided 2.5%."""
    found = ab_verdicts(1.0, sigma, 3, paired=paired, trials=600, seed=14)
    assert found["regressed"] <= 0.025 * 600
    assert found["improved"] <= 0.025 * 600


def test_ab_quiet_aa_comparison_is_unchanged() -> None:
    """With 1% noise and 5 repeats, identical settings come out 'unchanged'."""
    found = ab_verdicts(1.0, 0.01, 5, paired=False, trials=100, seed=15)
    assert found["unchanged"] >= 98


def test_ab_single_repeat_beyond_the_floor_is_inconclusive_with_advice() -> None:
    """1 vs 1 repeat: a 1.5x change has no interval, so it is inconclusive and the note says how to confirm."""
    decision = stats.ab_decision([10.0], [15.0], FLOOR)
    assert decision.verdict == "inconclusive"
    assert decision.ratio == pytest.approx(1.5)
    assert decision.ci_low is None and decision.ci_high is None
    assert "--repeat 3" in decision.note and "--history" in decision.note


def test_ab_single_repeat_within_the_floor_is_unchanged() -> None:
    """1 vs 1 repeat within the floor is 'unchanged', with a note that no interval backs it."""
    decision = stats.ab_decision([10.0], [10.4], FLOOR)
    assert decision.verdict == "unchanged"
    assert "no interval" in decision.note


def test_ab_single_candidate_against_several_baseline_runs_can_regress() -> None:
    """One repeat against a 5-value baseline: a 1.5x step is 'regressed' via the prediction interval."""
    decision = stats.ab_decision([10.0, 10.3, 9.8, 10.1, 9.9], [15.0], FLOOR)
    assert decision.verdict == "regressed"
    assert decision.ci_low is not None and decision.ci_low > FLOOR


def test_ab_zero_values_do_not_crash() -> None:
    """All zeros is 'unchanged' (ratio 1); a zero on one side only is 'inconclusive'."""
    assert stats.ab_decision([0.0, 0.0], [0.0], FLOOR).verdict == "unchanged"
    assert stats.ab_decision([0.0, 1.0], [2.0], FLOOR).verdict == "inconclusive"


# -- history: planted answers -----------------------------------------------------------------


def test_history_finds_a_planted_30_percent_step() -> None:
    """20 runs of history at 3% noise, then a 1.3x run: 'regressed' with z above the threshold."""
    found = history_verdicts(1.3, 0.03, 20, trials=300, seed=20)
    assert found["regressed"] >= 297
    assert history_verdicts(1.3, 0.05, 20, trials=300, seed=20)["regressed"] >= 240  # 5% noise: most, not all
    rng = np.random.default_rng(21)
    decision = stats.history_decision(lognormal(rng, 20, 0.03), [13.0], FLOOR)
    assert decision.verdict == "regressed"
    assert decision.score is not None and decision.score > stats.Z_THRESHOLD
    assert decision.ratio == pytest.approx(1.3, rel=0.05)


def test_history_finds_a_planted_30_percent_speedup() -> None:
    """The mirror image in history mode is 'improved'."""
    found = history_verdicts(1 / 1.3, 0.03, 20, trials=300, seed=22)
    assert found["improved"] >= 297


@pytest.mark.parametrize("sigma", [0.02, 0.05, 0.10, 0.20])
def test_history_pure_noise_rarely_regresses(sigma: float) -> None:
    """A/A against 20 runs of history: regressed or improved in under 1% of 1000 seeded trials."""
    found = history_verdicts(1.0, sigma, 20, trials=1000, seed=23)
    assert found["regressed"] + found["improved"] <= 10


def test_history_stays_inconclusive_until_enough_runs() -> None:
    """Fewer than MIN_HISTORY runs: even a 2x change is only 'inconclusive', with a note."""
    decision = stats.history_decision([10.0] * (stats.MIN_HISTORY - 1), [20.0], FLOOR)
    assert decision.verdict == "inconclusive"
    assert f"{stats.MIN_HISTORY} needed" in decision.note


def test_history_real_but_small_shift_is_unchanged() -> None:
    """A 5% shift on 0.5% noise is real (large z) but within the floor, so 'unchanged' with a note."""
    history = lognormal(np.random.default_rng(24), 20, 0.005)
    decision = stats.history_decision(history, [10.5], FLOOR)
    assert decision.verdict == "unchanged"
    assert decision.score is not None and decision.score > stats.Z_THRESHOLD
    assert "within the floor" in decision.note


def test_history_change_inside_the_noise_is_inconclusive() -> None:
    """A 1.2x value against 30%-noisy history is beyond the floor but not the z threshold."""
    history = lognormal(np.random.default_rng(25), 20, 0.30)
    decision = stats.history_decision(history, [12.0], FLOOR)
    assert decision.verdict == "inconclusive"
    assert "noise" in decision.note


def test_history_uses_the_candidate_median_over_repeats() -> None:
    """The candidate is summarised by its median, so one straggler repeat does not flag it."""
    history = lognormal(np.random.default_rng(26), 20, 0.02)
    assert stats.history_decision(history, [10.1, 30.0, 9.9], FLOOR).verdict == "unchanged"


def test_robust_z_with_no_spread_is_infinite_for_any_change() -> None:
    """A constant history makes any difference infinitely surprising; the floor then decides."""
    assert stats.robust_z([2.0] * 10, 2.5) == math.inf
    assert stats.robust_z([2.0] * 10, 1.5) == -math.inf
    assert stats.robust_z([2.0] * 10, 2.0) == 0.0
    assert stats.history_decision([10.0] * 12, [10.5], FLOOR).verdict == "unchanged"
    assert stats.history_decision([10.0] * 12, [12.0], FLOOR).verdict == "regressed"


def test_run_noise_needs_three_runs_else_assumes_the_default() -> None:
    """Fewer than 3 runs give the documented default; 3+ give the sd of the log run medians."""
    from daskbench.judge.stats import default_run_sd, run_noise

    assert run_noise([1.0, 1.2], default_run_sd("runtime_s")) == stats.RunNoise(default_run_sd("runtime_s"), 0)
    assert run_noise([1.0], default_run_sd("peak_memory_bytes")).sd == 0.03
    noise = run_noise([1.0, 1.1, 0.9, 1.05], default_run_sd("runtime_s"))
    assert noise.runs == 4
    assert noise.sd == pytest.approx(float(np.std(np.log([1.0, 1.1, 0.9, 1.05]), ddof=1)))


def test_run_noise_widens_the_interval_in_quadrature() -> None:
    """Adding run noise keeps the ratio, widens both bounds, and matches the t-quantile formula."""
    from daskbench.judge.stats import Interval, RunNoise, with_run_noise

    narrow = Interval(1.3, 1.25, 1.35, "t")
    wide = with_run_noise(narrow, 1.3, RunNoise(0.05, 6))
    extra = sp.t.ppf(0.975, 5) * np.sqrt(2) * 0.05
    assert wide.ratio == pytest.approx(1.3)
    assert np.log(1.3 / wide.low) == pytest.approx(np.hypot(np.log(1.3 / 1.25), extra))
    assert np.log(wide.high / 1.3) == pytest.approx(np.hypot(np.log(1.35 / 1.3), extra))
    point = with_run_noise(None, 2.0, RunNoise(0.05, 6))
    assert point.low == pytest.approx(2.0 * np.exp(-extra)) and "point ratio" in point.method


# -- step detection (history mode) -------------------------------------------------------------


def test_last_step_finds_where_the_newest_level_starts() -> None:
    """Four runs at 10 then three at 13: the split at index 4 leaves no deviation; 1.3x > 1.10."""
    assert stats.last_step([10, 10, 10, 10, 13, 13, 13], 1.10) == 4
    assert stats.last_step([10] * 10 + [7, 7, 7], 1.10) == 10  # a step down counts too


def test_last_step_ignores_noise_short_levels_and_steps_within_the_floor() -> None:
    assert stats.last_step([10, 11, 10, 11, 10, 11], 1.10) is None  # alternation: no level
    assert stats.last_step([10, 10, 10, 13, 13], 1.10) is None  # two runs are not a level yet
    assert stats.last_step([10, 10, 10, 10.5, 10.5, 10.5], 1.10) is None  # 1.05x: within the floor


def test_suggested_floor_is_what_the_measured_run_to_run_noise_allows() -> None:
    """2% sd from 10 runs: t(0.975, 9) = 2.262, exp(2.262 x 1.414 x 0.02) = 1.066 -> 1.10;
    8% from 5 runs: t(0.975, 4) = 2.776, exp(0.314) = 1.369 -> 1.40; never below 1.05."""
    assert stats.suggested_floor(stats.RunNoise(0.02, 10)) == pytest.approx(1.10)
    assert stats.suggested_floor(stats.RunNoise(0.08, 5)) == pytest.approx(1.40)
    assert stats.suggested_floor(stats.RunNoise(0.001, 5)) == pytest.approx(1.05)


def test_an_inconclusive_verdict_with_learned_noise_carries_the_floor_it_needs() -> None:
    """8% noise from 5 runs needs 1.40 (as above); at a floor of 1.50 the noise is not why, so no need."""
    noise = stats.RunNoise(0.08, 5)
    decision = stats.ab_decision([10.0, 10.1, 9.9], [11.5, 11.6, 11.4], 1.10, noise=noise)
    assert decision.verdict == "inconclusive" and decision.floor_need == stats.FloorNeed(1.40, noise)
    quiet = stats.ab_decision([10.0, 10.1, 9.9], [11.5, 11.6, 11.4], 1.50, noise=noise)
    assert quiet.verdict == "inconclusive" and quiet.floor_need is None  # 1.50 already clears it


def test_floor_advice_names_the_flag_of_the_workload_and_metric_it_was_given() -> None:
    advice = stats.floor_advice(stats.FloorNeed(1.40, stats.RunNoise(0.08, 5)), "wordcount:runtime_s")
    assert advice == (
        "this case's run-to-run noise (8.0% from 5 runs) needs a floor of at least 1.40: --floor wordcount:runtime_s=1.40"
    )


@pytest.mark.parametrize(("sd", "words"), [(0.40, "40.0%"), (math.inf, "unbounded")])
def test_floor_advice_says_plainly_when_no_floor_would_help(sd: float, words: str) -> None:
    """40% from 5 runs needs exp(2.776 x 1.414 x 0.40) = 4.8, above `USEFUL_FLOOR` 2.0; unbounded noise needs inf."""
    need = stats.FloorNeed(stats.suggested_floor(stats.RunNoise(sd, 5)), stats.RunNoise(sd, 5))
    assert need.floor > stats.USEFUL_FLOOR
    assert stats.floor_advice(need, "wordcount:runtime_s") == (
        f"no floor would help: this case's run-to-run noise is {words}; use daskbench ab (lockstep) or more repeats"
    )


def test_a_memory_change_smaller_than_the_least_that_counts_is_unchanged() -> None:
    """2 MiB -> 4 MiB above idle is twice as much and 2 MiB apart: under 16 MiB, unchanged, and said."""
    regressed = stats.Decision("regressed", 2.0, 1.6, 2.5)
    found = stats.within_min_change(regressed, [2 * MIB] * 3, [4 * MIB] * 3, "peak_worker_memory_above_idle_bytes")
    assert found.verdict == "unchanged" and "16.0 MiB" in found.note and found.ratio == 2.0


def test_a_memory_change_beyond_the_least_that_counts_keeps_its_verdict() -> None:
    regressed = stats.Decision("regressed", 1.5, 1.3, 1.7)
    found = stats.within_min_change(regressed, [40 * MIB] * 3, [60 * MIB] * 3, "peak_worker_memory_above_idle_bytes")
    assert found == regressed


def test_an_inconclusive_memory_verdict_is_unchanged_only_when_every_value_lies_within_the_least_change() -> None:
    unsure = stats.Decision("inconclusive", 1.2, 0.7, 2.0)
    close = stats.within_min_change(unsure, [3 * MIB, 9 * MIB], [4 * MIB, 12 * MIB], "peak_memory_above_idle_bytes")
    spread = stats.within_min_change(unsure, [3 * MIB, 30 * MIB], [4 * MIB, 12 * MIB], "peak_memory_above_idle_bytes")
    assert close.verdict == "unchanged" and spread == unsure


def test_metrics_without_a_least_change_are_judged_by_ratio_alone() -> None:
    regressed = stats.Decision("regressed", 2.0, 1.6, 2.5)
    assert stats.within_min_change(regressed, [0.01] * 3, [0.02] * 3, "runtime_s") == regressed
