"""PostgreSQL through a URL: a real server started for the test, on loopback."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench.store import Store
from tests.conftest import make_case, make_measurement, make_run
from tests.test_plugin import BENCH_FILE, daskbench_cli, run_pytest

pytestmark = pytest.mark.postgres
PASSWORD = "hunter2-not-for-logs"


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("no PostgreSQL server binaries; run ci/setup --test to install Debian's postgresql")
    return Path(found[-1]).parent


def _as_postgres(command: list[str]) -> list[str]:
    """initdb refuses to run as root; run the server as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bin_dir = _pg_bin()
    folder = Path(tempfile.mkdtemp(prefix="daskbench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = folder / "data"
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -h 127.0.0.1"
    subprocess.run(
        _as_postgres(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]), capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)


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
        assert PASSWORD not in text
    assert "postgres:***@127.0.0.1" in result.stdout
