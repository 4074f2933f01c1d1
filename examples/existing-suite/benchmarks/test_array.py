"""Array reductions on an array sized to the cluster's memory."""

from __future__ import annotations

import math

import dask.array as da
from sizing import sized


def _square_array(client, share):
    side = math.isqrt(sized(client, share))
    return da.random.default_rng(0).random((side, side), chunks=(side // 4 or 1, side // 4 or 1))


def test_sum_of_squares(small_client):
    x = _square_array(small_client, 1 / 4096)
    total = (x**2).sum().compute()
    assert 0 < total < x.size


def test_transpose_mean(small_client):
    x = _square_array(small_client, 1 / 4096)
    means = (x + x.T).mean(axis=0).compute()
    assert means.shape == (x.shape[1],)
