"""DataFrame filtering and grouping on a table sized to the cluster's memory."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sizing import sized

PARTITIONS = 8


def _partition(index, rows):
    rng = np.random.default_rng(index)
    return pd.DataFrame({"key": rng.integers(0, 100, rows), "value": rng.random(rows)})


def _table(client, share):
    rows = sized(client, share, item_bytes=16) // PARTITIONS
    return dd.from_map(_partition, range(PARTITIONS), rows=rows)


def test_filter(small_client):
    df = _table(small_client, 1 / 4096)
    kept = df[df.value > 0.5].value.count().compute()
    assert 0 < kept < len(df)


@pytest.mark.parametrize("split_out", [1, 2])
def test_groupby_mean(small_client, split_out):
    df = _table(small_client, 1 / 4096)
    means = df.groupby("key").value.mean(split_out=split_out).compute()
    assert len(means) == 100
