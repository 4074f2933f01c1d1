"""One declaration per metric: the catalog drives the record's checks, the store, show, compare and the report."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from daskbench import catalog
from daskbench.cli import main
from daskbench.judge.compare import compare_runs
from daskbench.model import Measurement
from daskbench.report import render_report
from daskbench.store import Store
from tests.helpers import run_pytest

#: A metric that is not built in: its declaration and its collector, nothing else.
EXTRA_METRIC_MODULE = '''
from daskbench import catalog
from daskbench.metrics import collectors

METRIC = catalog.Metric(
    "scheduler_transitions", "count", "work", "Scheduler transitions", "transitions",
    "more transitions", "fewer transitions", compared=True, integer=True, shown=True,
)


def _transitions(dask_scheduler):
    return int(dask_scheduler.transition_counter)


class Transitions:
    """Scheduler task transitions during the compute phase."""

    def start(self, client):
        self.before = client.run_on_scheduler(_transitions)

    def stop(self, client):
        return {"scheduler_transitions": client.run_on_scheduler(_transitions) - self.before}


def install():
    catalog.declare(METRIC)
    collectors.register(Transitions)
'''

CONFTEST = """
import extra_metric

extra_metric.install()
"""

BENCH_FILE = """
import dask.array as da
import pytest

pytestmark = pytest.mark.benchmark


def test_array_sum(measure):
    x = da.ones((400, 400), chunks=(100, 100))
    assert measure(lambda: x.sum(), name="ones_sum", params={"n": 400}) == 160000
"""


def test_built_in_metrics_are_each_declared_once_with_sane_defaults() -> None:
    """Time, memory above idle (workers' and the client's), the client's peak and cost are compared by default;
    every declaration has a floor >= 1 and a unit, and a fallback names a declared metric of the same unit."""
    compared = (
        "runtime_s",
        "peak_memory_above_idle_bytes",
        "peak_worker_memory_above_idle_bytes",
        "cost_usd",
        "client_peak_memory_above_idle_bytes",
        "client_peak_memory_bytes",
    )
    assert catalog.compared() == compared
    assert len(set(catalog.names())) == len(catalog.names())
    for name in catalog.names():
        metric = catalog.get(name)
        assert metric.floor >= 1.0 and metric.unit in catalog.AXIS and metric.kind in catalog.KINDS
        assert metric.fallback is None or catalog.get(metric.fallback).unit == metric.unit


def test_a_metric_declared_twice_differently_is_refused() -> None:
    """One declaration each: a second, different declaration of a name is an error, not an override."""
    with pytest.raises(ValueError, match="already declared"):
        catalog.declare(catalog.Metric("runtime_s", "s", "runtime", "Other", "other", "up", "down"))


def test_the_record_checks_metric_values_against_their_declarations() -> None:
    """Unknown names, negative values and fractional counts are refused where the record is made."""
    base = {"run_id": "r", "fingerprint": "f", "repeat": 0, "outcome": "oom"}
    with pytest.raises(ValueError, match="not a declared metric"):
        Measurement(**base, metrics={"made_up": 1.0})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"spilled_bytes must be >= 0"):
        Measurement(**base, metrics={"spilled_bytes": -1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"task_count must be a whole number"):
        Measurement(**base, metrics={"task_count": 1.5})  # type: ignore[arg-type]
    measured = Measurement.of(**base, peak_memory_bytes=10, cost_usd=None)
    assert measured.metrics == {"peak_memory_bytes": 10} and measured.cost_usd is None


def test_formats_and_effects_come_from_the_declaration() -> None:
    """The unit decides how a value reads; the words decide how a ratio reads."""
    assert catalog.get("runtime_s").format(12.34) == "12.3s"
    assert catalog.get("peak_memory_bytes").format(1.5 * 2**30) == "1.5 GiB"
    assert catalog.get("cost_usd").format(0.01234) == "$0.012"
    assert catalog.get("cost_usd").format(1.17e-05) == "$0.000012"  # never $1.17e-05
    assert catalog.get("runtime_s").effect(1.31) == "1.31x slower"
    assert catalog.get("peak_memory_bytes").effect(0.5) == "2.00x less memory"


@pytest.fixture(scope="module")
def extra_metric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, Path, str]]:
    """Two real benchmark runs with a metric added by declaration + collector in the suite's conftest."""
    folder = tmp_path_factory.mktemp("extra_metric")
    (folder / "extra_metric.py").write_text(EXTRA_METRIC_MODULE)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_bench.py").write_text(BENCH_FILE)
    db = f"sqlite:///{folder / 'results.db'}"
    args = ["-m", "benchmark", "--size", "tiny", "--workers", "1", "--saturation", "inf", "--repeat", "2",
            "--db", db, "-q"]  # fmt: skip
    for label in ("base", "cand"):
        done = run_pytest(folder, *args, "--label", label, env={"PYTHONPATH": str(folder)})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module("extra_metric")
        with catalog.declared(module.METRIC):
            yield module, folder, db
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("extra_metric", None)


def test_a_declared_metric_is_stored_for_every_measurement(extra_metric: tuple[ModuleType, Path, str]) -> None:
    """The collector's value lands in the store, with no schema change, for each repeat of each run."""
    _, _, db = extra_metric
    measurements = Store(db).measurements()
    assert len(measurements) == 4
    assert all(m.scheduler_transitions > 0 for m in measurements)
    assert all(isinstance(m.metrics["scheduler_transitions"], int) for m in measurements)


def test_a_declared_metric_is_shown(
    extra_metric: tuple[ModuleType, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`daskbench show` has a column for it and its JSON rows carry it."""
    _, _, db = extra_metric
    run_id = Store(db).latest_run().run_id
    assert main(["show", run_id, "--db", db]) == 0
    # the column titles: what comes before the first case's line (the head and the titles may wrap at 120 columns)
    assert "transitions" in capsys.readouterr().out.split("ones_sum")[0]
    assert main(["show", run_id, "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["measurements"]
    assert all(row["scheduler_transitions"] > 0 for row in rows)


def test_a_declared_metric_is_compared_and_reported(extra_metric: tuple[ModuleType, Path, str]) -> None:
    """`compare` judges it (compared=True) and the report has a switch position and rows for it."""
    _, _, db = extra_metric
    store = Store(db)
    base, cand = sorted(store.runs(), key=lambda run: run.started_at)
    comparison = compare_runs(store, baseline=base.run_id, candidate=cand.run_id)
    (verdict,) = [v for v in comparison.verdicts if v.metric == "scheduler_transitions"]
    assert verdict.ratio is not None and len(verdict.candidate_values) == 2
    html = render_report(store, baseline=base.run_id, candidate=cand.run_id)
    assert 'value="scheduler_transitions"' in html and 'data-metric="scheduler_transitions"' in html
    assert "Transitions" in html
