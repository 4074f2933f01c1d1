"""Shared fixtures for the harness's own tests: pytester, and factories of real records."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daskbench.model import Case, ClusterSpec, Measurement, Run, now_iso
from daskbench.store import Store

pytest_plugins = ["pytester"]

#: A mark expression that selects benchmarks only: "benchmark" or "benchmark and ...".
_BENCHMARKS_ONLY = re.compile(r"\s*benchmark(\s+and\s.*)?", re.DOTALL)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`pytest -m benchmark` does not import the harness's tests: none of them is a benchmark,
    and they use packages only ``ci/setup --test`` installs (moto, playwright, psycopg)."""
    return True if _BENCHMARKS_ONLY.fullmatch(config.getoption("markexpr", "") or "") else None


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A real, empty SQLite store in a temporary directory."""
    return Store(f"sqlite:///{tmp_path / 'daskbench.db'}")


def make_run(**overrides: Any) -> Run:
    values: dict[str, Any] = {
        "run_id": str(uuid.uuid4()),
        "label": "test",
        "started_at": now_iso(),
        "ended_at": now_iso(),  # a finished run: compare's defaults use finished runs only
        "versions": {"dask": "2026.8.0", "python": "3.11.7"},
        "host": {"cpu_model": "test-cpu", "cores": 2, "memory_bytes": 24 * 2**30},
        "dask_config": {"distributed.scheduler.worker-saturation": 1.1},
    }
    return Run(**{**values, **overrides})


def make_case(workload: str = "ocean_anomaly", saturation: float = 1.1, n_workers: int = 2, **params: Any) -> Case:
    spec = ClusterSpec("local", n_workers, 1, 4 * 2**30, saturation)
    return Case(workload, params or {"size": "tiny"}, spec)


def make_measurement(run: Run, case: Case, repeat: int = 0, **overrides: Any) -> Measurement:
    values: dict[str, Any] = {
        "run_id": run.run_id,
        "fingerprint": case.fingerprint,
        "repeat": repeat,
        "outcome": "passed",
        "runtime_s": 1.0,
        "peak_memory_bytes": 2 * 2**30,
        "peak_worker_memory_bytes": 2**30,
        "cost_usd": 0.001,
        "timeline": ((0.0, 100), (0.5, 200)),
    }
    return Measurement.of(**{**values, **overrides})


@pytest.fixture
def factories() -> dict[str, Callable[..., Any]]:
    return {"run": make_run, "case": make_case, "measurement": make_measurement}
