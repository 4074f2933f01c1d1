"""Databases that are not daskbench's are refused untouched; rows from a newer daskbench are shown, not fatal."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from daskbench.errors import DaskbenchError
from daskbench.store import Store
from tests.helpers import BENCH_FILE, daskbench_cli, make_case, make_measurement, make_run, run_pytest


def foreign_db(path: Path) -> str:
    """Another application's SQLite file, with a ``runs`` table of its own; returns its sha256."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        conn.execute("INSERT INTO runs (name) VALUES ('theirs')")
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [["runs"], ["show", "abc"], ["compare"], ["report", "-o", "r.html"]])
def test_foreign_sqlite_file_is_refused_by_commands_and_left_unchanged(tmp_path: Path, command: list[str]) -> None:
    """`runs`, `show`, `compare` and `report` on another app's file: exit 2, one line, same sha256, no -wal."""
    path = tmp_path / "app.db"
    digest = foreign_db(path)
    result = daskbench_cli(*command, "--db", f"sqlite:///{path}")
    assert result.returncode == 2 and "not a daskbench store" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_foreign_sqlite_file_is_refused_by_a_benchmark_session(tmp_path: Path) -> None:
    """`pytest -m benchmark --db` another app's file: refused, nothing stored in it, its bytes unchanged."""
    path = tmp_path / "app.db"
    digest = foreign_db(path)
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                        "--db", f"sqlite:///{path}", "-k", "small_sum")  # fmt: skip
    assert result.returncode != 0 and "not a daskbench store" in result.stdout + result.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    """`daskbench runs` on a missing file says so and leaves no file behind."""
    result = daskbench_cli("runs", "--db", f"sqlite:///{tmp_path / 'typo.db'}")
    assert result.returncode == 2 and "no daskbench store" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_db_whose_folder_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    """A --db under a regular file gives one line naming the folder, not a traceback."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(DaskbenchError, match="cannot create the folder"):
        Store(f"sqlite:///{tmp_path / 'file' / 'sub' / 'r.db'}")


def test_outcome_unknown_to_this_version_is_shown_not_fatal(tmp_path: Path) -> None:
    """A measurement whose outcome a newer daskbench wrote still lists in `runs` and `show`."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    run, case = make_run(), make_case()
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case))
    store.close()
    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute("UPDATE measurements SET outcome = 'preempted'")
    conn.close()
    listed = daskbench_cli("runs", "--db", db, "--format", "json")
    shown = daskbench_cli("show", run.run_id[:8], "--db", db, "--format", "json")
    assert listed.returncode == 0 and shown.returncode == 0, listed.stderr + shown.stderr
    (row,) = json.loads(shown.stdout)["measurements"]
    assert "unknown outcome 'preempted'" in row["message"]
