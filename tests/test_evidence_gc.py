"""``daskbench gc``: evidence of deleted runs and of old runs goes; baselines' and new runs' stays."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from daskbench.store import Store
from tests.helpers import daskbench_cli, make_run


def _days_ago(days: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")


def _evidence(root: Path, run_id: str) -> Path:
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "performance-report-0123456789abcdef.html").write_text("<html>" + "x" * 1000)
    return folder


def test_gc_removes_evidence_of_deleted_and_old_runs_and_keeps_baselines(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    root = tmp_path / "r.db.evidence"
    store = Store(db)
    old, kept_old, new = (make_run(run_id=str(uuid.uuid4()), started_at=_days_ago(d)) for d in (90, 90, 1))
    for run in (old, kept_old, new):
        store.add_run(run)
        _evidence(root, run.run_id)
    store.set_baseline("main", [kept_old.run_id])
    store.close()
    gone = _evidence(root, str(uuid.uuid4()))  # a run the store no longer has
    (root / "notes").mkdir()  # not a run folder: never touched
    (root / "notes" / "readme.txt").write_text("mine")
    (root / new.run_id / "task-stream-ffff.json.part").write_text("{")  # a crash's leftover

    dry = daskbench_cli("gc", "--db", db, "--older-than", "30", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {gone} (run not in the store)" in dry.stdout
    assert f"would remove {root / old.run_id} (run started" in dry.stdout
    assert gone.exists() and (root / old.run_id).exists()

    done = daskbench_cli("gc", "--db", db, "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert "removed 2 run folder(s) and 1 partial file(s)" in done.stdout
    assert not gone.exists() and not (root / old.run_id).exists()
    assert (root / kept_old.run_id).is_dir() and (
        root / new.run_id / "performance-report-0123456789abcdef.html"
    ).exists()
    assert not (root / new.run_id / "task-stream-ffff.json.part").exists()
    assert (root / "notes" / "readme.txt").read_text() == "mine"


def test_gc_without_older_than_keeps_every_run_the_store_has(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    run = make_run(run_id=str(uuid.uuid4()), started_at=_days_ago(400))
    store.add_run(run)
    store.close()
    folder = _evidence(tmp_path / "ev", run.run_id)
    done = daskbench_cli("gc", "--db", db, "--evidence-dir", str(tmp_path / "ev"))
    assert done.returncode == 0 and "removed 0 run folder(s)" in done.stdout and folder.exists()


def test_gc_on_a_missing_store_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = daskbench_cli("gc", "--db", f"sqlite:///{tmp_path / 'missing.db'}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no daskbench store" in done.stderr
