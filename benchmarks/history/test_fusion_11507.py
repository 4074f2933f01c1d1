"""A fused dask-expr chain re-running its IO once per column it references (dask/dask#11507).

https://github.com/dask/dask/issues/11507 (Narwhals' TPC-H CI went from 2 min 15 s to 16 min): in dask
2024.11.0 (dask-expr 1.1.17, dask/dask-expr#1159 "Migrate Blockwise to use taskspec") a fused task inlined
its IO subgraph, so each reference to it ran the loader again; fixed in 2024.11.1 (dask/dask-expr#1161).
Good: dask 2024.10.0. Bad: dask 2024.11.0, installable only with ``dask-expr==1.1.17`` pinned exactly
(yanked on PyPI). Here the loader runs 12 times per partition at the bad release instead of once.

The loader sleeps (simulated IO latency), so the effect does not hang on the machine's CPU speed. The
collection is built in the measured callable and computed in the timed compute phase, where IO runs.
"""

import time

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.benchmark

#: Partitions per --size: ``tiny`` is a quick check; the rest take about 2 s at the good release
#: (1 worker, 1 thread) and about 10x that at the bad one.
PARTITIONS = {"tiny": 2, "small": 6, "medium": 6, "large": 6}
DELAY_S = 0.2
ROWS = 100_000


def load(part: int, delay: float = DELAY_S, rows: int = ROWS) -> pd.DataFrame:
    """One partition, after ``delay`` seconds of simulated IO."""
    time.sleep(delay)
    rng = np.random.default_rng(part)
    columns = {"a": rng.integers(0, 100, rows), "b": rng.random(rows), "c": rng.random(rows)}
    columns |= {"d": rng.integers(0, 10, rows), "e": rng.random(rows), "f": rng.random(rows)}
    return pd.DataFrame(columns)


def query(frame):
    """The reporter's shape: a filter on three columns, an assign, a groupby-sum (pandas or Dask)."""
    frame = frame[(frame.a > 10) & (frame.b < 0.9) & (frame.c > 0.1)]
    frame = frame.assign(g=frame.e * (1 - frame.f))
    return frame.groupby("d").g.sum()


def test_fusion_11507(measure, size):
    """The groupby sums equal pandas' on the same partitions."""
    parts = PARTITIONS[size]
    result = measure(
        lambda: query(dd.from_map(load, list(range(parts)), meta=load(0, delay=0, rows=0))).compute(),
        name="fusion_11507",
        params={"size": size, "partitions": parts},
    )
    expected = query(pd.concat([load(part, delay=0) for part in range(parts)]))
    pd.testing.assert_series_equal(result.sort_index(), expected.sort_index(), check_dtype=False)
