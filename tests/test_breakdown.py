"""Where the time went: the breakdown adds up on a real cluster, and compare names what moved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import pandas as pd
import pytest

from daskbench.clusters import OpenCluster, open_cluster
from daskbench.evidence import evidence_root
from daskbench.flat import measurement_row
from daskbench.judge.compare import compare_runs
from daskbench.metrics.breakdown import TOLERANCE, fold
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec, Measurement, Run, now_iso
from daskbench.plugin.measuring import Measurer
from daskbench.report import write_report
from daskbench.store import Store
from tests.helpers import HOST, daskbench_cli


@pytest.fixture(scope="module")
def cluster() -> Iterator[OpenCluster]:
    opened = open_cluster(ClusterSpec("local", 1, 1, 2 * 2**30, 1.1))
    yield opened
    opened.close()


def _array_reduction() -> object:
    x = da.random.random((2000, 2000), chunks=(250, 250))
    return (x @ x.T).sum()


def _groupby() -> object:
    frame = pd.DataFrame({"key": [i % 17 for i in range(200_000)], "value": range(200_000)})
    return dd.from_pandas(frame, npartitions=8).groupby("key").value.mean()


@pytest.mark.parametrize("target", [_array_reduction, _groupby], ids=["array-reduction", "groupby"])
def test_breakdown_adds_up_to_thread_seconds_on_a_real_cluster(cluster: OpenCluster, target: object) -> None:
    """On one worker with one thread the activities sum to 1 x 1 x runtime within 10%, mostly compute, no transfer."""
    measurer = Measurer(cluster.client, "breakdown-test", load_prices(), 120, 1)
    measurement, _ = measurer.measure(Case("breakdown", {}, cluster.spec), 0, target, {}, {})
    assert measurement.outcome == "passed", measurement.message
    breakdown = measurement.extra["time_breakdown"]
    thread_seconds = measurement.runtime_s * 1 * 1
    assert abs(sum(breakdown.values()) - thread_seconds) <= TOLERANCE * thread_seconds, (breakdown, thread_seconds)
    assert breakdown["compute"] > 0 and breakdown["transfer"] <= 0.02 * thread_seconds
    assert measurement.extra["time_breakdown_by_prefix"], "task execution is also split by task prefix"
    assert measurement.metrics["transition_count"] > 0 and measurement.metrics["scheduler_cpu_s"] >= 0
    assert "max_tasks_queued" in measurement.metrics and "collector_errors" not in measurement.extra


def _five_tasks() -> object:
    return dask.delayed(sum)([dask.delayed(abs)(-i) for i in range(4)])


def test_a_measurement_of_three_calls_records_them_per_call_in_one_window(cluster: OpenCluster) -> None:
    """Three computes of one graph of five tasks (four ``abs`` and their ``sum``: the same keys each time) in one
    timed region: ``extra["loops"]`` 3, the runtime a third of the compute phase, five tasks a call (each call
    recomputed them: fifteen ran), the breakdown adding up per call, the worker and the client probed before and
    after the whole window, not around each call."""
    measurer = Measurer(cluster.client, "loops-test", load_prices(), 120, 1)
    measurement, result = measurer.measure(Case("loops", {}, cluster.spec), 0, _five_tasks(), {}, {}, loops=3)
    assert measurement.outcome == "passed" and result == 6, measurement.message
    compute = measurement.phases["compute"]  # stored to the microsecond
    assert measurement.loops == 3 and measurement.runtime_s == pytest.approx(compute / 3, abs=1e-6)
    assert measurement.metrics["task_count"] == 5
    breakdown = measurement.extra["time_breakdown"]
    assert abs(sum(breakdown.values()) - measurement.runtime_s) <= TOLERANCE * measurement.runtime_s, breakdown
    assert len(measurement.extra["cpu_probes_s"]) == 4, "the worker and the client probed before and after the window"


def test_transfer_beside_the_threads_is_capped_at_their_idle_time() -> None:
    """Gather time larger than what the threads did not execute is scaled into it; idle is what is left."""
    before: dict[str, dict[str, float]] = {"w": {}}
    after = {"w": {"execute\tsum\tthread-cpu\tseconds": 6.0, "gather-dep\tnetwork\tseconds": 8.0}}
    found = fold(before, after, thread_seconds=10.0)
    assert found.activities["compute"] == 6.0 and found.activities["transfer"] == 4.0
    assert found.activities["idle"] == 0.0 and found.adds_up()
    assert found.by_prefix == {"sum": {"compute": 6.0}}


# -- compare names what moved ------------------------------------------------------------------


def _run(store: Store, index: int) -> Run:
    run = Run(run_id=f"run{index}", label="t", started_at=f"2026-01-0{index}T00:00:00+00:00",
              ended_at=f"2026-01-0{index}T00:30:00+00:00", host=HOST)  # fmt: skip
    store.add_run(run)
    return run


def _add(store: Store, run: Run, case: Case, runtime: float, breakdown: dict[str, float]) -> None:
    store.add_case(case)
    for repeat, wiggle in enumerate((-0.01, 0.0, 0.01)):
        store.add_measurement(Measurement.of(
            run_id=run.run_id, fingerprint=case.fingerprint, repeat=repeat, outcome="passed",
            runtime_s=runtime * (1 + wiggle), peak_memory_bytes=2**30, peak_worker_memory_bytes=2**30,
            cost_usd=0.001, extra={"time_breakdown": breakdown}, recorded_at=now_iso()))  # fmt: skip


BASE = {"compute": 16.0, "transfer": 2.0, "idle": 2.0}


@pytest.mark.parametrize(
    ("candidate", "named"),
    [
        ({"compute": 16.0, "transfer": 9.0, "idle": 3.0}, "transfer +7.0 s"),
        ({"compute": 24.0, "transfer": 2.0, "idle": 2.0}, "compute +8.0 s"),
    ],
    ids=["transfer-heavy", "compute-heavy"],
)
def test_compare_names_the_activity_that_moved(tmp_path: Path, candidate: dict[str, float], named: str) -> None:
    """A planted 1.4x slowdown says which activity moved first, in seconds and share of thread time."""
    store = Store(f"sqlite:///{tmp_path / 'results.db'}")
    case = Case("shuffle", {"size": "small"}, ClusterSpec("local", 2, 1, 2**30, 1.1))
    base, cand = _run(store, 1), _run(store, 2)
    _add(store, base, case, 10.0, BASE)
    _add(store, cand, case, 14.0, candidate)
    verdict = next(v for v in compare_runs(store, baseline=base.run_id).verdicts if v.metric == "runtime_s")
    assert verdict.verdict in ("regressed", "inconclusive") and verdict.ratio is not None and verdict.ratio > 1.3
    moved = verdict.note.split("moved: ", 1)[1]
    assert moved.startswith(named) and "pts)" in moved
    row = measurement_row(store.measurements([cand.run_id])[0], case)
    assert row["time_breakdown"] == candidate


# -- evidence -------------------------------------------------------------------------------


def test_evidence_root_is_beside_a_sqlite_store_else_results_or_the_given_folder(tmp_path: Path) -> None:
    """A SQLite store keeps evidence beside its file; other stores under results/evidence unless a folder is given."""
    assert evidence_root(f"sqlite:///{tmp_path / 'r.db'}", None) == tmp_path / "r.db.evidence"
    assert evidence_root("postgresql://u@h/db", None) == Path("results/evidence").resolve()
    assert evidence_root("postgresql://u@h/db", str(tmp_path / "ev")) == tmp_path / "ev"


def test_evidence_writes_files_that_the_report_links(cluster: OpenCluster, tmp_path: Path) -> None:
    """With an evidence folder a measurement keeps a performance report and task stream; the report links them."""
    store = Store(f"sqlite:///{tmp_path / 'results.db'}")
    base, cand = _run(store, 1), _run(store, 2)
    folder = evidence_root(store.url, None) / cand.run_id
    measurer = Measurer(cluster.client, cand.run_id, load_prices(), 120, 1, evidence_dir=folder)
    case = Case("breakdown", {}, cluster.spec)
    measurement, _ = measurer.measure(case, 0, _array_reduction(), {}, {})
    kept = measurement.extra["evidence"]
    assert set(kept) == {"performance_report", "task_stream"}, measurement.extra.get("evidence_errors")
    assert Path(kept["performance_report"]).parent == folder and "<html" in Path(kept["performance_report"]).read_text()
    assert isinstance(json.loads(Path(kept["task_stream"]).read_text()), list)
    assert measurement.extra["evidence_seconds"] >= 0
    _add(store, base, case, 10.0, BASE)
    store.add_measurement(measurement)
    html = write_report(store, tmp_path / "report.html", baseline=base.run_id).read_text()
    assert Path(kept["performance_report"]).as_uri() in html and Path(kept["task_stream"]).as_uri() in html
    assert "Where the time went" in html and "-breakdown-time" in html
    runtime = next(v for v in compare_runs(store, candidate=cand.run_id, baseline=base.run_id).verdicts
                   if v.metric == "runtime_s")  # fmt: skip
    assert f"evidence: candidate {kept['performance_report']}" in runtime.note  # compare links it
    shown = daskbench_cli("show", cand.run_id, "--db", store.url, timeout=60)
    assert f"evidence (--evidence) of 1 measurement in {folder}" in " ".join(shown.stdout.split())  # wrapped at 120
