"""Slicing then a boolean mask on a many-chunk array: the client's memory and time (dask/dask#12020).

https://github.com/dask/dask/issues/12020: ``da.ones((25000, 72, 2000, 2000, 50), chunks=(1, 8, 200, 200,
-1))[10_000:14_000]`` then a boolean mask over axis 0 ran out of memory (14 GiB) building the graph on dask
2024.12.1 and later, and worked on 2024.11.2. Good: dask 2024.11.2 (and 2024.10.0). Bad: dask 2024.12.0
(and 2024.12.1, 2025.1.0). Measured here: the client's peak above idle 2.9x, the build 3.4x slower.

Nothing is computed: the graph is built in the client, so the measured callable builds the masked array
and returns its shape and chunking (not a collection), and the whole build is the timed compute phase;
``client_peak_memory_bytes`` is the memory it took: repeated in one process (a lockstep session's rounds),
the peak stays put while the rise above idle shrinks, the process keeping part of the previous build's
memory. The sliced range is shorter than the issue's 4000 (the memory grows linearly with it).
"""

import dask.array as da
import numpy as np
import pytest

pytestmark = pytest.mark.benchmark

#: Length of the sliced range along axis 0 per --size (the mask keeps every other row): ``tiny`` is a
#: quick check; the rest take a few seconds at the good release.
LENGTH = {"tiny": 20, "small": 300, "medium": 300, "large": 300}
SHAPE = (25000, 72, 2000, 2000, 50)
CHUNKS = (1, 8, 200, 200, -1)


def slice_and_mask(length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Slice ``length`` rows of the issue's array, keep every other one with a boolean mask; the
    result's shape and number of blocks."""
    data = da.ones(SHAPE, chunks=CHUNKS)
    sliced = data[10_000 : 10_000 + length]
    mask = np.zeros((length,), dtype=bool)
    mask[::2] = True
    masked = sliced[mask]
    return masked.shape, masked.numblocks


def test_bool_mask_12020(measure, size):
    """Half the sliced rows are kept, one block per row, the other axes' chunking unchanged."""
    length = LENGTH[size]
    result = measure(lambda: slice_and_mask(length), name="bool_mask_12020", params={"size": size, "length": length})
    assert result == ((length // 2, *SHAPE[1:]), (length // 2, 9, 10, 10, 1))
