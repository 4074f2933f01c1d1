"""Summaries of a sample: its median, its spread (MAD scaled to a normal sd) and a robust z-score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

#: MAD -> standard deviation for normal data: 1 / Phi^-1(3/4) = 1.4826...
MAD_TO_SD = 1.0 / NormalDist().inv_cdf(0.75)


def median(values: Sequence[float]) -> float:
    """The sample median: the summary of one case's repeats. Sorted in Python (numpy's median costs ~50 µs a
    call, and the report takes tens of thousands of medians of a few values); the middle pair's mean is
    ``(a + b) / 2`` either way, so the value is numpy's. Empty or NaN samples go to numpy (NaN, as before)."""
    data = sorted(float(v) for v in values)
    n = len(data)
    if n == 0 or any(v != v for v in data):
        return float(np.median(np.asarray(values, dtype=float)))
    middle = n // 2
    return data[middle] if n % 2 else (data[middle - 1] + data[middle]) / 2


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
