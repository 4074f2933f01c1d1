"""The measuring side on releases that lack today's APIs (`daskbench.compat`), down to dask/distributed 2023.1.0.

These run on the installed (newest) release: the older forms are reached by hiding the newer one, or by
planted worker state of the older shape (digest keys, a spill buffer without counters). Real old
releases are measured by ``measure/release-matrix``, which runs a bundled case on 2023.1.0, a middle one and
the newest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed.diagnostics.plugin import NannyPlugin, WorkerPlugin

from daskbench import compat, evidence
from daskbench.clusters import OpenCluster, open_cluster
from daskbench.judge.compare import compare_runs
from daskbench.judge.machine import cpu_share
from daskbench.metrics import breakdown, counters
from daskbench.metrics.breakdown import BreakdownCollector, fold
from daskbench.metrics.collectors import NOT_AVAILABLE, Collected, Window, merge, not_available
from daskbench.model import Case, ClusterSpec, Measurement, Run, now_iso
from daskbench.store import Store
from daskbench.workloads import arrays
from tests.helpers import HOST, daskbench_cli


@pytest.fixture(scope="module")
def cluster() -> Iterator[OpenCluster]:
    opened = open_cluster(ClusterSpec("local", 1, 1, 2 * 2**30, 1.1))
    yield opened
    opened.close()


# -- the time breakdown and the counters ---------------------------------------------------------


def test_without_fine_metrics_the_breakdown_and_task_cpu_are_not_available_not_zero(cluster: OpenCluster) -> None:
    """On a distributed that meters no task execution (before 2023.3.2) the scheduler metrics are still
    measured; task_cpu_s and the breakdown are left out and said in extra["not_available"]."""
    window = Window(Case("sum", {}, cluster.spec))
    collector = BreakdownCollector(window, fine=False)
    collector.start(cluster.client)
    cluster.client.compute(da.ones((400, 400), chunks=100).sum()).result()
    window.runtime_s = 0.5
    found = collector.stop(cluster.client)
    assert found.metrics["transition_count"] > 0 and "scheduler_cpu_s" in found.metrics
    assert "task_cpu_s" not in found.metrics and "time_breakdown" not in found.extra
    assert set(found.extra[NOT_AVAILABLE]) == {"task_cpu_s", "time_breakdown", "time_breakdown_by_prefix",
                                               "thread_seconds"}  # fmt: skip
    assert "2023.3.2" in found.extra[NOT_AVAILABLE]["task_cpu_s"]


def test_execute_digests_without_a_span_id_keep_their_task_prefix() -> None:
    """distributed 2023.3.2-2023.5.x keys execution ("execute", prefix, activity, unit); from 2023.6.0 a span
    id comes second. Both fold into compute time by prefix."""
    old = SimpleNamespace(digests_total={("execute", "sum", "thread-cpu", "seconds"): 2.0, ("latency",): 0.1})
    new = SimpleNamespace(digests_total={("execute", "3f2a-span", "sum", "thread-cpu", "seconds"): 3.0})
    after = {"old": breakdown._worker_seconds(old), "new": breakdown._worker_seconds(new)}
    found = fold({}, after, thread_seconds=10.0)
    assert found.activities["compute"] == 5.0 and found.by_prefix == {"sum": {"compute": 5.0}}


def _worker(data: object, executed: int) -> SimpleNamespace:
    return SimpleNamespace(data=data, transfer_outgoing_bytes_total=10, state=SimpleNamespace(executed_count=executed))


def test_a_spill_buffer_that_counts_nothing_gives_no_spill_counters_and_says_so() -> None:
    """Before 2023.3.2 the spill buffer has no cumulative_metrics: the spill counters are not available;
    a worker without a memory limit (a plain dict) spills nothing, and 0 is true there."""
    uncounted = SimpleNamespace(spilled_total=0)  # a SpillBuffer of distributed 2023.1
    assert set(counters._worker_counters(_worker(uncounted, 3))) == {"bytes_transferred", "task_count"}
    assert counters._worker_counters(_worker({}, 3))["spilled_bytes"] == 0
    before = counters.CounterSnapshot({"w": counters._worker_counters(_worker(uncounted, 3))}, {})
    after = counters.CounterSnapshot({"w": counters._worker_counters(_worker(uncounted, 8))}, {})
    totals, _ = counters.difference(before, after)
    assert totals == {"bytes_transferred": 0, "task_count": 5}


def test_what_each_collector_could_not_measure_is_gathered_in_one_entry() -> None:
    """Two collectors that each left metrics out: the measurement names all of them, with the reasons."""
    first = Collected({"task_count": 4}, not_available("no spill counters", "spilled_bytes"))
    second = Collected({"transition_count": 9}, {**not_available("no fine metrics", "task_cpu_s"), "other": 1})
    found = merge([first, second])
    assert found.extra[NOT_AVAILABLE] == {"spilled_bytes": "no spill counters", "task_cpu_s": "no fine metrics"}
    assert found.extra["other"] == 1 and found.metrics == {"task_count": 4, "transition_count": 9}


# -- the judge copes with a side that has no breakdown ---------------------------------------------


def _side(store: Store, index: int, case: Case, runtime: float, extra: dict[str, Any]) -> Run:
    run = Run(run_id=f"run{index}", label="t", started_at=f"2026-01-0{index}T00:00:00+00:00",
              ended_at=f"2026-01-0{index}T00:30:00+00:00", host=HOST)  # fmt: skip
    store.add_run(run)
    for repeat, wiggle in enumerate((-0.01, 0.0, 0.01)):
        store.add_measurement(Measurement.of(
            run_id=run.run_id, fingerprint=case.fingerprint, repeat=repeat, outcome="passed",
            runtime_s=runtime * (1 + wiggle), peak_memory_bytes=2**30, peak_worker_memory_bytes=2**30,
            cost_usd=0.001, extra=extra, recorded_at=now_iso()))  # fmt: skip
    return run


def test_a_changed_runtime_says_which_side_had_no_time_breakdown(tmp_path: Path) -> None:
    """A baseline measured on distributed 2023.1 (no breakdown) against a slower candidate: the note says the
    baseline had none and why, instead of naming "idle" as what moved."""
    store = Store(f"sqlite:///{tmp_path / 'results.db'}")
    case = Case("shuffle", {"size": "small"}, ClusterSpec("local", 2, 1, 2**30, 1.1))
    store.add_case(case)
    why = compat.NO_FINE_METRICS
    base = _side(store, 1, case, 10.0, not_available(why, *breakdown.FINE))
    _side(store, 2, case, 14.0, {"time_breakdown": {"compute": 24.0, "idle": 4.0}, "thread_seconds": 28.0})
    verdict = next(v for v in compare_runs(store, baseline=base.run_id).verdicts if v.metric == "runtime_s")
    assert f"moved: no time breakdown on the baseline: {why}" in verdict.note
    measured = store.measurements([base.run_id])
    assert cpu_share(measured) == 1.0  # the machine-speed guard reads all of such a case's time as CPU


# -- plugins, arrays, merges, task prefixes ----------------------------------------------------


class _OldClient:
    """What distributed 2023.1-2023.9.1 offers for plugins: register_worker_plugin(plugin, name, nanny)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, bool]] = []

    def register_worker_plugin(self, plugin: object, name: str | None = None, nanny: bool | None = None) -> None:
        self.calls.append((type(plugin).__name__, name, bool(nanny)))


class _Watch(NannyPlugin):
    pass


class _Tasks(WorkerPlugin):
    pass


def test_plugins_register_the_old_way_where_register_plugin_is_missing() -> None:
    """A nanny plugin goes to the nannies (nanny=True), a worker plugin to the workers, the name kept."""
    client = _OldClient()
    compat.register_plugin(client, _Watch())
    compat.register_plugin(client, _Tasks(), name="daskbench-task-memory")
    assert client.calls == [("_Watch", None, True), ("_Tasks", "daskbench-task-memory", False)]


def test_random_arrays_fall_back_to_random_state_before_default_rng(monkeypatch: pytest.MonkeyPatch) -> None:
    """dask before 2023.3.0 has no da.random.default_rng: the arrays are drawn by RandomState, the same
    distribution (the benchmark's checks hold), other numbers."""
    newer = arrays.transpose_mean("tiny").compute(scheduler="sync")
    monkeypatch.delattr(da.random, "default_rng")
    older = arrays.transpose_mean("tiny").compute(scheduler="sync")
    assert older.shape == newer.shape and np.all((older >= 0) & (older <= 2)) and abs(older.mean() - 1.0) < 0.05
    assert not np.allclose(older, newer)


def test_a_merge_names_its_shuffle_method_by_the_keyword_its_dataframe_takes() -> None:
    """Today's (and dask-expr's) merge takes shuffle_method; the legacy dask.dataframe before 2024.1 took shuffle."""
    frame = dd.from_pandas(pd.DataFrame({"key": range(10)}), npartitions=2)
    assert compat.merge_shuffle_keyword(frame) == "shuffle_method"

    class Legacy:
        def merge(self, right: object, how: str = "inner", shuffle: str | None = None) -> None: ...

    assert compat.merge_shuffle_keyword(Legacy()) == "shuffle"


def test_a_worker_task_without_a_prefix_is_named_by_its_key() -> None:
    """The worker's TaskState has no prefix in distributed 2023.1.x: --task-memory reads it off the key."""
    assert compat.task_prefix(SimpleNamespace(prefix="sum"), "sum-1a2b") == "sum"
    assert compat.task_prefix(SimpleNamespace(), ("random_sample-3c4d5e", 0, 1)) == "random_sample"
    assert compat.task_prefix(None, "mean_chunk-9f8e") == "mean_chunk"


def test_a_failed_performance_report_still_keeps_the_task_stream(cluster: OpenCluster, tmp_path: Path) -> None:
    """An old distributed whose dashboard refuses this bokeh fails the report; the task stream is kept."""
    since = time.time()
    cluster.client.compute(da.ones((200, 200), chunks=100).sum()).result()
    failed = {"performance_report": "ImportError: Dask needs bokeh >= 2.4.2, < 3"}
    found = evidence._save(cluster.client, tmp_path, tmp_path / "missing.html", since, failed)
    assert set(found["evidence"]) == {"task_stream"} and found["evidence_errors"] == failed
    assert isinstance(json.loads(Path(found["evidence"]["task_stream"]).read_text()), list)


# -- the report needs a newer bokeh than measuring ---------------------------------------------------


@pytest.mark.parametrize("command", ["report", "publish"])
def test_reporting_with_a_bokeh_too_old_for_the_report_is_one_line(tmp_path: Path, command: str) -> None:
    """An environment of distributed 2023.1's era holds bokeh 2.4.3 (its dashboard needs bokeh<3): daskbench
    measures there, and `report`/`publish` say in one line which bokeh they need, before writing anything."""
    fake = tmp_path / "site" / "bokeh-2.4.3.dist-info"  # found first on sys.path: metadata reads 2.4.3
    fake.mkdir(parents=True)
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: bokeh\nVersion: 2.4.3\n")
    db = f"sqlite:///{tmp_path / 'results.db'}"
    Store(db).add_run(Run(run_id="run1", label="t", started_at="2026-01-01T00:00:00+00:00", host=HOST))
    out = tmp_path / "out"
    done = daskbench_cli(command, "--db", db, "-o", str(out), env={"PYTHONPATH": str(tmp_path / "site")})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"error: daskbench {command} needs bokeh>=3.4; this environment "
                                                   "has bokeh 2.4.3")  # fmt: skip
    assert not out.exists()
