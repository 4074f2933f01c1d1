"""PostgreSQL through a URL: a real server started for the test, on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench.store import Store
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
