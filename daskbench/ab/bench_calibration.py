"""Calibration benchmarks, run by ``daskbench calibrate`` (not collected by a plain ``pytest -m benchmark``).

Every session measures the same work at planted slowdown factors, back to back on one
cluster: two arms at factor 1.0 (``base`` and ``aa``: an A/A pair) and arms at 1.05,
1.10, 1.20 and 1.50. The factor scales the CPU work each task does (never a measured
number), so a detection is a real slowdown of the tasks, seen through the whole harness.
"""

from __future__ import annotations

import dask
import pytest

pytestmark = pytest.mark.benchmark

#: (arm, factor): the A/A pair first, then the planted slowdowns.
ARMS = (("base", 1.0), ("aa", 1.0), ("x1.05", 1.05), ("x1.10", 1.10), ("x1.20", 1.20), ("x1.50", 1.50))
#: Pure-Python loop iterations per task at factor 1 (about 0.1 s per task on a 2026 laptop core).
UNITS = 2_000_000
TASKS = 4


def burn(iterations: int) -> int:
    """Deterministic CPU work holding the GIL, like much of real task code."""
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


@pytest.mark.parametrize(("arm", "factor"), ARMS, ids=[arm for arm, _ in ARMS])
def test_calibration(measure, arm: str, factor: float) -> None:  # type: ignore[no-untyped-def]
    iterations = int(UNITS * factor)
    parts = [dask.delayed(burn)(iterations) for _ in range(TASKS)]
    total = measure(dask.delayed(sum)(parts), name="calibration", params={"arm": arm, "factor": factor})
    assert total == TASKS * _expected(iterations)


def _expected(iterations: int) -> int:
    """burn(n) in closed form per residue class, so the check costs nothing."""
    full, rest = divmod(iterations, 7)
    per_cycle = sum(i * i % 7 for i in range(7))
    return full * per_cycle + sum(i * i % 7 for i in range(rest))
