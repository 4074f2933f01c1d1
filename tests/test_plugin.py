"""The pytest plugin end to end: real pytest runs driving real Dask clusters into a real store."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench.store import Store
from tests.helpers import BENCH_FILE, daskbench_cli, run_pytest

SECRET = "tok-SECRET-do-not-store-123"
OOM_FILE = """
import time
import dask
import numpy as np
import pytest

pytestmark = pytest.mark.benchmark


def _grow(limit_mb):
    chunks = []
    for _ in range(limit_mb // 20):
        chunks.append(np.ones(20 * 2**20, dtype=np.uint8))
        time.sleep(0.02)
    return len(chunks)


def test_a_eats_memory(measure):
    measure(lambda: dask.delayed(_grow)(3000), name="grow", params={})


def test_b_still_runs(measure):
    assert measure(dask.delayed(sum)([1, 2, 3]), name="after", params={}) == 6
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, subprocess.CompletedProcess[str]]]:
    """One real sweep: two benchmarks x saturation {1.0, inf} x workers {1}, stored in SQLite."""
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "test_bench.py").write_text(BENCH_FILE)
    db = f"sqlite:///{folder / 'results.db'}"
    result = run_pytest(folder, "-m", "benchmark", "-v", "--saturation", "1.0,inf", "--workers", "1", "--db", db,
                        "--label", "<script>x</script>", "--benchmark-json", str(folder / "bench.json"),
                        env={"DASK_COILED__TOKEN": SECRET})  # fmt: skip
    yield folder, db, result


def test_sweep_parametrizes_saturation_and_workers_in_test_ids(
    sweep: tuple[Path, str, subprocess.CompletedProcess[str]],
) -> None:
    """Each benchmark runs once per (saturation, workers) and the test id shows both."""
    _, _, result = sweep
    assert result.returncode == 0, result.stdout + result.stderr
    for test in ("test_small_sum", "test_other_sum"):
        for sat in ("1.0", "inf"):
            assert f"{test}[sat={sat}-workers=1] PASSED" in result.stdout


def test_sweep_records_the_saturation_read_back_from_the_scheduler(
    sweep: tuple[Path, str, subprocess.CompletedProcess[str]],
) -> None:
    """The stored cluster spec carries the scheduler's own worker-saturation value."""
    _, db, _ = sweep
    shown = json.loads(daskbench_cli("show", Store(db).latest_run().run_id, "--db", db, "--format", "json").stdout)[
        "measurements"
    ]
    assert sorted({row["worker_saturation"] for row in shown}, key=str) == [1.0, "inf"]
    assert {row["outcome"] for row in shown} == {"passed"}
    required = {"run_id", "workload", "params", "n_workers", "threads_per_worker", "worker_saturation", "repeat",
                "outcome", "runtime_s", "peak_memory_bytes", "peak_worker_memory_bytes", "mean_memory_bytes",
                "spilled_bytes", "cost_usd", "fingerprint"}  # fmt: skip
    assert all(required <= row.keys() for row in shown)
    assert all(row["runtime_s"] > 0 and row["peak_worker_memory_bytes"] > 50 * 2**20 for row in shown)


def test_cases_sharing_a_spec_share_one_cluster_and_prepare_is_timed(
    sweep: tuple[Path, str, subprocess.CompletedProcess[str]],
) -> None:
    """Two benchmarks of one spec record the same cluster start (one cluster); measure.prepare is a phase."""
    _, db, _ = sweep
    store = Store(db)
    measurements = store.measurements([store.latest_run().run_id])
    starts = {m.phases["cluster_start"] for m in measurements}
    assert len(measurements) == 4 and len(starts) == 2
    cases = store.cases()
    prepared = [m.phases.get("prepare") for m in measurements if cases[m.fingerprint].workload == "other_sum"]
    assert len(prepared) == 2 and all(p is not None and p >= 0.2 for p in prepared)


def test_runs_lists_the_run_with_versions(sweep: tuple[Path, str, subprocess.CompletedProcess[str]]) -> None:
    """`daskbench runs --format json` lists runs with id, label, start and versions."""
    _, db, _ = sweep
    (run,) = json.loads(daskbench_cli("runs", "--db", db, "--format", "json").stdout)["runs"]
    assert run["label"] == "<script>x</script>"
    assert run["measurements"] == 4 and run["versions"]["dask"] and run["started_at"] and run["ended_at"]


def test_tokens_in_dask_config_never_reach_the_store(sweep: tuple[Path, str, subprocess.CompletedProcess[str]]) -> None:
    """A credential in the dask config is recorded as *** (the store file does not contain it)."""
    folder, db, result = sweep
    for path in folder.glob("results.db*"):  # the database and its WAL
        assert SECRET.encode() not in path.read_bytes()
    assert SECRET not in result.stdout + result.stderr
    assert Store(db).latest_run().dask_config["coiled.token"] == "***"


def test_pytest_benchmark_json_carries_runtime_and_memory(
    sweep: tuple[Path, str, subprocess.CompletedProcess[str]],
) -> None:
    """pytest-benchmark's JSON gets our compute-phase time and memory/cost in extra_info."""
    folder, _, _ = sweep
    benchmarks = json.loads((folder / "bench.json").read_text())["benchmarks"]
    assert len(benchmarks) == 4
    assert all(b["stats"]["rounds"] == 1 and b["extra_info"]["peak_worker_memory_bytes"] > 0 for b in benchmarks)


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--saturation", "0", "--saturation: '0' is not a number > 0 or 'inf'"),
        ("--saturation", "abc", "--saturation: 'abc' is not a number > 0 or 'inf'"),
        ("--workers", "-1", "--workers: worker count '-1' must be >= 1"),
        ("--size", "huge", "--size: 'huge' is not a size"),
        ("--cluster", "kubernetes", "--cluster 'kubernetes' is not a cluster spec"),
        ("--cluster", "tcp://127.0.0.1:9", "cannot reach the scheduler at tcp://127.0.0.1:9"),
        ("--cluster", "coiled", "--cluster coiled needs the coiled package: pip install 'coiled>=1.0'"),
        ("-k", "no_such_workload", "no benchmark matches -k 'no_such_workload'; list them with"),
    ],
)
def test_bad_values_stop_before_any_cluster_starts(tmp_path: Path, flag: str, value: str, words: str) -> None:
    """A bad option ends the session with one error line, no test run (so no cluster), no store."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    result = run_pytest(tmp_path, "-m", "benchmark", f"{flag}={value}", "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and words in errors[0], result.stderr
    assert not (tmp_path / "r.db").exists()
    assert not re.search(r"\d+ (passed|failed|error)", result.stdout), result.stdout[-2000:]


def test_interleave_runs_repeat_zero_of_every_case_before_repeat_one(tmp_path: Path) -> None:
    """--interleave --repeat 2 orders the session ABAB: all r0 items, then all r1 items."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    result = run_pytest(
        tmp_path,
        "-m",
        "benchmark",
        "--collect-only",
        "-q",
        "--interleave",
        "--repeat",
        "2",
        "--saturation",
        "1.0,inf",
        "--workers",
        "1",
    )
    items = [line for line in result.stdout.splitlines() if "::" in line]
    assert len(items) == 8
    assert all("-r0]" in line for line in items[:4]) and all("-r1]" in line for line in items[4:])


def test_worker_killed_for_memory_is_recorded_as_oom_and_later_tests_run(tmp_path: Path) -> None:
    """A worker the nanny kills at 95% of its limit is an `oom` measurement, not a crashed suite."""
    (tmp_path / "test_bench.py").write_text(OOM_FILE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    result = run_pytest(tmp_path, "-m", "benchmark", "-v", "--workers", "1", "--saturation", "1.1",
                        "--memory-per-worker", "768MiB", "--db", db, "-p", "no:benchmark", env=env)  # fmt: skip
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    assert "test_b_still_runs[sat=1.1-workers=1] PASSED" in result.stdout
    store = Store(db)
    outcomes = {m.repeat: m for m in store.measurements()}
    grow, after = store.measurements()
    assert grow.outcome == "oom", grow
    assert grow.worker_restarts and grow.worker_restarts >= 1
    assert grow.peak_worker_memory_fraction and grow.peak_worker_memory_fraction > 0.9
    assert after.outcome == "passed" and outcomes


SLOW_FILE = """
import time
import dask
import pytest

pytestmark = pytest.mark.benchmark


def _nap(seconds):
    time.sleep(seconds)
    return seconds


def test_too_slow(measure):
    measure(dask.delayed(_nap)(60), name="too_slow", params={})
"""


def test_measurement_over_the_timeout_is_recorded_as_timeout(tmp_path: Path) -> None:
    """--timeout stops waiting for a measurement: its compute phase ends at the limit, long before the
    task's 60 s nap would; it is stored as `timeout`, with no runtime."""
    (tmp_path / "test_bench.py").write_text(SLOW_FILE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(tmp_path, "-m", "benchmark", "--workers", "1", "--saturation", "1.1", "--timeout", "2",
                        "--db", db, "-p", "no:benchmark")  # fmt: skip
    assert result.returncode == pytest.ExitCode.TESTS_FAILED
    (measurement,) = Store(db).measurements()
    assert measurement.outcome == "timeout" and measurement.runtime_s is None
    assert 2 <= measurement.phases["compute"] < 60, measurement.phases


BROKEN_FILE = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_a_breaks_the_cluster(measure, daskbench_client):
    assert measure(dask.delayed(sum)([1, 2]), name="a", params={}) == 3
    daskbench_client.cluster.close()  # what a crashed cluster looks like to the harness


def test_b_meets_the_broken_cluster(measure):
    measure(dask.delayed(sum)([1, 2]), name="b", params={})


def test_c_gets_a_fresh_cluster(measure):
    assert measure(dask.delayed(sum)([3, 4]), name="c", params={}) == 7
"""


def test_a_cluster_that_breaks_is_recorded_as_cluster_lost_and_replaced(tmp_path: Path) -> None:
    """A cluster the harness started that breaks (its scheduler closed): the measurement is `cluster-lost`
    (never judged), the next test gets a new cluster, and one summary line says so."""
    (tmp_path / "test_bench.py").write_text(BROKEN_FILE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(
        tmp_path, "-m", "benchmark", "--workers", "1", "--saturation", "1.1", "--db", db, "-p", "no:benchmark"
    )
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    assert [m.outcome for m in Store(db).measurements()] == ["passed", "cluster-lost", "passed"]
    said = " ".join(result.stdout.split())  # the summary line wraps at 120 columns
    assert "stored as cluster-lost (never judged); the tests after it ran on a fresh cluster" in said


def test_existing_scheduler_gets_saturation_set_while_idle_and_read_back(
    tmp_path: Path, running_scheduler: str
) -> None:
    """`--cluster tcp://...` sets worker-saturation on the idle scheduler and records what it reports."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE.split("def test_other_sum")[0])
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(
        tmp_path, "-m", "benchmark", "-v", "--cluster", running_scheduler, "--saturation", "1.0,inf", "--db", db
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    store = Store(db)
    cases = store.cases()
    saturations = sorted(cases[m.fingerprint].cluster.worker_saturation for m in store.measurements())
    assert saturations == [1.0, float("inf")]
    assert {c.cluster.backend for c in cases.values()} == {"address"}
    assert {c.cluster.memory_per_worker for c in cases.values()} == {2 * 2**30}
