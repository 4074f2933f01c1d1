"""DataFrame joins: large-large on a unique, scattered key (a full shuffle) and large-small.

Inputs are Parquet datasets written with pyarrow under one root: ``left/``, ``right/``
and ``small/``. Row ``i`` of a side gets the key ``scramble(i)``, a bijection, so keys
are unique and every partition holds keys from everywhere (the join must shuffle), yet
which rows match is known from the row ranges alone: `expected` needs no data.
The result is reduced to ``rows``, ``checksum`` (sum of the integer columns, exact) and
``float_total`` (sum of every float column, so no column can be pruned away).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec import AbstractFileSystem

from daskbench.compat import merge_shuffle_keyword
from daskbench.text import format_bytes
from daskbench.workloads.base import Inputs, Workload, check_size

ShuffleMethod = Literal["tasks", "p2p"]
SHUFFLE_METHODS: tuple[str, ...] = ("tasks", "p2p")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so i -> i * M mod 2**63 is a bijection
_MASK = np.uint64(2**63 - 1)
_MODULUS = {"left": 1009, "right": 1013, "small": 1013}  # integer column = row index % modulus
_SUMMARY_META = pd.DataFrame(
    {"rows": pd.Series(dtype="int64"), "checksum": pd.Series(dtype="int64"), "float_total": pd.Series(dtype="float64")}
)


@dataclass(frozen=True)
class JoinSpec:
    """Rows and files per side; ``overlap`` rows of left find a partner in right."""

    left_rows: int
    right_rows: int
    overlap: int
    partitions: int  # files per large side
    float_columns: int  # payload columns per large side
    small_rows: int  # rows of the small side (one file); keys of every other left row


SIZES: dict[str, JoinSpec] = {
    "tiny": JoinSpec(20_000, 16_000, 12_000, 4, 2, 1_000),
    "small": JoinSpec(10_000_000, 10_000_000, 7_500_000, 20, 6, 4_000_000),
    "medium": JoinSpec(80_000_000, 80_000_000, 60_000_000, 128, 6, 8_000_000),
    "large": JoinSpec(800_000_000, 800_000_000, 600_000_000, 1_024, 6, 16_000_000),
}


def generator_params(size: str) -> dict[str, Any]:
    """Everything that determines the files; the data cache is keyed by its hash.

    ``format`` is the generator's version: bump it whenever a change to this module
    changes the tables written, so old datasets are not reused.
    """
    return {**asdict(check_size(size, SIZES)), "format": 1}


def describe(size: str) -> list[dict[str, Any]]:
    """The README rows of both joins at ``size``: rows per side, bytes in memory, files."""
    spec = check_size(size, SIZES)
    side = 8 * (2 + spec.float_columns)
    big = (spec.left_rows + spec.right_rows) * side
    rows = [("join_big", f"{spec.left_rows:,} x {spec.right_rows:,} rows", big)]
    rows.append(
        (
            "join_big_small",
            f"{spec.left_rows:,} x {spec.small_rows:,} rows",
            spec.left_rows * side + spec.small_rows * 24,
        )
    )
    return [
        {
            "workload": name,
            "size": size,
            "input": f"{shape}, ~{format_bytes(nbytes)} in memory",
            "chunks": f"{spec.partitions} partitions per large side",
            "input_bytes": nbytes,
        }
        for name, shape, nbytes in rows
    ]


# -- the inputs ---------------------------------------------------------------------------


def scramble(rows: np.ndarray, seed: int) -> np.ndarray:
    """Row index -> key: a bijection on [0, 2**63), so keys are unique and scattered."""
    mixed = (rows.astype(np.uint64) ^ np.uint64(seed)) * _MULTIPLIER
    return (mixed & _MASK).astype(np.int64)


def _row_ranges(spec: JoinSpec) -> dict[str, tuple[int, int, int]]:
    """Side -> (first row, stop, step); right starts where it overlaps left's tail."""
    right_start = spec.left_rows - spec.overlap
    return {
        "left": (0, spec.left_rows, 1),
        "right": (right_start, right_start + spec.right_rows, 1),
        "small": (0, 2 * spec.small_rows, 2),
    }


def _table(side: str, rows: np.ndarray, n_floats: int, seed: int, part: int) -> pa.Table:
    rng = np.random.default_rng([seed, list(_MODULUS).index(side), part])
    prefix = side[0]
    columns = {"key": scramble(rows, seed), prefix: (rows % _MODULUS[side]).astype(np.int64)}
    payload = rng.random((n_floats, len(rows)))
    columns.update({f"{prefix}{k}": payload[k] for k in range(n_floats)})
    return pa.table(columns)


def write_tables(fs: AbstractFileSystem, root: str, size: str, seed: int) -> None:
    """Write ``left/``, ``right/`` (``partitions`` files each) and ``small/`` (one file)."""
    spec = check_size(size, SIZES)
    for side, (start, stop, step) in _row_ranges(spec).items():
        parts = 1 if side == "small" else spec.partitions
        n_floats = 1 if side == "small" else spec.float_columns
        bounds = np.linspace(start // step, stop // step, parts + 1).astype(np.int64)
        fs.makedirs(f"{root}/{side}", exist_ok=True)
        for part in range(parts):
            rows = np.arange(bounds[part], bounds[part + 1], dtype=np.int64) * step
            with fs.open(f"{root}/{side}/part-{part:05d}.parquet", "wb") as handle:
                pq.write_table(_table(side, rows, n_floats, seed, part), handle)


def expected(size: str, join: Literal["big", "big_small"]) -> dict[str, int]:
    """Exact ``rows`` and ``checksum`` of a join, from the row ranges alone."""
    spec = check_size(size, SIZES)
    ranges = _row_ranges(spec)
    other = "right" if join == "big" else "small"
    start, stop, step = ranges[other]
    stop = min(stop, spec.left_rows)  # rows of ``other`` that also exist in left
    rows, checksum = 0, 0
    for lo in range(start, stop, step * 10_000_000):
        matched = np.arange(lo, min(stop, lo + step * 10_000_000), step, dtype=np.int64)
        rows += len(matched)
        checksum += int((matched % _MODULUS["left"]).sum() + (matched % _MODULUS[other]).sum())
    return {"rows": rows, "checksum": checksum}


# -- the workloads ------------------------------------------------------------------------


def _read(urlpath: str, side: str, storage_options: dict[str, Any] | None) -> dd.DataFrame:
    return dd.read_parquet(f"{urlpath}/{side}/", storage_options=storage_options or {})


def join_big(urlpath: str, shuffle: ShuffleMethod, storage_options: dict[str, Any] | None = None) -> dd.Series:
    """Inner merge of ``left`` and ``right`` on ``key`` with a shuffle; lazy summary Series."""
    if shuffle not in SHUFFLE_METHODS:
        raise ValueError(f"unknown shuffle method {shuffle!r}; choose one of {', '.join(SHUFFLE_METHODS)}")
    left, right = _read(urlpath, "left", storage_options), _read(urlpath, "right", storage_options)
    keyword = merge_shuffle_keyword(left)  # shuffle_method, or shuffle before dask 2024.1
    merged = left.merge(right, on="key", how="inner", broadcast=False, **{keyword: shuffle})
    return summarise(merged)


def join_big_small(urlpath: str, storage_options: dict[str, Any] | None = None) -> dd.Series:
    """Inner merge of ``left`` with the one-partition ``small`` side (no shuffle of left)."""
    left, small = _read(urlpath, "left", storage_options), _read(urlpath, "small", storage_options)
    return summarise(left.merge(small.repartition(npartitions=1), on="key", how="inner"))


def summarise(merged: dd.DataFrame) -> dd.Series:
    """``rows``, ``checksum`` and ``float_total`` of a joined frame (opaque to column pruning).

    The computed Series is float64 (pandas' common dtype); the integer sums stay exact
    below 2**53, far above any size here.
    """
    return merged.map_partitions(summarise_frame, meta=_SUMMARY_META).sum()


def summarise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The summary of one pandas frame: sums of its integer (but key) and float columns."""
    ints = frame.select_dtypes("integer").drop(columns="key")
    floats = frame.select_dtypes("floating")
    return pd.DataFrame(
        {
            "rows": [len(frame)],
            "checksum": [int(ints.to_numpy().sum())],
            "float_total": [float(floats.to_numpy().sum())],
        }
    )


WORKLOAD = Workload("joins", ("join_big", "join_big_small"), SIZES, describe, Inputs(generator_params, write_tables))
