"""Schema migrations run: stores written by daskbench 0.1 (schema 1), at schema 3 and at schema 4 open, upgrade
and read the same.

``tests/fixtures/store-v1.db`` was written by daskbench 0.1 itself (``make_store_v1.py``
beside it, run against that version), ``store-v3.db`` by the code at schema 3
(``make_store_v3.py``), ``store-v4.db`` at schema 4 (``make_store_v4.py``), as pyperf keeps old
result files as fixtures.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from daskbench.errors import DaskbenchError
from daskbench.judge.compare import compare_runs
from daskbench.model import Measurement, TaskMemory
from daskbench.store import SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parent / "fixtures"
BASE_RUN, CAND_RUN = "11111111-aaaa-4000-8000-000000000001", "22222222-bbbb-4000-8000-000000000002"


def _copy_fixture(tmp_path: Path, name: str) -> str:
    """A copy of a committed store (never the fixture itself: opening it upgrades it)."""
    shutil.copy(FIXTURES / name, tmp_path / name)
    return f"sqlite:///{tmp_path / name}"


@pytest.fixture
def v1_store(tmp_path: Path) -> str:
    """The schema-1 store written by daskbench 0.1."""
    return _copy_fixture(tmp_path, "store-v1.db")


def _schema_version(url: str) -> int:
    with sa.create_engine(url).connect() as conn:
        return int(conn.execute(sa.text("SELECT value FROM schema_meta WHERE key = 'schema_version'")).scalar_one())


def test_a_version_1_store_is_upgraded_to_the_current_schema(v1_store: str) -> None:
    """Opening runs every migration; the metric columns are gone and metric_values holds their values."""
    assert _schema_version(v1_store) == 1
    Store(v1_store).close()
    assert _schema_version(v1_store) == SCHEMA_VERSION == 6
    inspector = sa.inspect(sa.create_engine(v1_store))
    columns = {column["name"] for column in inspector.get_columns("measurements")}
    assert "runtime_s" not in columns and "peak_memory_bytes" not in columns
    tables = ("metric_values", "run_tags", "run_events", "measurement_flags", "task_memory")
    assert all(inspector.has_table(name) for name in tables)


def test_upgraded_measurements_keep_every_value_written_by_the_old_version(v1_store: str) -> None:
    """Each of the twelve 0.1 metric columns comes back with the value 0.1 wrote; a failure has none; each
    measurement reads as one call."""
    store = Store(v1_store)
    measurements = store.measurements([BASE_RUN])
    assert len(measurements) == 7
    first = measurements[0]
    assert first.runtime_s == 2.0 and first.peak_memory_bytes == 3 * 2**30
    assert first.peak_worker_memory_fraction == 0.25 and first.task_count == 120
    assert first.bytes_transferred == 10 * 2**20 and first.cost_usd == pytest.approx(0.0012)
    assert isinstance(first.peak_memory_bytes, int) and len(first.metrics) == 12
    assert first.timeline == ((0.0, 100), (1.0, 3 * 2**30)) and first.phases["restart"] == 0.5
    assert {m.loops for m in measurements} == {1}  # written before a measurement made several calls: one each
    (oom,) = [m for m in measurements if m.outcome == "oom"]
    assert oom.metrics == {} and oom.runtime_s is None and oom.message == "KilledWorker: fixture"


def test_an_upgraded_store_compares_and_takes_new_runs(v1_store: str) -> None:
    """Baselines survive the upgrade, compare reads old runs, and the store is opened again as is."""
    store = Store(v1_store)
    assert store.baseline("main") == (BASE_RUN,)
    comparison = compare_runs(store, candidate=CAND_RUN)
    runtime = [v for v in comparison.verdicts if v.metric == "runtime_s" and v.ratio is not None]
    assert len(runtime) == 2 and all(v.ratio == pytest.approx(1.5) for v in runtime)
    store.tag_run(CAND_RUN, {"host_class": "fixture"})
    store.close()
    reopened = Store(v1_store)
    assert len(reopened.measurements()) == 14 and reopened.run(CAND_RUN).tags == {"host_class": "fixture"}


def test_a_store_from_a_newer_daskbench_is_refused_with_the_fix(v1_store: str) -> None:
    """A schema this version does not know is never written to; the error says to upgrade."""
    with sa.create_engine(v1_store).begin() as conn:
        conn.execute(sa.text("UPDATE schema_meta SET value = '99' WHERE key = 'schema_version'"))
    with pytest.raises(DaskbenchError, match=r"schema 99, newer than this daskbench knows .*upgrade daskbench"):
        Store(v1_store)
    assert _schema_version(v1_store) == 99


V3_BASE, V3_CAND = "33333333-cccc-4000-8000-000000000003", "44444444-dddd-4000-8000-000000000004"


@pytest.fixture
def v3_store(tmp_path: Path) -> str:
    """The schema-3 store (written before task memory existed)."""
    return _copy_fixture(tmp_path, "store-v3.db")


def test_a_version_3_store_upgrades_with_everything_intact_and_no_task_memory(v3_store: str) -> None:
    """Runs, tags, events, cases, metric values, flags and the baseline read as schema 3 wrote
    them; the new task memory table is there and empty."""
    assert _schema_version(v3_store) == 3
    store = Store(v3_store)
    assert _schema_version(v3_store) == SCHEMA_VERSION
    run = store.run(V3_BASE)
    assert run.tags == {"host_class": "fixture", "select_m": "benchmark"} and run.versions["dask"] == "2026.11.0"
    assert [status for status, _, _ in store.events([V3_BASE])[V3_BASE]] == ["running", "finished"]
    assert store.baseline("main") == (V3_BASE,) and len(store.cases()) == 3
    measurements = store.measurements([V3_BASE])
    assert len(measurements) == 7 and all(m.tasks == () for m in store.measurements())
    first = measurements[0]
    assert first.runtime_s == 2.0 and first.transition_count == 480 and first.scheduler_cpu_s == 0.1
    assert first.extra["time_breakdown"] == {"compute": 1.5, "idle": 0.5} and first.task_peak_bytes is None
    (flagged,) = [m for m in measurements if m.flags]
    assert flagged.outcome == "wrong-result" and flagged.flags == ("wrong-result",)
    with sa.create_engine(v3_store).connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM task_memory")).scalar_one() == 0


def test_an_upgraded_version_3_store_takes_task_memory_and_compares(v3_store: str) -> None:
    """A measurement with task memory is stored beside the old ones and read back; compare still works."""
    store = Store(v3_store)
    old = store.measurements([V3_CAND])[0]
    tasks = (TaskMemory("big", 4, 600 * 2**20, 590 * 2**20, 2**20, 1), TaskMemory("small", 8, 2**20, 2**19))
    store.add_measurement(Measurement(run_id=V3_CAND, fingerprint=old.fingerprint, repeat=9, outcome="passed",
                                      metrics={"runtime_s": 3.0, "task_peak_bytes": 600 * 2**20}, tasks=tasks))  # fmt: skip
    (added,) = [m for m in Store(v3_store).measurements([V3_CAND]) if m.repeat == 9]
    assert added.tasks == tasks and added.task_peak_bytes == 600 * 2**20
    runtime = [v for v in compare_runs(store, candidate=V3_CAND).verdicts if v.metric == "runtime_s" and v.ratio]
    assert len(runtime) == 2  # the two transpose_mean cases; the wrong-result case has no ratio


V4_RUNS = [f"5555555{i}-eeee-4000-8000-00000000000{i}" for i in range(5)]


@pytest.fixture
def v4_store(tmp_path: Path) -> str:
    """The schema-4 store (written before the history indexes)."""
    return _copy_fixture(tmp_path, "store-v4.db")


def _indexes(url: str) -> dict[str, list[str]]:
    inspector = sa.inspect(sa.create_engine(url))
    return {
        index["name"]: list(index["column_names"])
        for table in ("runs", "measurements")
        for index in inspector.get_indexes(table)
        if index["name"]
    }


def test_a_version_4_store_gets_the_history_indexes_on_open(v4_store: str) -> None:
    """Opening a schema-4 store adds the indexes a window of history is read through, as a fresh store has them."""
    assert _schema_version(v4_store) == 4 and "ix_measurements_fingerprint_run" not in _indexes(v4_store)
    Store(v4_store).close()
    assert _schema_version(v4_store) == SCHEMA_VERSION
    found = _indexes(v4_store)
    assert found["ix_measurements_fingerprint_run"] == ["fingerprint", "run_id", "outcome", "repeat"]
    assert found["ix_measurements_run_outcome"] == ["run_id", "outcome", "fingerprint", "repeat"]
    assert found["ix_runs_started"] == ["started_at", "run_id"]


def _shape(url: str) -> dict[str, object]:
    """Each table's columns, keys and indexes, and whether SQLite keeps it in its key's order (WITHOUT ROWID)."""
    engine = sa.create_engine(url)
    inspector = sa.inspect(engine)
    with engine.connect() as conn:
        sql = dict(conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'table'")).all())
    return {
        table: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
            inspector.get_pk_constraint(table)["constrained_columns"],
            sorted((i["name"], tuple(i["column_names"])) for i in inspector.get_indexes(table)),
            "WITHOUT ROWID" in sql[table],
        )
        for table in inspector.get_table_names()
    }


def test_an_upgraded_version_4_store_has_the_shape_of_a_fresh_one(v4_store: str, tmp_path: Path) -> None:
    """After the migration the store's tables, keys and indexes are those a fresh store is created with,
    metric values kept in their key's order."""
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    Store(fresh).close()
    Store(v4_store).close()
    assert _shape(v4_store) == _shape(fresh)
    assert _shape(fresh)["metric_values"][3] is True


def test_an_upgraded_version_4_store_reads_and_judges_its_history_as_written(v4_store: str) -> None:
    """Runs, counts, flags, task memory, the baseline and a history comparison read as schema 4 wrote them:
    the accepted 1.3x step is the level the newest run is judged against, the wrong-result run is no history."""
    store = Store(v4_store)
    assert [run.run_id for run in store.runs()][1:] == V4_RUNS[::-1] and store.baseline("main") == (V4_RUNS[0],)
    counts = store.outcome_counts(V4_RUNS)
    assert counts[V4_RUNS[1]] == {"passed": 4, "wrong-result": 2} and counts[V4_RUNS[0]] == {"passed": 6}
    first = store.measurements([V4_RUNS[0]])[0]
    assert first.tasks[0].prefix == "transpose" and first.cpu_probe_s == 0.03
    comparison = compare_runs(store, candidate=V4_RUNS[4], history=20)
    runtime = {(v.fingerprint, v.metric): v for v in comparison.verdicts if v.metric == "runtime_s"}
    accepted = [v for v in runtime.values() if "accepted as a new level" in v.note]
    assert len(accepted) == 1 and accepted[0].baseline_values == pytest.approx(
        (2.6182,)
    )  # the median of its two repeats
    assert len(comparison.baseline_runs) == 4  # the side-by-side run is skipped


def test_a_read_only_command_that_upgrades_the_store_says_so_once_and_who_can_no_longer_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``daskbench runs`` on a schema-4 store upgrades it (that is right) and says so in one line on stderr,
    naming both schemas and that an older daskbench refuses it now; the next command says nothing; the JSON on
    stdout stays JSON."""
    from daskbench.cli import main

    url = _copy_fixture(tmp_path, "store-v4.db")
    assert main(["runs", "--db", url, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    said = " ".join(err.split())  # the note is wrapped to the terminal's 120 columns
    assert said.count("note: upgraded the store") == 1 and f"from schema 4 to {SCHEMA_VERSION}:" in said
    assert f"knows schema {SCHEMA_VERSION - 1} or older refuses it from now on" in said and json.loads(out)["runs"]
    assert main(["show", BASE_RUN[:8], "--db", url]) in (0, 2)  # whatever show says of the run: no second note
    assert "upgraded the store" not in capsys.readouterr().err
