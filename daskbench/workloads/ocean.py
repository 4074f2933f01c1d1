"""Ocean anomaly: climatology and anomaly by interleaved groups (dask/distributed#2602, #6571).

A (time, lat, lon) field of seeded random numbers, a few time steps per chunk, with a
``day`` label that cycles along time (``day = t % groups``), so every group's members
are spread over the whole time axis. The climatology is the per-group mean, the anomaly
is the field minus its group's climatology, and the workload is the anomaly's time mean
(zero up to rounding, whatever the data: a built-in correctness check). This pattern is
the classic case of the scheduler loading far more input than it can release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from daskbench.compat import uniform
from daskbench.text import format_bytes
from daskbench.workloads.base import Workload, check_size


@dataclass(frozen=True)
class OceanSpec:
    shape: tuple[int, int, int]  # (time, lat, lon)
    time_chunk: int  # time steps per chunk; each chunk spans all of lat and lon
    groups: int  # number of "day" groups; members interleaved along time


SIZES: dict[str, OceanSpec] = {
    "tiny": OceanSpec((48, 16, 24), 1, 4),
    "small": OceanSpec((400, 512, 1024), 1, 20),
    "medium": OceanSpec((1200, 1024, 1024), 1, 30),
    "large": OceanSpec((3925, 1280, 1024), 1, 39),  # the coiled benchmark: 10 MiB chunks, 38 GiB
}


def describe(size: str) -> list[dict[str, Any]]:
    """The README row of the workload at ``size``: input shape and bytes, chunks."""
    spec = check_size(size, SIZES)
    nbytes = 8 * int(np.prod(spec.shape))
    chunk = 8 * spec.time_chunk * spec.shape[1] * spec.shape[2]
    n_chunks = -(-spec.shape[0] // spec.time_chunk)
    return [
        {
            "workload": "ocean_anomaly",
            "size": size,
            "input": f"{spec.shape} float64, {format_bytes(nbytes)} generated",
            "chunks": f"{n_chunks} x {format_bytes(chunk)}",
            "input_bytes": nbytes,
        }
    ]


def field(size: str, seed: int = 0) -> xr.DataArray:
    """The lazy input: seeded uniform random numbers with a cycling ``day`` coordinate."""
    spec = check_size(size, SIZES)
    n_time, n_lat, n_lon = spec.shape
    data = uniform(spec.shape, (spec.time_chunk, n_lat, n_lon), seed)
    return xr.DataArray(
        data,
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(n_time), "day": ("time", np.arange(n_time) % spec.groups)},
        name="temperature",
    )


def anomalies(values: xr.DataArray) -> xr.DataArray:
    """Each time step minus the mean of its ``day`` group (without flox, as the reference)."""
    with xr.set_options(use_flox=False):
        climatology = values.groupby("day").mean("time")
        return values.groupby("day") - climatology


def anomaly(size: str, seed: int = 0) -> xr.DataArray:
    """The workload: the time mean of the anomalies, a lazy (lat, lon) DataArray."""
    return anomalies(field(size, seed)).mean("time")


WORKLOAD = Workload("ocean_anomaly", ("ocean_anomaly",), SIZES, describe)
