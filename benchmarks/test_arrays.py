"""Array reductions: transpose-and-add mean, tree-reduced sum and std."""

import numpy as np
import pytest

from daskbench.workloads import arrays

pytestmark = pytest.mark.benchmark


def test_transpose_mean(measure, size):
    """Column means of x + x.T of uniform numbers lie in [0, 2] and average about 1."""
    result = measure(lambda: arrays.transpose_mean(size), name="transpose_mean", params={"size": size})
    assert result.shape == (arrays.TRANSPOSE_SIZES[size].shape[1],)
    assert np.all((result >= 0) & (result <= 2))
    assert abs(result.mean() - 1.0) < 0.05


def test_tree_sum_std(measure, size):
    """The sum and std of uniform numbers are n/2 and sqrt(1/12), within sampling error."""
    result = measure(lambda: arrays.tree_sum_std(size), name="tree_sum_std", params={"size": size})
    n = np.prod(arrays.TREE_SIZES[size].shape)
    total, std = result
    assert abs(total / n - 0.5) < 0.01
    assert abs(std - np.sqrt(1 / 12)) < 0.01
