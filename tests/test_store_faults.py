"""A store that cannot be written is named for what it is, on real parts (issue 20, class 1).

Each place is made for real: a tmpfs filled to the last byte (a full disk), a read-only bind mount
(read-only media), and folder and file modes that deny writing. Root ignores file modes through its
capabilities to override them, so the mode cases run daskbench under ``setpriv`` with those two
capabilities dropped from its bounding set (``dac_override``, ``dac_read_search``): root that obeys
file modes, as any user does. A test is skipped only where the part cannot be had (no mount
permission, no ``setpriv``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from daskbench.store import Store
from tests.helpers import BENCH_FILE, add_results, add_run, daskbench_cli, fill_disk, make_case, obeying_file_modes

#: Places a store cannot be written, each made for real by `unwritable_store`.
PLACES = ("read-only mount", "read-only folder", "read-only file", "full disk")
#: What each place's one line names.
CAUSES = {
    "read-only mount": "read-only file system",
    "read-only folder": "permission denied",
    "read-only file": "permission denied",
    "full disk": "is full",
}
#: Words of the corrupt-file diagnosis, never given for a store that is only unwritable.
CORRUPT = ("not a usable", "move the file away", "not a SQLite database")


@dataclass
class Place:
    """A store somewhere daskbench cannot write it: its file, the run in it, how to run daskbench there."""

    path: Path
    run_id: str
    prefix: tuple[str, ...] = ()
    kind: str = ""

    @property
    def db(self) -> str:
        return f"sqlite:///{self.path}"

    def digest(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def cli(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``daskbench ARGS --db`` this store, in a fresh process run as this place needs."""
        command = [*self.prefix, sys.executable, "-m", "daskbench", *args, "--db", self.db]
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=180)

    def session(self, folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``pytest -m benchmark --db`` this store in ``folder``, in a fresh process run as this place needs."""
        command = [*self.prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark",
                   "-m", "benchmark", "--workers", "1", "--saturation", "1.1", "--db", self.db, *args]  # fmt: skip
        return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                              env={**os.environ, **(env or {})})  # fmt: skip


def fill_store(path: Path) -> str:
    """A store at ``path`` holding one finished run of three measurements; returns the run's id."""
    store = Store(f"sqlite:///{path}")
    run = add_run(store, 0)
    add_results(store, run, make_case(), 1.0)
    store.close()
    return run.run_id


@pytest.fixture(params=PLACES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """A store holding one run, in a place daskbench cannot write it (each of `PLACES`, for real)."""
    kind: str = request.param
    if kind == "read-only mount":
        source, view = request.getfixturevalue("read_only_mount")
        yield Place(view / "r.db", fill_store(source / "r.db"), kind=kind)
    elif kind == "full disk":
        disk = request.getfixturevalue("tmpfs")
        run_id = fill_store(disk / "r.db")
        fill_disk(disk)
        yield Place(disk / "r.db", run_id, kind=kind)
    else:
        prefix = obeying_file_modes()
        folder = tmp_path / "store"
        folder.mkdir()
        run_id = fill_store(folder / "r.db")
        locked = folder if kind == "read-only folder" else folder / "r.db"
        locked.chmod(0o555 if locked.is_dir() else 0o444)
        yield Place(folder / "r.db", run_id, prefix, kind)
        locked.chmod(0o755)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The whole error output, checked to be one line without a traceback."""
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- reading: wherever the bytes can be read -------------------------------------------------


@pytest.mark.parametrize("command", ["runs", "show", "report", "export"])
def test_reading_commands_read_a_store_they_cannot_write(place: Place, command: str, tmp_path: Path) -> None:
    """runs, show, report and export read the store on read-only media, in a read-only folder, from a
    read-only file and on a full disk: exit 0, the run is there, the store's bytes are unchanged."""
    before = place.digest()
    args = {"runs": ["runs"], "show": ["show", place.run_id[:8], "--format", "json"],
            "report": ["report", "-o", str(tmp_path / "report.html")], "export": ["export"]}[command]  # fmt: skip
    result = place.cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    if command == "show":
        assert len(json.loads(result.stdout)["measurements"]) == 3
    elif command == "report":
        assert (tmp_path / "report.html").stat().st_size > 0
    else:
        assert place.run_id[:8] in result.stdout
    assert place.digest() == before


def test_writing_to_a_store_that_cannot_be_written_names_the_cause(place: Place, tmp_path: Path) -> None:
    """``daskbench baseline set`` there: exit 2, one line naming the cause (read-only file system,
    permission denied, disk full) and its fix, never the corrupt-file advice; the store unchanged."""
    before = place.digest()
    result = place.cli("baseline", "set", "main", place.run_id, cwd=tmp_path)
    line = one_line_error(result)
    assert result.returncode == 2
    assert CAUSES[place.kind] in line and "cannot write the store" in line
    assert not any(word in line for word in CORRUPT)
    assert place.digest() == before


# -- sessions: refused up front, or stopped at the first commit that fails --------------------


def test_session_refuses_a_store_it_cannot_write_before_any_cluster_starts(place: Place, tmp_path: Path) -> None:
    """``pytest -m benchmark`` on such a store: pytest's usage error (4) with the cause in one line,
    no "stored ... see them with", no cluster started, the store's bytes unchanged."""
    before = place.digest()
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_bench.py").write_text(BENCH_FILE)
    result = place.session(folder, "-k", "small_sum")
    output = result.stdout + result.stderr
    assert result.returncode == 4, output
    assert CAUSES[place.kind] in output and "cannot write the store" in output
    assert "stored" not in output and "see them with" not in output and "Traceback" not in output
    assert not any(word in output for word in CORRUPT)
    assert "daskbench: small_sum" not in output  # nothing was measured
    assert place.digest() == before


#: A suite whose second benchmark fills the store's disk before measuring; the third never runs.
FILLING_SUITE = """
import errno
import os
import dask
import pytest

pytestmark = pytest.mark.benchmark


def _fill(folder):
    with open(os.path.join(folder, "filler"), "wb") as out:
        try:
            while True:
                out.write(b"\\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_first(measure):
    assert measure(lambda: dask.delayed(sum)([1, 2]), name="first") == 3


def test_b_fills_the_disk(measure):
    _fill(os.environ["FILL_DIR"])
    measure(lambda: dask.delayed(sum)([1, 2]), name="second")


def test_c_after(measure):
    measure(lambda: dask.delayed(sum)([1, 2]), name="third")
"""


def test_session_whose_disk_fills_stops_with_the_cause_and_keeps_what_was_committed(
    tmpfs: Path, tmp_path: Path
) -> None:
    """The disk fills mid-session (a real tmpfs): the measurement that could not be committed fails
    with the one line naming the full disk, the session stops, the summary says only what was
    committed (1 measurement, readable with ``daskbench show`` on the still-full disk)."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_bench.py").write_text(FILLING_SUITE)
    disk = Place(tmpfs / "r.db", "")
    result = disk.session(folder, env={"FILL_DIR": str(tmpfs)})
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output
    assert "is full (no space left on the device)" in output and "(this measurement is not stored)" in output
    assert "daskbench: third" not in output  # stopped at the first measurement the store could not take
    assert "stored before that" in output and ": 1 measurement" in output
    assert not any(word in output for word in CORRUPT)
    run_id = next(line for line in output.splitlines() if line.startswith("see them with:")).split()[-1]
    shown = disk.cli("show", run_id, "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert [m["outcome"] for m in json.loads(shown.stdout)["measurements"]] == ["passed"]


# -- refused stores stay byte for byte --------------------------------------------------------


def newer_store(path: Path) -> str:
    """A store of schema 99 in rollback-journal mode (so a switch to WAL would show in its bytes);
    returns its sha256."""
    import sqlite3

    fill_store(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("UPDATE schema_meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "command", [["runs"], ["show", "run000"], ["report", "-o", "r.html"], ["export"], ["import", "x.jsonl"]]
)
def test_store_of_a_newer_schema_is_refused_byte_for_byte_unchanged(tmp_path: Path, command: list[str]) -> None:
    """Every command refuses a schema-99 store in one line naming the newer schema, and leaves it
    as it was: same sha256, no -wal or -shm beside it (no journal-mode switch before the check)."""
    folder = tmp_path / "store"
    folder.mkdir()
    digest = newer_store(folder / "r.db")
    fill_store(tmp_path / "other.db")
    daskbench_cli("export", "-o", str(tmp_path / "x.jsonl"), "--db", f"sqlite:///{tmp_path / 'other.db'}", check=True)
    result = Place(folder / "r.db", "").cli(*command, cwd=tmp_path)
    assert result.returncode == 2 and "newer than this daskbench knows" in one_line_error(result)
    assert hashlib.sha256((folder / "r.db").read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in folder.iterdir()) == ["r.db"]


def test_session_refuses_a_newer_schema_store_byte_for_byte_unchanged(tmp_path: Path) -> None:
    """``pytest -m benchmark`` on a schema-99 store: refused before any cluster, the file unchanged."""
    digest = newer_store(tmp_path / "r.db")
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_bench.py").write_text(BENCH_FILE)
    result = Place(tmp_path / "r.db", "").session(folder, "-k", "small_sum")
    assert result.returncode == 4 and "newer than this daskbench knows" in result.stdout + result.stderr
    assert "see them with" not in result.stdout and "Traceback" not in result.stdout + result.stderr
    assert hashlib.sha256((tmp_path / "r.db").read_bytes()).hexdigest() == digest
    assert not (tmp_path / "r.db-wal").exists()


def test_store_this_user_cannot_read_is_named_permission_denied(tmp_path: Path) -> None:
    """A store file without read permission: one line saying so, not the corrupt-file advice."""
    prefix = obeying_file_modes()
    path = tmp_path / "r.db"
    fill_store(path)
    path.chmod(0o000)
    result = Place(path, "", prefix).cli("runs", cwd=tmp_path)
    line = one_line_error(result)
    assert result.returncode == 2 and "permission denied" in line and "make it readable" in line
    assert not any(word in line for word in CORRUPT)
