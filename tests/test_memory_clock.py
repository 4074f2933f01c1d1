"""Nanny clocks that disagree with the harness's do not change the cluster memory peak."""

from __future__ import annotations

from typing import Any

from daskbench.metrics.memory import summarize

GB = 10**9


def _report(peak_at: float, clock_skew: float, t0: float) -> dict[str, Any]:
    """One worker at 0.5 GB with a 1.0 GB spike at ``peak_at`` s into the window, seen through a skewed clock."""
    times = [i * 0.05 for i in range(200)]
    samples = [(t0 + clock_skew + t, GB if abs(t - peak_at) < 0.1 else GB // 2) for t in times]
    return {"high_water": GB, "samples": samples, "deaths": [], "memory_limit": 4 * GB, "started": t0 + clock_skew}


def test_five_second_skew_on_one_worker_does_not_inflate_the_cluster_peak() -> None:
    """Worker peaks 5 s apart, one nanny's clock 5 s behind: the peak is one spike + one baseline, not two spikes."""
    t0 = 1_000_000.0
    reports = [_report(peak_at=1.0, clock_skew=0.0, t0=t0), _report(peak_at=6.0, clock_skew=-5.0, t0=t0)]
    summary = summarize(reports, t0, bin_seconds=0.05, max_points=300)
    assert summary.peak_cluster == GB + GB // 2
