"""Statistics for deciding "regressed": pure functions, no I/O (stdlib, numpy, scipy.stats, daskbench.model).

`rules`: the history, A/B and prediction rules, each from both sides' values and a floor to a `Decision`
(how to read them: docs/comparing.md); `intervals`: the intervals of the ratio those rules read;
`noise`: the run-to-run noise that widens an interval between two runs, pooled over cases;
`summaries`: median, MAD and robust z. The names the rest of daskbench uses are imported from here
(``stats.median``, ``stats.ab_decision``, ...: the package's face), never from its modules.
"""

from daskbench.judge.stats.intervals import (
    BOOTSTRAP_MIN_N,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    Interval,
    bootstrap_ratio_interval,
    classify_interval,
    paired_t_interval,
    prediction_t_interval,
    ratio_interval,
    student_t_ppf,
    welch_t_interval,
)
from daskbench.judge.stats.noise import (
    MIN_OWN_RUNS,
    MIN_RUNS_FOR_NOISE,
    USEFUL_FLOOR,
    FloorNeed,
    RunNoise,
    case_noise,
    default_run_sd,
    floor_advice,
    noise_quantile,
    pooled_run_noise,
    run_noise,
    suggested_floor,
    with_run_noise,
)
from daskbench.judge.stats.rules import (
    DEFAULT_HISTORY,
    MIN_HISTORY,
    MIN_STEP_RUNS,
    Z_THRESHOLD,
    Decision,
    ab_decision,
    default_floor,
    history_decision,
    last_step,
    prediction_decision,
    within_min_change,
)
from daskbench.judge.stats.summaries import MAD_TO_SD, mad_scale, median, robust_z

__all__ = [
    "BOOTSTRAP_MIN_N",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "DEFAULT_HISTORY",
    "MAD_TO_SD",
    "MIN_HISTORY",
    "MIN_OWN_RUNS",
    "MIN_RUNS_FOR_NOISE",
    "MIN_STEP_RUNS",
    "USEFUL_FLOOR",
    "Z_THRESHOLD",
    "Decision",
    "FloorNeed",
    "Interval",
    "RunNoise",
    "ab_decision",
    "bootstrap_ratio_interval",
    "case_noise",
    "classify_interval",
    "default_floor",
    "default_run_sd",
    "floor_advice",
    "history_decision",
    "last_step",
    "mad_scale",
    "median",
    "noise_quantile",
    "paired_t_interval",
    "pooled_run_noise",
    "prediction_decision",
    "prediction_t_interval",
    "ratio_interval",
    "robust_z",
    "run_noise",
    "student_t_ppf",
    "suggested_floor",
    "welch_t_interval",
    "with_run_noise",
    "within_min_change",
]
