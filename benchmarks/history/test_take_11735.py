"""Integer-array indexing over many one-element chunks: graph construction slower (dask/dask#11735).

https://github.com/dask/dask/issues/11735: ``x[np.arange(x.size)]`` on ``da.ones((n,), chunks=(1,))``
built its graph 2-3x slower from dask 2024.12.0 (the Task-spec migration of ``take``, dask/dask#11548;
about 10x on this machine). Good: dask 2024.11.2 (and 2024.10.0). Bad: dask 2024.12.0 (and later).
Bisect from 2024.9.1 or newer: 2024.8.0 had a slowdown of its own here, fixed in 2024.9.1.

The time is spent on the client, building the graph, so the measured callable builds the indexed array
and returns its shape and chunking (not a collection): the whole build is the timed compute phase.
Computing even a few of its elements would time the optimizer culling the whole graph, on both sides.
"""

import dask.array as da
import numpy as np
import pytest

pytestmark = pytest.mark.benchmark

#: One-element chunks per --size: ``tiny`` is a quick check; the rest take about 1-2 s at the good
#: release and about 6-10x that at the bad one.
CHUNKS = {"tiny": 20_000, "small": 1_000_000, "medium": 1_000_000, "large": 1_000_000}


def index_every_element(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Build ``x[np.arange(n)]``; its shape and number of blocks."""
    x = da.ones((n,), chunks=(1,))
    taken = x[np.arange(x.size)]
    return taken.shape, taken.numblocks


def test_take_11735(measure, size):
    """The indexed array keeps every element, one chunk each."""
    n = CHUNKS[size]
    result = measure(lambda: index_every_element(n), name="take_11735", params={"size": size, "chunks": n})
    assert result == ((n,), (n,))
