"""Run-to-run noise: how much a case's level moves between runs, and what a comparison of two runs makes of it.

**Two runs are two sessions.** Repeats inside one run share its cluster, its process
placement and the machine's state at that hour; another run does not. Measured here with
``measure/compare-aa`` (5 identical runs, tiny sizes, 2 cores), the spread of per-run medians was 2-4x
the spread of repeats within a run (log sd 0.02-0.21 against 0.03-0.09), and an interval
from repeats alone flagged 7 of 112 A/A rows as regressed. So an A/B interval between
separate runs is widened by the run-to-run noise of the case (`with_run_noise`): the log
sd of its per-run medians on this host (`run_noise`, at least 3 runs), or, with fewer
runs, the metric's declared noise (`default_run_sd`: 15% for time and cost, 3% for memory). With a baseline of several runs, each baseline
run counts once (its median), and the candidate's median is judged against their spread
with a t prediction interval, which carries the run-to-run noise itself.

Here: that noise from one case's runs (`run_noise`), pooled over a comparison's cases (`pooled_run_noise`,
`case_noise`), an interval widened by it (`with_run_noise`), and the floor it needs (`suggested_floor`,
`floor_advice`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from daskbench import catalog
from daskbench.judge.stats.intervals import CONFIDENCE, Interval, student_t_ppf

MIN_RUNS_FOR_NOISE = 3


def default_run_sd(metric: str) -> float:
    """Run-to-run noise (log sd) assumed for ``metric`` while a case has fewer than
    MIN_RUNS_FOR_NOISE runs to estimate it from (declared in `daskbench.catalog`). Measured
    here with measure/compare-aa at tiny sizes: runtime up to 0.21 (median 0.12); peak memory at most 0.0023."""
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
    return Interval(
        math.exp(center),
        math.exp(center - math.hypot(below, extra)),
        math.exp(center + math.hypot(above, extra)),
        method,
    )


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
        return (
            f"this case's run-to-run noise ({need.noise.sd:.1%} from {need.noise.runs} runs) needs a floor of "
            f"at least {need.floor:.2f}: --floor {target}={need.floor:.2f}"
        )
    noise = f"{need.noise.sd:.1%}" if math.isfinite(need.noise.sd) else "unbounded"
    return f"no floor would help: this case's run-to-run noise is {noise}; use daskbench ab (lockstep) or more repeats"
