"""Ocean anomaly by interleaved groups (dask/distributed#2602, #6571)."""

import numpy as np
import pytest

from daskbench.workloads import ocean

pytestmark = pytest.mark.benchmark


def test_ocean_anomaly(measure, size):
    """The time mean of the anomalies is zero everywhere."""
    result = measure(lambda: ocean.anomaly(size), name="ocean_anomaly", params={"size": size})
    _, n_lat, n_lon = ocean.SIZES[size].shape
    assert result.shape == (n_lat, n_lon)
    np.testing.assert_allclose(result, 0.0, atol=1e-9)
