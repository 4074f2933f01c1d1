"""The SQL store: round trips, append-only keys, schema versioning, secrets, bad files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from daskbench.errors import DaskbenchError
from daskbench.redact import redact_url
from daskbench.store import SCHEMA_VERSION, Store, sqlite_file
from tests.helpers import make_case, make_measurement, make_run


def test_measurement_round_trips_every_field(store: Store) -> None:
    """What is written is what is read back, timeline and extras included."""
    run, case = make_run(), make_case()
    written = make_measurement(run, case, phases={"compute": 1.0, "restart": 2.0}, extra={"instance": "m6i.large"})
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(written)
    (read,) = store.measurements([run.run_id])
    assert read == written.__class__(**{**written.__dict__, "recorded_at": read.recorded_at})
    assert store.cases()[case.fingerprint] == case


def test_duplicate_measurement_key_is_refused(store: Store) -> None:
    """(run, fingerprint, repeat) is unique: a row is never written twice or overwritten."""
    run, case = make_run(), make_case()
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case))
    with pytest.raises(DaskbenchError, match="already stored"):
        store.add_measurement(make_measurement(run, case, runtime_s=9.0))
    assert [m.runtime_s for m in store.measurements([run.run_id])] == [1.0]


def test_store_from_newer_schema_is_refused(tmp_path: Path) -> None:
    """A store written by a newer daskbench is refused with what to do, not misread."""
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    Store(url).close()
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        conn.execute("UPDATE schema_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(DaskbenchError, match=r"newer than this daskbench.*upgrade daskbench"):
        Store(url)


def test_corrupt_file_is_refused_with_a_fix(tmp_path: Path) -> None:
    """A file that is not a database gives a one-line error naming it, not a traceback."""
    path = tmp_path / "daskbench.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DaskbenchError, match="not a usable daskbench store") as info:
        Store(f"sqlite:///{path}")
    assert "\n" not in str(info.value)


def test_password_never_appears_in_the_display_url() -> None:
    """Database passwords are replaced before a URL reaches logs or reports."""
    shown = redact_url("postgresql://bench:s3cr3t@db.example:5432/results")
    assert "s3cr3t" not in shown
    assert "db.example" in shown


def test_run_prefix_lookup_and_ambiguity(store: Store) -> None:
    """A unique prefix finds a run; an unknown one says how to list runs."""
    run = make_run(run_id="abcdef12-0000")
    store.add_run(run)
    store.add_run(make_run(run_id="abcdff34-0000"))
    assert store.run("abcde").run_id == run.run_id
    with pytest.raises(DaskbenchError, match="matches 2 runs"):
        store.run("abc")
    with pytest.raises(DaskbenchError, match="daskbench runs"):
        store.run("zzz")


def test_newest_baseline_setting_wins(store: Store) -> None:
    """Re-pointing a baseline appends a row; the newest one is used."""
    first, second = make_run(), make_run()
    store.add_run(first)
    store.add_run(second)
    store.set_baseline("main", [first.run_id])
    store.set_baseline("main", [second.run_id[:8]])
    assert store.baseline("main") == (second.run_id,)
    with pytest.raises(DaskbenchError, match="daskbench baseline set nightly"):
        store.baseline("nightly")


def test_sqlite_store_uses_wal(tmp_path: Path) -> None:
    """SQLite runs in WAL mode so a reader never blocks the suite writing measurements."""
    Store(f"sqlite:///{tmp_path / 'db.sqlite'}").close()
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_run_tags_are_stored_with_the_run_and_write_once(store: Store) -> None:
    """Tags come back with the run; adding a new tag works, changing one is refused."""
    run = make_run(tags={"ab_group": "g1", "ab_side": "A"})
    store.add_run(run)
    store.tag_run(run.run_id, {"ab_round": "0", "ab_side": "A"})
    assert store.run(run.run_id).tags == {"ab_group": "g1", "ab_side": "A", "ab_round": "0"}
    assert store.runs()[0].tags == store.run(run.run_id).tags
    with pytest.raises(DaskbenchError, match="1 tag set differently: ab_side"):
        store.tag_run(run.run_id, {"ab_side": "B"})


def test_run_events_are_appended_in_order(store: Store) -> None:
    """The status history of a run keeps every event, oldest first."""
    run = make_run()
    store.add_run(run)
    store.record_event(run.run_id, "running")
    store.record_event(run.run_id, "finished", "42 measurements")
    assert [(status, detail) for status, _, detail in store.events([run.run_id])[run.run_id]] == [
        ("running", ""),
        ("finished", "42 measurements"),
    ]


def test_flags_mark_a_case_of_a_run_without_editing_its_measurements(store: Store) -> None:
    """Flagging appends a mark to every repeat of the case in that run only; values are untouched."""
    run, other = make_run(), make_run()
    case = make_case()
    for r in (run, other):
        store.add_run(r)
    store.add_case(case)
    for r in (run, other):
        for repeat in range(2):
            store.add_measurement(make_measurement(r, case, repeat))
    assert store.flag_measurements(run.run_id, case.fingerprint, "wrong-result", "assert failed") == 2
    flagged = store.measurements([run.run_id])
    assert all(m.flags == ("wrong-result",) and m.runtime_s == 1.0 for m in flagged)
    assert all(m.flags == () for m in store.measurements([other.run_id]))


@pytest.mark.parametrize(
    ("url", "file"),
    [
        ("sqlite:///results/r.db", "results/r.db"),
        ("sqlite:////tmp/r.db?mode=ro", "/tmp/r.db"),
        ("sqlite+pysqlite:///r.sqlite", "r.sqlite"),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///file::memory:?cache=shared", None),
        ("sqlite:///r.db?mode=memory", None),
        ("postgresql://user@host/db", None),
    ],
)
def test_one_helper_tells_a_sqlite_file_url_from_memory_and_other_databases(url: str, file: str | None) -> None:
    """`engine.sqlite_file`, which the store, --db's check and the evidence folder all ask: the file a
    SQLite URL names, as written; None for an in-memory SQLite database or another database."""
    assert sqlite_file(url) == (Path(file) if file else None)
