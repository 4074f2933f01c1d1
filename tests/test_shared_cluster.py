"""Someone else's scheduler (``--cluster tcp://``) is left as it was found."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from distributed import Client, Event

from daskbench.store import Store
from tests.helpers import BENCH_FILE, run_pytest

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the remote processes cannot import this file


def _scheduler_state(dask_scheduler: Any) -> tuple[float, list[str]]:
    return float(dask_scheduler.WORKER_SATURATION), sorted(getattr(dask_scheduler, "nanny_plugins", {}))


def test_shared_scheduler_keeps_its_workers_saturation_and_plugins(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Without --restart-workers: workers are not restarted (same pid), the record says so, and
    worker-saturation and the scheduler's plugins are as before the session."""
    address = request.getfixturevalue("running_scheduler")  # conftest.py: scheduler + worker
    with Client(address, timeout=30) as client:
        before = client.run_on_scheduler(_scheduler_state)
        pids_before = client.run(os.getpid)
    (tmp_path / "test_bench.py").write_text(BENCH_FILE.split("def test_other_sum")[0])
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address, "--saturation", "2.5",
                        "--repeat", "2", "--db", db)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Client(address, timeout=30) as client:
        assert client.run_on_scheduler(_scheduler_state) == before
        assert client.run(os.getpid) == pids_before
    measurements = Store(db).measurements()
    assert len(measurements) == 2 and all(m.extra.get("workers_restarted") is False for m in measurements)
    assert all(m.phases.get("restart") == 0.0 for m in measurements)


def _running(dask_scheduler: Any) -> int:
    return sum(1 for ts in dask_scheduler.tasks.values() if ts.state == "processing")


#: The `distributed.Event` the foreign task of the busy-scheduler test waits on until the test releases it.
FOREIGN = "daskbench-test-foreign"


def _known(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


def _release_once_more_work_arrives(client: Client, name: str) -> threading.Thread:
    """Sets the event once the scheduler knows a task besides the held one (the told session's): the held task
    ran all through the refused session and the told one's start, and the told one waits for it no longer."""

    def release() -> None:
        deadline = time.monotonic() + 120
        while client.run_on_scheduler(_known) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        Event(name, client=client).set()

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    return thread


def test_a_scheduler_busy_with_another_clients_work_is_refused_and_their_work_untouched(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Another client's task is running: the session stops with one line before any run row
    (after --wait-idle 1); told with --allow-busy-cluster it measures, marking the measurement;
    either way the foreign task keeps running: nothing of it is cancelled or restarted. (The task runs until
    the told session's work reaches the scheduler, not a fixed 30 s the measurement would wait behind.)"""
    address = request.getfixturevalue("running_scheduler")  # conftest.py: scheduler + worker
    (tmp_path / "test_bench.py").write_text(BENCH_FILE.split("def test_other_sum")[0])
    db = tmp_path / "r.db"
    with Client(address, timeout=30) as other:
        # Another client's long task, on the worker's one thread until the test releases it (60 s at most):
        foreign = other.submit(Event(FOREIGN, client=other).wait, 60, pure=False)
        deadline = time.monotonic() + 30
        while other.run_on_scheduler(_running) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert other.run_on_scheduler(_running) == 1, "the foreign task never started"
        result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                            "--saturation", "1.1", "--wait-idle", "1", "--db", f"sqlite:///{db}")  # fmt: skip
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout[-3000:] + result.stderr[-3000:]
        errors = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and "running 1 task of other clients after waiting 1 s" in errors[0]
        assert "--wait-idle SECONDS" in errors[0] and not db.exists()
        assert foreign.status == "pending"  # still running: nothing of theirs was cancelled or restarted
        releaser = _release_once_more_work_arrives(other, FOREIGN)
        told = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                          "--saturation", "1.1", "--allow-busy-cluster", "--db", f"sqlite:///{db}")  # fmt: skip
        assert told.returncode == 0, told.stdout[-3000:] + told.stderr[-3000:]
        (measured,) = Store(f"sqlite:///{db}").measurements()
        assert "running 1 task of other clients" in measured.extra["shared_cluster_busy"]
        releaser.join(timeout=5)
        assert foreign.result(timeout=30) is True  # measured beside it, never restarted, cancelled or lost
