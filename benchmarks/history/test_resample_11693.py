"""xarray's resample of a Dask-backed series with a long time gap: graph construction (dask/dask#11693).

https://github.com/dask/dask/issues/11693: ``resample(time="1h").sum()`` of a chunked 2000-point series
with a 3000-day gap took 550 ms on dask 2024.8.0, where on 2024.7.1 it took about twice the eager 2.4 ms:
the result got one chunk per hourly bin (72 001 there) where it had two. Good: dask 2024.7.1 (and 2024.6.0).
Bad: dask 2024.8.0; 2024.9.0 made it about 2.5x worse again, so a bisection from 2024.6.0 names 2024.8.0 and
one from 2024.8.2 names 2024.9.0. Both sides need the same xarray (2024.10.0 was used) and no flox.

The gap is 300 days (7 201 bins) instead of the issue's 3000: the bad release is then about 15x slower
rather than 60x, and one measurement takes seconds rather than minutes. One resample takes 30-50 ms at
the good release, so the measured callable repeats it `RESAMPLES` times (about a second) and returns the
bins' count and bounds (not a collection): the whole build is the timed compute phase. Computing the sums
is left out: at the bad release it is thousands of tasks, which would dwarf the construction.
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

pytestmark = pytest.mark.benchmark

#: Resamples per measurement, per --size: ``tiny`` is a quick check; the rest take about a second at
#: the good release and about 15x that at the bad one.
RESAMPLES = {"tiny": 2, "small": 40, "medium": 40, "large": 40}
POINTS = 1000  # per side of the gap, one a second
GAP_DAYS = 300
CHUNK = 100


def gapped_series() -> xr.DataArray:
    """``POINTS`` seconds, a ``GAP_DAYS`` gap, ``POINTS`` seconds again; chunked along time."""
    start = xr.DataArray(np.arange(POINTS), coords={"time": pd.date_range("2025-01-01", freq="1s", periods=POINTS)})
    later = start.assign_coords(time=start.time + pd.Timedelta(days=GAP_DAYS))
    return xr.concat([start, later], dim="time").chunk(time=CHUNK)


def resample_hourly(series: xr.DataArray, times: int) -> tuple[int, pd.Timestamp, pd.Timestamp]:
    """Build the hourly sums ``times`` times; the last one's number of bins, first and last bin."""
    for _ in range(times):
        hourly = series.resample(time="1h").sum()
    labels = hourly.time.values
    return hourly.sizes["time"], pd.Timestamp(labels[0]), pd.Timestamp(labels[-1])


def test_resample_11693(measure, size):
    """One bin an hour from the first point's hour to the last one's."""
    times = RESAMPLES[size]
    series = gapped_series()
    result = measure(
        lambda: resample_hourly(series, times),
        name="resample_11693",
        params={"size": size, "resamples": times, "gap_days": GAP_DAYS},
    )
    first = pd.Timestamp("2025-01-01")
    assert result == (GAP_DAYS * 24 + 1, first, first + pd.Timedelta(days=GAP_DAYS))
