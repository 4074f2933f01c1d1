"""Two-session verdicts that use all the history they have: run-to-run noise pooled over the cases
of a comparison (planted answers), and a comparison of three baseline runs where a 1.3x slower
candidate is regressed and an ordinary fourth run is clean."""

from __future__ import annotations

import math
import random

import pytest

from daskbench.judge import stats
from daskbench.judge.compare import compare_runs
from daskbench.store import Store
from tests.helpers import add_run, make_case, make_measurement


def test_pooled_noise_sums_squares_over_summed_degrees_of_freedom() -> None:
    """Two cases, logs (0, 0.2) and (0, 0, 0.3): squares 0.02 + 0.06 over df 1 + 2 = 3."""
    per_case = [[1.0, math.exp(0.2)], [1.0, 1.0, math.exp(0.3)]]
    noise = stats.pooled_run_noise(per_case, 0.15)
    assert noise.sd == pytest.approx(math.sqrt(0.08 / 3))
    assert (noise.runs, noise.cases) == (4, 2) and "pooled over 2 cases, 3 df" in noise.source


def test_pooled_noise_falls_back_to_the_default_below_two_degrees_of_freedom() -> None:
    assert stats.pooled_run_noise([[1.0, 1.1], [2.0]], 0.15) == stats.RunNoise(0.15, 0)


def test_a_case_keeps_its_own_noise_once_it_has_ten_runs() -> None:
    pooled = stats.RunNoise(0.10, 15, 7)
    assert stats.case_noise([1.0, 1.05, 0.95], pooled) is pooled
    own = stats.case_noise([1.0, 1.01] * 5, pooled)
    assert own.runs == 10 and own.sd < 0.01


def test_the_prediction_interval_uses_the_pooled_degrees_of_freedom() -> None:
    """3 baseline runs at 1.0, candidate 1.3, sd 0.05 with 14 df: 1.3 * exp(+-2.145 * 0.05 * sqrt(4/3))."""
    decision = stats.prediction_decision([1.0, 1.0, 1.0], 1.3, 1.10, stats.RunNoise(0.05, 15, 7))
    half = 2.1448 * 0.05 * math.sqrt(4 / 3)
    assert decision.ci_low == pytest.approx(1.3 * math.exp(-half), rel=1e-3)
    assert decision.verdict == "regressed" and "pooled over 7 cases" in decision.method


def _history(store: Store, slow: float, noise: float = 0.04) -> tuple[str, str]:
    """Three baseline runs of seven cases, a candidate with ``slow`` on every case; returns (baseline, candidate)."""
    rng = random.Random(3)
    cases = [make_case("wordcount", n_workers=1, size="tiny", part=index) for index in range(7)]
    runs = [add_run(store, index, label="base") for index in range(3)] + [add_run(store, 3, label="cand")]
    for number, run in enumerate(runs):
        factor = slow if number == 3 else 1.0
        for case in cases:
            store.add_case(case)
            level = (1.0 + case.params["part"] / 10) * factor * math.exp(rng.gauss(0, noise))
            for repeat in range(3):
                runtime = level * math.exp(rng.gauss(0, 0.01))
                store.add_measurement(make_measurement(run, case, repeat, runtime_s=runtime, cost_usd=runtime / 1000))
    store.set_baseline("main", [run.run_id for run in runs[:3]])
    return "main", runs[3].run_id


def test_three_baseline_runs_of_seven_cases_call_a_1_3x_slowdown_regressed(store: Store) -> None:
    baseline, candidate = _history(store, 1.3)
    verdicts = [v for v in compare_runs(store, baseline=baseline, candidate=candidate).verdicts
                if v.metric == "runtime_s"]  # fmt: skip
    assert len(verdicts) == 7 and {v.verdict for v in verdicts} == {"regressed"}
    assert all("pooled over 7 cases, 14 df" in v.method for v in verdicts)


def test_an_ordinary_fourth_run_is_clean(store: Store) -> None:
    baseline, candidate = _history(store, 1.0)
    kinds = {v.verdict for v in compare_runs(store, baseline=baseline, candidate=candidate).verdicts}
    assert not kinds & {"regressed", "improved"}
