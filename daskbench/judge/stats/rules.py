"""The verdict rules: from both sides' values and a floor to a `Decision` (regressed, improved, unchanged,
inconclusive). Every decision works on the log of a metric, so effects are ratios (candidate / baseline)
and noise is relative.

**History** (`history_decision`): the candidate run's median over its repeats against the
per-run medians of the last N good runs of the same fingerprint. Robust z-score
``z = (log x - median(log h)) / (1.4826 * MAD(log h))`` (Iglewicz & Hoaglin 1993; the
conbench lookback z-score made robust). ``regressed`` needs BOTH ``z > Z_THRESHOLD`` and
``ratio > floor``; ``improved`` the mirror image; ``unchanged`` when the ratio is within
``[1/floor, floor]``; ``inconclusive`` when the ratio is beyond the floor but ``|z|`` is
not, or when fewer than ``MIN_HISTORY`` runs exist. Why 4.0 and 10 runs: the MAD of a
short history is itself noisy, so the null tail of z is far heavier than a normal's.
Simulated with Gaussian noise (400k trials), P(z > 4) is 4.9% with 5 runs of history,
1.6% with 8, 1.1% with 10, 0.27% with 20 and 0.10% with 30 (a normal would give 0.003%).
The floor cuts these further whenever the noise is small against it (at 5% noise and a
1.10 floor, 10 runs: 0.65%). 10 runs is the least history that keeps one series' false
alarm rate near 1%; 20 (the default window) brings it to about 0.3%.

**A/B** (`ab_decision`): the repeats of one case in two runs; a 95% confidence interval
of the ratio; ``regressed`` only when the whole interval lies above the floor
(``ci_low > floor``), ``improved`` when ``ci_high < 1/floor``, ``unchanged`` when the
interval lies within ``[1/floor, floor]``, ``inconclusive`` otherwise. The interval is the one
`intervals.ratio_interval` picks for the sample sizes, widened by the run-to-run noise between two runs
(`noise.with_run_noise`); against several baseline runs, `prediction_decision`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from daskbench import catalog
from daskbench.judge.stats.intervals import CONFIDENCE, classify_interval, ratio_interval
from daskbench.judge.stats.noise import (
    MIN_RUNS_FOR_NOISE,
    FloorNeed,
    RunNoise,
    noise_quantile,
    suggested_floor,
    with_run_noise,
)
from daskbench.judge.stats.summaries import median, robust_z
from daskbench.verdicts import VerdictKind

#: History mode: |robust z| needed to call a change (see module docstring for the why).
Z_THRESHOLD = 4.0
#: History mode: good runs needed before any verdict but ``inconclusive``.
MIN_HISTORY = 10
#: History mode: how many good runs to look back over by default.
DEFAULT_HISTORY = 20


@dataclass(frozen=True)
class Decision:
    """What a statistical rule concluded about one metric of one case; Verdict fields."""

    verdict: VerdictKind
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    method: str = ""
    note: str = ""
    score: float | None = None
    #: When the case's run-to-run noise is why it is inconclusive: the floor that noise needs.
    floor_need: FloorNeed | None = None


def default_floor(metric: str) -> float:
    """The ratio a change of ``metric`` must exceed (either way), as declared in `daskbench.catalog`."""
    return catalog.get(metric).floor


def prediction_decision(
    base: Sequence[float], cand: float, floor: float, noise: RunNoise, confidence: float = CONFIDENCE
) -> Decision:
    """A candidate run's value against several baseline runs' values, run-to-run noise ``noise``:
    the t prediction interval of one new run, log(cand) - mean(log base) +- t(df) sd sqrt(1 + 1/n)."""
    if min(base) <= 0 or cand <= 0:
        return Decision("inconclusive", method="exact", note="a value of 0 or less has no ratio")
    center = math.log(cand) - float(np.mean(np.log(np.asarray(base, dtype=float))))
    quantile = noise_quantile(noise, confidence)
    half = quantile * noise.sd * math.sqrt(1.0 + 1.0 / len(base))
    low, high = math.exp(center - half), math.exp(center + half)
    verdict = classify_interval(low, high, floor)
    method = f"t prediction interval vs {len(base)} baseline runs, run-to-run sd {noise.sd:.1%} ({noise.source})"
    note = ""
    if verdict == "inconclusive":
        note = f"the interval crosses the floor band {1 / floor:.2f}-{floor:.2f}; more baseline runs would narrow it"
    return Decision(verdict, math.exp(center), low, high, method, note)


def ab_decision(
    base: Sequence[float],
    cand: Sequence[float],
    floor: float,
    *,
    paired: bool = False,
    confidence: float = CONFIDENCE,
    noise: RunNoise | None = None,
) -> Decision:
    """A/B verdict for one metric from the values of both sides (rules: module docstring).

    ``noise`` is the run-to-run noise to add when the two sides are separate runs judged
    from their repeats; None when the values already are per-run summaries.
    """
    _require_values(base, cand)
    degenerate = _non_positive_decision(base, cand)
    if degenerate is not None:
        return degenerate
    interval = ratio_interval(base, cand, paired=paired, confidence=confidence)
    if noise is not None:
        interval = with_run_noise(interval, median(cand) / median(base), noise, confidence)
    if interval is None:
        return _single_repeat_decision(base[0], cand[0], floor)
    verdict = classify_interval(interval.low, interval.high, floor)
    note = ""
    if verdict == "inconclusive":
        note = f"the interval crosses the floor band {1 / floor:.2f}-{floor:.2f}; more repeats or runs would narrow it"
        if noise is not None and not noise.runs:
            note += f"; run-to-run noise assumed {noise.sd:.0%} until this case has {MIN_RUNS_FOR_NOISE} runs"
    need = None
    if verdict == "inconclusive" and noise is not None and noise.runs and suggested_floor(noise, confidence) > floor:
        need = FloorNeed(suggested_floor(noise, confidence), noise)  # the noise is why
    return Decision(verdict, interval.ratio, interval.low, interval.high, interval.method, note, floor_need=need)


def _single_repeat_decision(base: float, cand: float, floor: float) -> Decision:
    ratio = cand / base
    method = "single repeat each side: point estimate, no interval"
    if 1.0 / floor <= ratio <= floor:
        return Decision("unchanged", ratio, method=method, note="1 vs 1 repeat: within the floor, but no interval")
    note = (
        f"1 vs 1 repeat: beyond the floor {floor:.2f} but no spread to judge it; confirm with "
        "--repeat 3, a baseline of several runs, or daskbench compare --history"
    )
    return Decision("inconclusive", ratio, method=method, note=note)


def history_decision(
    history: Sequence[float],
    cand: Sequence[float],
    floor: float,
    *,
    z_threshold: float = Z_THRESHOLD,
    min_history: int = MIN_HISTORY,
) -> Decision:
    """History verdict: candidate's median vs per-run summaries ``history`` (oldest first)."""
    _require_values(history, cand)
    degenerate = _non_positive_decision(history, cand)
    if degenerate is not None:
        return degenerate
    method = f"history: robust z over {len(history)} runs (threshold {z_threshold:g})"
    log_history = np.log(np.asarray(history, dtype=float))
    log_value = math.log(median(cand))
    ratio = math.exp(log_value - float(np.median(log_history)))
    if len(history) < min_history:
        note = f"{len(history)} good runs of history; {min_history} needed before a verdict"
        return Decision("inconclusive", ratio, method=method, note=note)
    z = robust_z(log_history.tolist(), log_value)
    verdict, note = _history_verdict(ratio, z, floor, z_threshold)
    return Decision(verdict, ratio, method=method, note=note, score=z)


#: A level in history needs this many runs on each side of a step before the step counts.
MIN_STEP_RUNS = 3


def last_step(history: Sequence[float], floor: float, min_runs: int = MIN_STEP_RUNS) -> int | None:
    """Where the newest level of ``history`` (oldest first) starts, if it stepped: the split
    into two segments of at least ``min_runs`` that leaves the least squared deviation of the
    logs from each segment's mean (checkable by hand), kept only if the segments' medians
    differ by more than ``floor``. None when there is no such step.

    ``[10, 10, 10, 10, 13, 13, 13]`` splits at 4 (1.3x > 1.10); ``[10, 11, 10, 11, 10, 11]``
    has no split beyond the floor.
    """
    if len(history) < 2 * min_runs or min(history) <= 0:
        return None
    logs = np.log(np.asarray(history, dtype=float))

    def cost(at: int) -> float:
        return float(sum(((part - part.mean()) ** 2).sum() for part in (logs[:at], logs[at:])))

    best = min(range(min_runs, len(logs) - min_runs + 1), key=cost)
    ratio = median(history[best:]) / median(history[:best])
    return best if not 1.0 / floor <= ratio <= floor else None


def _history_verdict(ratio: float, z: float, floor: float, z_threshold: float) -> tuple[VerdictKind, str]:
    """Returns (verdict, note)."""
    if 1.0 / floor <= ratio <= floor:
        big = abs(z) > z_threshold
        return "unchanged", (f"a real shift (|z| {abs(z):.1f}) but within the floor {floor:.2f}" if big else "")
    if abs(z) > z_threshold:
        return ("regressed" if ratio > 1 else "improved"), ""
    return "inconclusive", f"beyond the floor but within the history's noise (|z| {abs(z):.1f} <= {z_threshold:g})"


def _require_values(base: Sequence[float], cand: Sequence[float]) -> None:
    if not base or not cand:
        raise ValueError("a statistical decision needs at least one value on each side")


def _non_positive_decision(base: Sequence[float], cand: Sequence[float]) -> Decision | None:
    """Ratios and logs need positive values; a zero on either side gets a plain answer."""
    if min(base) > 0 and min(cand) > 0:
        return None
    if len({*base, *cand}) == 1:
        return Decision("unchanged", 1.0, method="exact", note=f"every value is {base[0]:g}")
    return Decision("inconclusive", method="exact", note="a value of 0 or less has no ratio")


def within_min_change(decision: Decision, base: Sequence[float], cand: Sequence[float], metric: str) -> Decision:
    """A change smaller than the metric's ``min_change`` (in its unit) is no change: a regressed
    or improved verdict whose medians differ by less is unchanged; so is an inconclusive one when
    every value of both sides lies within ``min_change`` of every other. The note says so."""
    least = catalog.get(metric).min_change
    if least <= 0 or decision.verdict not in ("regressed", "improved", "inconclusive") or not (base and cand):
        return decision
    values = [*base, *cand]
    apart = abs(median(cand) - median(base))
    if apart >= least or (decision.verdict == "inconclusive" and max(values) - min(values) >= least):
        return decision
    said = f"the sides differ by less than the smallest change that counts ({catalog.get(metric).format(least)})"
    return replace(decision, verdict="unchanged", note=said, floor_need=None)
