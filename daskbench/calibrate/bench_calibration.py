"""Calibration benchmarks, run by ``daskbench calibrate`` (not collected by a plain ``pytest -m benchmark``).

``daskbench calibrate`` runs this file as the two sides of a lockstep comparison. Side B's tasks
burn each arm's planted factor times the CPU work of side A's (``aa`` plants nothing: an A/A
pair), so every arm is a real slowdown of the tasks seen through the whole harness, and its
measured effect (diluted by the fixed cost of scheduling and collecting) is shown beside it.
An arm takes about 1 s at size ``tiny`` and 3 s at ``small`` on a 2026 server core.
"""

from __future__ import annotations

import os

import dask
import pytest

from daskbench.calibrate.arms import ARMS, SIDE_ENV

pytestmark = pytest.mark.benchmark

#: Pure-Python loop iterations per task at factor 1, per size (about 0.25 s per task at tiny).
UNITS = {"tiny": 3_200_000, "small": 10_000_000, "medium": 20_000_000, "large": 40_000_000}
TASKS = 4


def burn(iterations: int) -> int:
    """Deterministic CPU work holding the GIL, like much of real task code."""
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


@pytest.mark.parametrize(("arm", "factor"), ARMS, ids=[arm for arm, _ in ARMS])
def test_calibration(measure, size: str, arm: str, factor: float) -> None:  # type: ignore[no-untyped-def]
    planted = factor if os.environ.get(SIDE_ENV) == "B" else 1.0
    iterations = int(UNITS.get(size, UNITS["tiny"]) * planted)
    parts = [dask.delayed(burn)(iterations) for _ in range(TASKS)]
    total = measure(dask.delayed(sum)(parts), name="calibration", params={"arm": arm, "factor": factor})
    assert total == TASKS * _expected(iterations)


def _expected(iterations: int) -> int:
    """burn(n) in closed form per residue class, so the check costs nothing."""
    full, rest = divmod(iterations, 7)
    per_cycle = sum(i * i % 7 for i in range(7))
    return full * per_cycle + sum(i * i % 7 for i in range(rest))
