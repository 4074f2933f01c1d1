"""Schema migrations run: a store written by daskbench 0.1 (schema 1) opens, upgrades and reads the same.

``tests/fixtures/store-v1.db`` was written by daskbench 0.1 itself (``make_store_v1.py``
beside it, run against that version), as pyperf keeps old result files as fixtures.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from daskbench.compare import compare_runs
from daskbench.errors import DaskbenchError
from daskbench.store import SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parent / "fixtures"
BASE_RUN, CAND_RUN = "11111111-aaaa-4000-8000-000000000001", "22222222-bbbb-4000-8000-000000000002"


@pytest.fixture
def v1_store(tmp_path: Path) -> str:
    """A copy of the committed schema-1 store (never the fixture itself: opening it upgrades it)."""
    path = tmp_path / "store-v1.db"
    shutil.copy(FIXTURES / "store-v1.db", path)
    return f"sqlite:///{path}"


def _schema_version(url: str) -> int:
    with sa.create_engine(url).connect() as conn:
        return int(conn.execute(sa.text("SELECT value FROM schema_meta WHERE key = 'schema_version'")).scalar_one())


def test_a_version_1_store_is_upgraded_to_the_current_schema(v1_store: str) -> None:
    """Opening runs every migration; the metric columns are gone and metric_values holds their values."""
    assert _schema_version(v1_store) == 1
    Store(v1_store).close()
    assert _schema_version(v1_store) == SCHEMA_VERSION == 3
    inspector = sa.inspect(sa.create_engine(v1_store))
    columns = {column["name"] for column in inspector.get_columns("measurements")}
    assert "runtime_s" not in columns and "peak_memory_bytes" not in columns
    assert all(inspector.has_table(name) for name in ("metric_values", "run_tags", "run_events", "measurement_flags"))


def test_upgraded_measurements_keep_every_value_written_by_the_old_version(v1_store: str) -> None:
    """Each of the twelve 0.1 metric columns comes back with the value 0.1 wrote; a failure has none."""
    store = Store(v1_store)
    measurements = store.measurements([BASE_RUN])
    assert len(measurements) == 7
    first = measurements[0]
    assert first.runtime_s == 2.0 and first.peak_memory_bytes == 3 * 2**30
    assert first.peak_worker_memory_fraction == 0.25 and first.task_count == 120
    assert first.bytes_transferred == 10 * 2**20 and first.cost_usd == pytest.approx(0.0012)
    assert isinstance(first.peak_memory_bytes, int) and len(first.metrics) == 12
    assert first.timeline == ((0.0, 100), (1.0, 3 * 2**30)) and first.phases["restart"] == 0.5
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
