"""Array reductions: a transpose-and-add mean, and a tree-reduced sum and std.

``transpose_mean``: ``(x + x.T).mean(axis=0)`` on a square random matrix; every output
block needs two input blocks from mirrored positions, so memory depends on the order
tasks run in. ``tree_sum_std``: ``sum`` and ``std`` of a tall random array, reduced in
a tree of fan-in ``split_every`` (the coiled ``test_basic_sum`` pattern, where
worker-saturation moved both runtime and peak memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np

from daskbench.compat import uniform
from daskbench.text import format_bytes
from daskbench.workloads.base import Workload, check_size

SPLIT_EVERY = 4


@dataclass(frozen=True)
class ArraySpec:
    shape: tuple[int, int]
    chunks: tuple[int, int]


TRANSPOSE_SIZES: dict[str, ArraySpec] = {
    "tiny": ArraySpec((400, 400), (100, 100)),
    "small": ArraySpec((30_000, 30_000), (2_500, 2_500)),
    "medium": ArraySpec((70_000, 70_000), (3_500, 3_500)),
    "large": ArraySpec((200_000, 200_000), (5_000, 5_000)),
}
TREE_SIZES: dict[str, ArraySpec] = {
    "tiny": ArraySpec((2_000, 300), (100, 300)),
    "small": ArraySpec((100_000, 20_000), (1_250, 20_000)),
    "medium": ArraySpec((500_000, 20_000), (2_500, 20_000)),
    "large": ArraySpec((2_000_000, 20_000), (5_000, 20_000)),
}


def describe_transpose(size: str) -> list[dict[str, Any]]:
    """The README row of `transpose_mean` at ``size``."""
    return [_describe("transpose_mean", size, check_size(size, TRANSPOSE_SIZES))]


def describe_tree(size: str) -> list[dict[str, Any]]:
    """The README row of `tree_sum_std` at ``size``."""
    return [_describe("tree_sum_std", size, check_size(size, TREE_SIZES))]


def _describe(name: str, size: str, spec: ArraySpec) -> dict[str, Any]:
    nbytes = 8 * spec.shape[0] * spec.shape[1]
    n_chunks = int(np.prod([-(-n // c) for n, c in zip(spec.shape, spec.chunks, strict=True)]))
    chunk = 8 * spec.chunks[0] * spec.chunks[1]
    return {
        "workload": name,
        "size": size,
        "input": f"{spec.shape} float64, {format_bytes(nbytes)} generated",
        "chunks": f"{n_chunks} x {format_bytes(chunk)}",
        "input_bytes": nbytes,
    }


def random_array(spec: ArraySpec, seed: int = 0) -> da.Array:
    """Seeded uniform random numbers; the same spec, seed and dask release give the same values
    (`daskbench.compat.uniform`: dask before 2023.3.0 draws other numbers of the same distribution)."""
    x: da.Array = uniform(spec.shape, spec.chunks, seed)
    return x


def transpose_mean(size: str, seed: int = 0) -> da.Array:
    """``(x + x.T).mean(axis=0)``: lazy, one value per column."""
    x = random_array(check_size(size, TRANSPOSE_SIZES), seed)
    return (x + x.T).mean(axis=0)


def tree_sum_std(size: str, seed: int = 0, split_every: int = SPLIT_EVERY) -> da.Array:
    """``[x.sum(), x.std()]`` as one lazy array of two values, both tree reductions."""
    x = random_array(check_size(size, TREE_SIZES), seed)
    return da.stack([x.sum(split_every=split_every), x.std(split_every=split_every)])


TRANSPOSE_MEAN = Workload("transpose_mean", ("transpose_mean",), TRANSPOSE_SIZES, describe_transpose)
TREE_SUM_STD = Workload("tree_sum_std", ("tree_sum_std",), TREE_SIZES, describe_tree)
