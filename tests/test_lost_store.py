"""A store lost in the middle of a session stops it as a full disk does (issue 35, class 1).

Each loss is made for real while a measurement runs: a PostgreSQL server started by the test is
stopped (``pg_ctl -m immediate``, a crash) or restarted; a SQLite store's file is deleted or replaced by
another file. A store that is gone for good stops the session with one line naming the cause and its
fix (no pytest frames, no traceback), says "stored" only of committed rows, and the rows committed
before it stay readable once the store is back. A server that is back before the next write costs
nothing: the session goes on.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench.store import Store
from tests.helpers import POSTGRES_PASSWORD, Postgres, daskbench_cli, run_pytest

pytestmark = pytest.mark.postgres

#: A suite whose second benchmark loses the store (the command in LOSE_STORE, run while it measures).
LOSING_SUITE = """
import json
import os
import subprocess
import threading
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _slow(seconds):
    time.sleep(seconds)
    return 3


def _lose():
    subprocess.run(json.loads(os.environ["LOSE_STORE"]), check=True, capture_output=True)


def test_a_first(measure):
    assert measure(lambda: dask.delayed(sum)([1, 2]), name="first") == 3


def test_b_loses_the_store(measure):
    threading.Timer(0.5, _lose).start()
    assert measure(lambda: dask.delayed(_slow)(3), name="second") == 3


def test_c_after(measure):
    assert measure(lambda: dask.delayed(sum)([1, 2]), name="third") == 3
"""
#: Words that mean a traceback or pytest's frames reached the user.
FRAMES = ("Traceback", "E   daskbench", "errors.DaskbenchError", "sqlalchemy.exc")


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server of this test's own, so the test may stop and start it (in a folder of /tmp: the
    server's user cannot enter pytest's)."""
    server = Postgres(Path(tempfile.mkdtemp(prefix="daskbench-pg-"))).start()
    yield server
    server.stop()
    shutil.rmtree(server.folder, ignore_errors=True)


def _session(folder: Path, db: str, lose: list[str]) -> subprocess.CompletedProcess[str]:
    (folder / "test_bench.py").write_text(LOSING_SUITE)
    return run_pytest(folder, "-p", "no:benchmark", "-m", "benchmark", "--workers", "1", "--saturation", "1.1",
                      "--db", db, env={"LOSE_STORE": json.dumps(lose)})  # fmt: skip


def _run_id(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("see them with:")).split()[-1]


def _assert_stopped_with_one_line(output: str, cause: str) -> None:
    """The lost store named in one line with its fix, the session stopped there, "stored" only of the first."""
    assert not any(frame in output for frame in FRAMES), output[-3000:]
    assert cause in output and "(this measurement is not stored)" in output, output[-3000:]
    assert "daskbench: third" not in output  # stopped at the first measurement the store could not take
    assert "stored before that" in output and ": 1 measurement" in output


def test_postgresql_stopped_mid_measurement_stops_the_session_with_one_line(postgres: Postgres, tmp_path: Path) -> None:
    """``pg_ctl -m immediate stop`` while the second benchmark measures: one line naming the unreachable
    server and ``pg_isready`` (once), the session stopped, the password never shown; with the server back, the
    first measurement is there and the run reads ``crashed`` (its end could not be recorded)."""
    result = _session(tmp_path, postgres.url, postgres.stop_command("immediate"))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    _assert_stopped_with_one_line(output, "its database server stopped or is unreachable")
    assert "pg_isready" in output and POSTGRES_PASSWORD not in output
    # pytest prints the failure again under "short test summary info" (in full where CI is set): not ours
    summary = result.stdout.split("daskbench ===", 1)[-1].split("short test summary info", 1)[0]
    assert summary.count("cannot reach the store") == 1 and "shows it as crashed" in summary, summary
    run_id = _run_id(output)
    postgres.start()
    shown = daskbench_cli("show", run_id, "--format", "json", "--db", postgres.url)
    assert [m["workload"] for m in json.loads(shown.stdout)["measurements"]] == ["first"], shown.stderr
    listed = json.loads(daskbench_cli("runs", "--format", "json", "--db", postgres.url).stdout)["runs"]
    assert [run["status"] for run in listed] == ["crashed"]


def test_postgresql_restarted_between_writes_costs_the_session_nothing(postgres: Postgres, tmp_path: Path) -> None:
    """The server restarted while a benchmark measures (its pooled connections dead): the next write
    reconnects, the session goes on, and all three measurements are stored."""
    restart = ["sh", "-c", f"{shlex.join(postgres.stop_command('fast'))} && {shlex.join(postgres.start_command())}"]
    result = _session(tmp_path, postgres.url, restart)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "3 measurements stored" in output
    assert [m.outcome for m in Store(postgres.url).measurements()] == ["passed"] * 3


def test_postgresql_down_when_the_session_starts_is_one_line_before_any_cluster(tmp_path: Path) -> None:
    """A --db server that is not running: pytest's usage error in one line naming it, no cluster started."""
    (tmp_path / "test_bench.py").write_text(LOSING_SUITE)
    url = Postgres(tmp_path / "never-started").url
    result = run_pytest(tmp_path, "-p", "no:benchmark", "-m", "benchmark", "--db", url, "-k", "first")
    output = result.stdout + result.stderr
    assert result.returncode == 4, output[-3000:]
    assert not any(frame in output for frame in FRAMES) and POSTGRES_PASSWORD not in output
    assert "cannot reach the store" in output and "daskbench: first" not in output


def test_sqlite_store_deleted_mid_session_stops_it_instead_of_writing_into_the_void(tmp_path: Path) -> None:
    """The store's file deleted while a benchmark measures: SQLite would go on writing into the deleted
    file, unseen; instead one line says the file went away and how to go on, and the session stops."""
    path = tmp_path / "store" / "r.db"
    result = _session(tmp_path, f"sqlite:///{path}", ["rm", "-f", str(path), f"{path}-wal", f"{path}-shm"])
    output = result.stdout + result.stderr
    assert result.returncode != 0
    _assert_stopped_with_one_line(output, "was deleted, moved or replaced while in use")
    assert not path.exists()  # nothing recreated a fresh, misleading store in its place


def test_sqlite_store_replaced_mid_session_leaves_the_new_file_untouched(tmp_path: Path) -> None:
    """Another store moved over the file mid-session (``mv other.db r.db``): the session stops with the
    one line, and the file now there is byte for byte the one moved in."""
    path = tmp_path / "store" / "r.db"
    other = tmp_path / "other.db"
    Store(f"sqlite:///{other}").close()
    kept = tmp_path / "other-copy.db"
    shutil.copy(other, kept)
    result = _session(tmp_path, f"sqlite:///{path}", ["mv", str(other), str(path)])
    output = result.stdout + result.stderr
    assert result.returncode != 0
    _assert_stopped_with_one_line(output, "was deleted, moved or replaced while in use")
    assert path.read_bytes() == kept.read_bytes()
