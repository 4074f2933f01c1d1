"""Statistics for deciding "regressed": pure functions, no I/O (stdlib, numpy, scipy.stats, daskbench.model).

Every decision works on the log of a metric, so effects are ratios (candidate / baseline)
and noise is relative. Two modes (how to read them: docs/comparing.md):

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
interval lies within ``[1/floor, floor]``, ``inconclusive`` otherwise. The interval:

- paired (same repeat indices on both sides, >= 2 pairs): Student t on the per-pair log
  ratios; ratio = geometric mean of the pair ratios;
- unpaired, both sides >= 2: Welch t on the log values (Welch 1947); ratio = ratio of
  geometric means;
- one side has a single value, the other >= 2: a Student t prediction interval that
  borrows the spread of the side with repeats (df = n - 1), as bencher's t_test does;
- 10 or more values (pairs) per side: percentile bootstrap of the ratio of medians,
  10,000 resamples from a fixed seed (numpy Generator), robust to stragglers. Below 10
  the bootstrap of a median under-covers badly (a median of 3 has a handful of distinct
  resampled values), while t on logs is exact for log-normal noise and a straggler only
  widens it, which errs towards ``inconclusive``, never towards a false ``regressed``;
- one value per side: no interval exists. The point ratio decides only ``unchanged``
  (within the floor); a ratio beyond the floor is ``inconclusive`` with a note saying so
  and how to get evidence (--repeat 3, a baseline of several runs, or compare --history).
  A 1-vs-1 comparison therefore never fails a CI job on performance alone.

**Two runs are two sessions.** Repeats inside one run share its cluster, its process
placement and the machine's state at that hour; another run does not. Measured here with
``ci/aa`` (5 identical runs, tiny sizes, 2 cores), the spread of per-run medians was 2-4x
the spread of repeats within a run (log sd 0.02-0.21 against 0.03-0.09), and an interval
from repeats alone flagged 7 of 112 A/A rows as regressed. So an A/B interval between
separate runs is widened by the run-to-run noise of the case (`with_run_noise`): the log
sd of its per-run medians on this host (`run_noise`, at least 3 runs), or, with fewer
runs, the metric's declared noise (`default_run_sd`: 15% for time and cost, 3% for memory). With a baseline of several runs, each baseline
run counts once (its median), and the candidate's median is judged against their spread
with a t prediction interval, which carries the run-to-run noise itself.

Why intervals and not rank tests: with 3 repeats a side, the smallest two-sided Mann-Whitney
p-value is 2/C(6,3) = 0.10, so a rank test cannot reach 5% at 3-5 repeats whatever the data;
an interval of the effect can, and it says how big the change is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from daskbench import catalog
from daskbench.model import VerdictKind

#: History mode: |robust z| needed to call a change (see module docstring for the why).
Z_THRESHOLD = 4.0
#: History mode: good runs needed before any verdict but ``inconclusive``.
MIN_HISTORY = 10
#: History mode: how many good runs to look back over by default.
DEFAULT_HISTORY = 20
#: A/B confidence level of the interval of the ratio.
CONFIDENCE = 0.95
#: A/B: values (or pairs) per side from which the bootstrap replaces the t interval.
BOOTSTRAP_MIN_N = 10
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20_240_801
MIN_RUNS_FOR_NOISE = 3
#: MAD -> standard deviation for normal data: 1 / Phi^-1(3/4) = 1.4826...
MAD_TO_SD = 1.0 / NormalDist().inv_cdf(0.75)


@dataclass(frozen=True)
class Interval:
    """A ratio (candidate / baseline) and its confidence bounds, with how they were made."""

    ratio: float
    low: float
    high: float
    method: str


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


# -- summaries ------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    """The sample median: the summary of one case's repeats."""
    return float(np.median(np.asarray(values, dtype=float)))


def mad_scale(values: Sequence[float]) -> float:
    """Median absolute deviation scaled to a normal sd (scipy ``median_abs_deviation(scale='normal')``)."""
    data = np.asarray(values, dtype=float)
    return float(np.median(np.abs(data - np.median(data)))) * MAD_TO_SD


def robust_z(history: Sequence[float], value: float) -> float:
    """``(value - median(history)) / (1.4826 * MAD(history))`` (Iglewicz & Hoaglin 1993).

    A history with no spread (MAD 0) makes any difference infinitely surprising: the
    result is +-inf, or 0 when ``value`` equals the median; the effect floor then decides.
    """
    offset = value - median(history)
    scale = mad_scale(history)
    if scale > 0:
        return offset / scale
    return 0.0 if offset == 0 else math.copysign(math.inf, offset)


# -- Student t ------------------------------------------------------------------------


def student_t_ppf(q: float, df: float) -> float:
    """The q-quantile of Student's t with ``df`` degrees of freedom (real df > 0): scipy ``t.ppf``."""
    if not 0.0 < q < 1.0 or not df > 0:
        raise ValueError(f"student_t_ppf needs 0 < q < 1 and df > 0, got q={q}, df={df}")
    from scipy import stats as scipy_stats  # here, not at the top: every CLI command imports this module

    return float(scipy_stats.t.ppf(q, df))


# -- intervals of the ratio -----------------------------------------------------------


def paired_t_interval(base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """t interval of the mean per-pair log ratio (scipy ``ttest_rel(...).confidence_interval``)."""
    diffs = np.log(np.asarray(cand, dtype=float)) - np.log(np.asarray(base, dtype=float))
    se = float(np.std(diffs, ddof=1)) / math.sqrt(len(diffs))
    return _t_interval(
        float(np.mean(diffs)), se, len(diffs) - 1, confidence, f"paired t on log ratios ({len(diffs)} pairs)"
    )


def welch_t_interval(base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Welch t interval of the difference of mean logs (scipy ``ttest_ind(equal_var=False)``)."""
    b, c = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(cand, dtype=float))
    vb, vc = float(np.var(b, ddof=1)) / len(b), float(np.var(c, ddof=1)) / len(c)
    se = math.sqrt(vb + vc)
    df = (vb + vc) ** 2 / (vb**2 / (len(b) - 1) + vc**2 / (len(c) - 1)) if se > 0 else 1.0
    method = f"Welch t on logs ({len(b)} vs {len(c)})"
    return _t_interval(float(np.mean(c) - np.mean(b)), se, df, confidence, method)


def prediction_t_interval(base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """One side is a single value: t prediction interval with the other side's spread.

    se = s * sqrt(1/n + 1), df = n - 1, where s and n belong to the side with repeats.
    """
    b, c = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(cand, dtype=float))
    many = b if len(b) > 1 else c
    se = float(np.std(many, ddof=1)) * math.sqrt(1.0 / len(many) + 1.0)
    method = f"t prediction interval on logs ({len(b)} vs {len(c)})"
    return _t_interval(float(np.mean(c) - np.mean(b)), se, len(many) - 1, confidence, method)


def _t_interval(log_ratio: float, se: float, df: float, confidence: float, method: str) -> Interval:
    half = student_t_ppf(0.5 + confidence / 2.0, df) * se if se > 0 else 0.0
    return Interval(math.exp(log_ratio), math.exp(log_ratio - half), math.exp(log_ratio + half), method)


def bootstrap_ratio_interval(
    base: Sequence[float],
    cand: Sequence[float],
    *,
    paired: bool,
    confidence: float = CONFIDENCE,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) of the ratio of medians.

    Paired: resample pairs, statistic = median of the log ratios. Unpaired: resample each
    side, statistic = difference of median logs. Same seed, same answer.
    """
    rng = np.random.default_rng(seed)
    b, c = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(cand, dtype=float))
    if paired:
        diffs = c - b
        point, samples = float(np.median(diffs)), _resampled_medians(rng, diffs, n_resamples)
    else:
        point = float(np.median(c) - np.median(b))
        samples = _resampled_medians(rng, c, n_resamples) - _resampled_medians(rng, b, n_resamples)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    kind = f"{len(b)} pairs" if paired else f"{len(b)} vs {len(c)}"
    method = f"bootstrap of the median ratio ({kind}, {n_resamples} resamples, seed {seed})"
    return Interval(math.exp(point), math.exp(float(low)), math.exp(float(high)), method)


def _resampled_medians(rng: np.random.Generator, data: np.ndarray, n_resamples: int) -> np.ndarray:
    return np.median(data[rng.integers(0, len(data), size=(n_resamples, len(data)))], axis=1)


def ratio_interval(
    base: Sequence[float], cand: Sequence[float], *, paired: bool = False, confidence: float = CONFIDENCE
) -> Interval | None:
    """The interval the module docstring prescribes for these sample sizes; None for 1 vs 1."""
    n_base, n_cand = len(base), len(cand)
    if paired and n_base == n_cand >= 2:
        if n_base >= BOOTSTRAP_MIN_N:
            return bootstrap_ratio_interval(base, cand, paired=True, confidence=confidence)
        return paired_t_interval(base, cand, confidence)
    if min(n_base, n_cand) >= BOOTSTRAP_MIN_N:
        return bootstrap_ratio_interval(base, cand, paired=False, confidence=confidence)
    if min(n_base, n_cand) >= 2:
        return welch_t_interval(base, cand, confidence)
    if max(n_base, n_cand) >= 2:
        return prediction_t_interval(base, cand, confidence)
    return None


# -- verdicts --------------------------------------------------------------------------


def classify_interval(low: float, high: float, floor: float) -> VerdictKind:
    """A/B rule: the whole interval must lie beyond the floor to call a change."""
    if low > floor:
        return "regressed"
    if high < 1.0 / floor:
        return "improved"
    if low >= 1.0 / floor and high <= floor:
        return "unchanged"
    return "inconclusive"


def default_floor(metric: str) -> float:
    """The ratio a change of ``metric`` must exceed (either way), as declared in `daskbench.catalog`."""
    return catalog.get(metric).floor


def default_run_sd(metric: str) -> float:
    """Run-to-run noise (log sd) assumed for ``metric`` while a case has fewer than
    MIN_RUNS_FOR_NOISE runs to estimate it from (declared in `daskbench.catalog`). Measured
    here with ci/aa at tiny sizes: runtime up to 0.21 (median 0.12); peak memory at most 0.0023."""
    return catalog.get(metric).noise


@dataclass(frozen=True)
class RunNoise:
    """Run-to-run noise of one case and metric: log sd of per-run medians, and its source.

    ``runs - 1`` is its degrees of freedom; pooled over ``cases`` cases, ``runs`` is the df + 1."""

    sd: float
    runs: int  # runs it was estimated from (df + 1); 0 means the declared default was assumed
    cases: int = 1  # how many cases it was pooled over

    @property
    def source(self) -> str:
        if not self.runs:
            return f"assumed, fewer than {MIN_RUNS_FOR_NOISE} runs"
        if self.cases > 1:
            return f"pooled over {self.cases} cases, {self.runs - 1} df"
        return f"from {self.runs} runs"


#: A case's own run-to-run noise replaces the pooled one from this many runs on.
MIN_OWN_RUNS = 10


def noise_quantile(noise: RunNoise, confidence: float = CONFIDENCE) -> float:
    """The two-sided quantile for an interval from ``noise``: Student t on its degrees of freedom,
    or the normal one for an assumed default (``runs`` 0)."""
    if noise.runs:
        return student_t_ppf(0.5 + confidence / 2.0, noise.runs - 1)
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def pooled_run_noise(per_case: Sequence[Sequence[float]], default: float) -> RunNoise:
    """Run-to-run noise pooled over cases: each case's per-run medians deviate from that case's
    own mean (of logs), and the squared deviations of all cases are summed over their summed
    degrees of freedom (one-way ANOVA's within-group variance). 7 cases x 3 runs give 14 df, where
    one case alone gives 2. ``default`` (assumed) with fewer than 2 df."""
    logged = [np.log(np.asarray(values, dtype=float)) for values in per_case if len(values) >= 2 and min(values) > 0]
    df = sum(len(values) - 1 for values in logged)
    if df < 2:
        return RunNoise(default, 0)
    squares = sum(float(((values - values.mean()) ** 2).sum()) for values in logged)
    return RunNoise(math.sqrt(squares / df), df + 1, len(logged))


def case_noise(own: Sequence[float], pooled: RunNoise) -> RunNoise:
    """A case's own noise once it has `MIN_OWN_RUNS` runs, else the pooled one."""
    return run_noise(own, pooled.sd) if len(own) >= MIN_OWN_RUNS else pooled


def prediction_decision(base: Sequence[float], cand: float, floor: float, noise: RunNoise,
                        confidence: float = CONFIDENCE) -> Decision:  # fmt: skip
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


def run_noise(run_medians: Sequence[float], default: float) -> RunNoise:
    """Sample sd of the log per-run medians; ``default`` (assumed) with fewer than 3 runs."""
    if len(run_medians) < MIN_RUNS_FOR_NOISE or min(run_medians) <= 0:
        return RunNoise(default, 0)
    return RunNoise(float(np.std(np.log(np.asarray(run_medians, dtype=float)), ddof=1)), len(run_medians))


def with_run_noise(
    interval: Interval | None, ratio: float, noise: RunNoise, confidence: float = CONFIDENCE
) -> Interval:
    """Widen an interval of the ratio (or a bare point ratio) by the noise between two runs.

    Each run's level differs from the case's mean by a run effect of log sd ``noise.sd``, so
    two runs differ by sqrt(2) * sd; that term (with a t quantile on ``runs - 1`` df, or a
    normal one for the assumed default) is added in quadrature to each side's half-width.
    """
    quantile = noise_quantile(noise, confidence)
    extra = quantile * math.sqrt(2.0) * noise.sd
    center = math.log(interval.ratio if interval else ratio)
    below = center - math.log(interval.low) if interval else 0.0
    above = math.log(interval.high) - center if interval else 0.0
    method = f"{interval.method if interval else 'point ratio'} + run-to-run sd {noise.sd:.1%} ({noise.source})"
    return Interval(math.exp(center), math.exp(center - math.hypot(below, extra)),
                    math.exp(center + math.hypot(above, extra)), method)  # fmt: skip


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


def suggested_floor(noise: RunNoise, confidence: float = CONFIDENCE) -> float:
    """The smallest floor (rounded up to 0.05) that two runs of a case with this run-to-run
    noise can clear: exp(t x sqrt(2) x sd), the half-width the noise alone gives a two-run
    ratio. 2% sd from 10 runs (t = 2.262): exp(0.064) = 1.066 -> 1.10. Unbounded noise: inf."""
    quantile = student_t_ppf(0.5 + confidence / 2.0, max(noise.runs - 1, 1))
    exponent = quantile * math.sqrt(2.0) * noise.sd
    if not exponent < 700.0:  # unbounded noise (or beyond a float): no floor clears it
        return math.inf
    return max(1.05, math.ceil(math.exp(exponent) * 20 - 1e-9) / 20)


#: A floor above this says "no change smaller than 2x counts": no floor would help such a case.
USEFUL_FLOOR = 2.0


@dataclass(frozen=True)
class FloorNeed:
    """The floor a case's run-to-run ``noise`` needs before two runs of it can be told apart
    (`suggested_floor`; inf when no floor would)."""

    floor: float
    noise: RunNoise


def floor_advice(need: FloorNeed, target: str) -> str:
    """What to do about ``need``, naming the ``--floor`` of ``target`` (``wordcount:runtime_s``, from
    the caller: this module knows no workload), or saying plainly when no floor would help."""
    if need.floor <= USEFUL_FLOOR:
        return (f"this case's run-to-run noise ({need.noise.sd:.1%} from {need.noise.runs} runs) needs a floor of "
                f"at least {need.floor:.2f}: --floor {target}={need.floor:.2f}")  # fmt: skip
    noise = f"{need.noise.sd:.1%}" if math.isfinite(need.noise.sd) else "unbounded"
    return f"no floor would help: this case's run-to-run noise is {noise}; use daskbench ab (lockstep) or more repeats"


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
