"""The rows users see are made of the records' own JSON: ``show``, ``runs``, an export line and
pytest-benchmark's extra info say the same of the same measurement, field for field."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daskbench.cli import EXIT_OK, main
from daskbench.flat import CASE_COLUMNS, TASK_HEAD, RunSummary, case_columns, measurement_row, task_rows
from daskbench.model import JSON_VERSION, ClusterSpec, Run, TaskMemory
from daskbench.plugin.measure_fixture import EXTRA_INFO
from daskbench.store import Store
from tests.helpers import GIB, HOST, make_case, make_measurement

#: The columns an export keeps as JSON text (decoded here to compare with what ``show`` prints).
JSON_TEXT = ("versions", "host", "dask_config", "params", "cluster", "phases", "timeline", "extra")
TASKS = (TaskMemory("sum-chunk", 8, 3 * GIB // 4, GIB // 2, 1024, 2), TaskMemory("read", 4, GIB // 8, GIB // 16))


def _stored(tmp_path: Path) -> tuple[str, Run]:
    """A store of one A/B run with one measurement of a swept case: phases, extra, task memory and a flag."""
    url = f"sqlite:///{tmp_path / 'flat.db'}"
    run = Run(
        "run-flat", "nightly", "2026-01-01T00:00:00+00:00", "2026-01-01T00:30:00+00:00", "abc123",
        "https://ci.example/1", {"dask": "2025.1.0"}, HOST, {"distributed": {"x": 1}},
        {"ab_group": "g1", "ab_side": "a", "ab_round": "0"},
    )  # fmt: skip
    spec = ClusterSpec("local", 2, 1, 4 * GIB, math.inf, (("distributed.scheduler.x", "1"),))
    case = replace(make_case(), cluster=spec)
    m = make_measurement(
        run, case, phases={"compute": 1.0, "cluster_start": 2.5}, extra={"instance": "m5.large", "other": 1},
        message="fine", tasks=TASKS, cpu_probe_s=0.02,
    )  # fmt: skip
    store = Store(url)
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(m)
    store.flag_measurements(run.run_id, case.fingerprint, "noisy", "planted")
    store.close()
    return url, run


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(list(args)) == EXIT_OK
    return json.loads(capsys.readouterr().out)


def _export(capsys: pytest.CaptureFixture[str], url: str) -> dict[str, list[dict[str, Any]]]:
    """The rows of ``daskbench export`` by kind, the JSON text columns decoded."""
    assert main(["export", "--db", url]) == EXIT_OK
    rows: dict[str, list[dict[str, Any]]] = {}
    for line in capsys.readouterr().out.splitlines()[1:]:
        record = json.loads(line)
        row = {k: json.loads(v) if k in JSON_TEXT and isinstance(v, str) else v for k, v in record["row"].items()}
        rows.setdefault(record["kind"], []).append(row)
    return rows


def _same(shown: dict[str, Any], exported: dict[str, Any], at_least: set[str]) -> None:
    """Every field both have is equal; they share ``at_least`` these (so the check is not empty)."""
    shared = shown.keys() & exported.keys()
    assert at_least <= shared
    assert {k: shown[k] for k in shared} == {k: exported[k] for k in shared}


def test_show_runs_and_an_export_line_of_one_measurement_agree_on_every_field_they_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, run = _stored(tmp_path)
    runs = _json(capsys, "runs", "--db", url, "--format", "json")
    show = _json(capsys, "show", run.run_id, "--db", url, "--format", "json")
    tasks = _json(capsys, "show", run.run_id, "--tasks", "--db", url, "--format", "json")
    exported = _export(capsys, url)
    assert runs["version"] == show["version"] == tasks["version"] == JSON_VERSION
    assert runs["runs"] == [show["run"]] == [tasks["run"]]
    _same(show["run"], exported["run"][0], {"run_id", "label", "started_at", "git_sha", "ci_url", "versions", "host"})
    assert show["run"]["tags"] == {tag["key"]: tag["value"] for tag in exported["tag"]}
    (row,) = show["measurements"]
    (line,) = exported["measurement"]
    _same(row, line, {"run_id", "fingerprint", "repeat", "outcome", "message", "phases", "recorded_at"})
    assert {name: row[name] for name in line["metrics"]} == line["metrics"] and len(line["metrics"]) >= 5
    _same(row, exported["case"][0], {"fingerprint", "workload", "params"})
    assert len(tasks["tasks"]) == len(exported["task_peak"]) == len(TASKS)
    for task, peak in zip(tasks["tasks"], exported["task_peak"], strict=True):
        _same(task, peak, {"fingerprint", "repeat", "prefix", "tasks", "peak_bytes", "p95_bytes", "concurrency"})
        _same(task, row, set(TASK_HEAD))


def test_a_measurement_row_lifts_its_metrics_extra_and_case_to_columns() -> None:
    """Each declared metric a column (None when not measured), the shown extra, and the case's axes."""
    case = make_case()
    m = make_measurement(Run("r", "x", "2026-01-01T00:00:00+00:00"), case, extra={"instance": "m5.large"})
    row = measurement_row(m, case)
    assert row["runtime_s"] == m.runtime_s and row["spilled_bytes"] is None and row["instance"] == "m5.large"
    assert row["n_workers"] == case.cluster.n_workers and row["params"] == dict(case.params)
    assert row["worker_saturation"] == case.cluster.worker_saturation and row["task_slots"] == 2


def test_a_measurement_whose_case_is_unknown_has_every_case_column_empty() -> None:
    m = make_measurement(Run("r", "x", "2026-01-01T00:00:00+00:00"), make_case())
    assert set(case_columns(None)) == set(case_columns(make_case())) == set(CASE_COLUMNS)
    assert {key: measurement_row(m, None)[key] for key in CASE_COLUMNS} == case_columns(None)
    assert case_columns(None)["params"] == {} and case_columns(None)["n_workers"] is None


def test_unlimited_queuing_reads_inf_saturation_and_unlimited_task_slots() -> None:
    case = make_case(saturation=math.inf)
    assert case_columns(case)["worker_saturation"] == "inf" and case_columns(case)["task_slots"] == "unlimited"


def test_task_rows_are_headed_by_their_measurements_row() -> None:
    case = make_case()
    m = make_measurement(Run("r", "x", "2026-01-01T00:00:00+00:00"), case, tasks=TASKS)
    rows, row = task_rows(m, case), measurement_row(m, case)
    assert [r["prefix"] for r in rows] == ["sum-chunk", "read"]
    assert all(r["repeat"] == row["repeat"] and r["workload"] == row["workload"] for r in rows)
    assert [TaskMemory.from_json(r) for r in rows] == list(TASKS)


def test_a_run_summary_counts_outcomes_and_lifts_the_ab_tags() -> None:
    run = Run("r", "x", "2026-01-01T00:00:00+00:00", tags={"ab_group": "g", "ab_side": "b"}, dask_config={"a": 1})
    summary = RunSummary(run, {"passed": 3, "oom": 1}, 0.02, "finished").to_json()
    assert summary["measurements"] == 4 and summary["outcomes"] == {"oom": 1, "passed": 3}
    assert (summary["ab_group"], summary["ab_side"], summary["ab_round"]) == ("g", "b", None)
    assert "dask_config" not in summary and summary["status"] == "finished"


def test_pytest_benchmarks_extra_info_is_fields_of_the_show_row() -> None:
    """What the plugin hands pytest-benchmark is named as ``show`` names it."""
    case = make_case()
    assert set(EXTRA_INFO) <= measurement_row(make_measurement(Run("r", "x", "t"), case), case).keys()
