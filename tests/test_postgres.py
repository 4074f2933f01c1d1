"""PostgreSQL through a URL: a real server started for the test, on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench.judge import machine
from daskbench.store import SCHEMA_VERSION, Store, schema
from tests.helpers import (
    BENCH_FILE,
    POSTGRES_PASSWORD,
    daskbench_cli,
    make_case,
    make_measurement,
    make_run,
    run_pytest,
)

pytestmark = pytest.mark.postgres  # the server: the postgres_url fixture in conftest.py


def test_store_round_trips_on_postgresql(postgres_url: str) -> None:
    """The same store code works on PostgreSQL: schema created, rows written and read back."""
    store = Store(postgres_url)
    run, case = make_run(), make_case()
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case, peak_memory_bytes=40 * 2**30))
    (read,) = Store(postgres_url).measurements([run.run_id])
    assert read.peak_memory_bytes == 40 * 2**30 and read.timeline == ((0.0, 100), (0.5, 200))


def test_benchmark_run_into_postgresql_never_shows_the_password(postgres_url: str, tmp_path: Path) -> None:
    """`pytest -m benchmark --db postgresql://...` stores there; no output carries the password."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    result = run_pytest(tmp_path, "-m", "benchmark", "--workers", "1", "--saturation", "1.0", "--db", postgres_url)
    assert result.returncode == 0, result.stdout[-2000:]
    listing = daskbench_cli("runs", "--db", postgres_url, "--format", "json")
    assert listing.returncode == 0 and '"measurements": 2' in listing.stdout
    for text in (result.stdout, result.stderr, listing.stdout, listing.stderr):
        assert POSTGRES_PASSWORD not in text
    assert "postgres:***@127.0.0.1" in result.stdout


def test_postgresql_takes_the_same_median_cpu_probe_as_machine_speed(postgres_url: str) -> None:
    """On PostgreSQL `Store.metric_medians` picks the middle values its own way (an ordered ``array_agg``): the
    same medians as `machine.speed`, odd and even counts, zero probes left out, a run without probes absent."""
    store = Store(postgres_url)
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    probes = {0: (0.05, 0.03, 0.04), 1: (0.02, 0.10, 0.0, 0.06, 0.04), 2: (0.0,)}
    ids = []
    for index, values in probes.items():
        run = make_run(run_id=f"median-{index}")
        store.add_run(run)
        ids.append(run.run_id)
        for repeat, seconds in enumerate(values):
            store.add_measurement(make_measurement(run, case, repeat, cpu_probe_s=seconds))
    expected = {run_id: machine.speed(store.measurements([run_id])) for run_id in ids}
    assert store.metric_medians(ids, "cpu_probe_s") == {k: v for k, v in expected.items() if v is not None}
    assert expected == {"median-0": 0.04, "median-1": 0.05, "median-2": None}
    everyone = store.metric_medians(None, "cpu_probe_s")  # every run of the store, in one query
    assert {run_id: everyone[run_id] for run_id in ids if run_id in everyone} == {"median-0": 0.04, "median-1": 0.05}


def test_a_postgresql_store_of_schema_5_gets_measurement_indexes_holding_the_id(postgres_url: str) -> None:
    """Schema 6 on PostgreSQL: a store written at schema 5 gets, on open, its measurement indexes with the id
    in them, as a fresh store has them."""
    fresh = _indexes(Store(postgres_url))
    assert (
        "INCLUDE (id)" in fresh["ix_measurements_run_outcome"]
        and "INCLUDE (id)" in fresh["ix_measurements_fingerprint_run"]
    )
    store = Store(postgres_url)
    with store.engine.begin() as conn:  # the store as schema 5 left it
        for index in schema.measurements.indexes:
            conn.exec_driver_sql(f"DROP INDEX {index.name}")
            conn.exec_driver_sql(
                f"CREATE INDEX {index.name} ON measurements ({', '.join(c.name for c in index.columns)})"
            )
        conn.exec_driver_sql("UPDATE schema_meta SET value = '5' WHERE key = 'schema_version'")
    assert "INCLUDE" not in _indexes(store)["ix_measurements_run_outcome"]
    assert _indexes(Store(postgres_url)) == fresh
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM schema_meta").scalar() == str(SCHEMA_VERSION)


def _indexes(store: Store) -> dict[str, str]:
    query = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
    with store.engine.connect() as conn:
        return dict(conn.exec_driver_sql(query).all())
