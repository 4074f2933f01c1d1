"""``daskbench gc``: evidence of deleted runs and of old runs goes; baselines' and new runs' stays."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daskbench.config import resolve
from daskbench.evidence import OWNER_FILE, claim_folder, store_identity
from daskbench.metrics.cost import load_prices
from daskbench.plugin.state import DaskbenchSession
from daskbench.store import Store
from tests.helpers import daskbench_cli, make_case, make_measurement, make_run


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

    dry = daskbench_cli("gc", "--db", db, "--older-than", "30d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {gone} (run not in the store)" in dry.stdout
    assert f"would remove {root / old.run_id} (run started" in dry.stdout
    assert gone.exists() and (root / old.run_id).exists()

    done = daskbench_cli("gc", "--db", db, "--older-than", "30d")
    assert done.returncode == 0, done.stderr
    assert "removed 2 run folders and 1 partial file" in done.stdout
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
    assert done.returncode == 0 and "removed 0 run folders" in done.stdout and folder.exists()


def test_gc_on_a_missing_store_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = daskbench_cli("gc", "--db", f"sqlite:///{tmp_path / 'missing.db'}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no daskbench store" in done.stderr


def _session_folder(db: str, shared: Path, run_id: str) -> Path:
    """The evidence folder a session of ``db`` with ``--evidence --evidence-dir shared`` makes for a run, with a file."""
    settings = resolve({"db": db, "evidence": "true", "evidence_dir": str(shared)}, env={})
    folder = DaskbenchSession(settings, "local", load_prices())._evidence_folder(make_run(run_id=run_id))
    assert folder is not None
    (folder / "task-stream-0123456789abcdef.json").write_text("[]")
    return folder


def test_gc_of_one_store_keeps_the_evidence_of_another_store_sharing_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two SQLite stores share --evidence-dir: gc of the first removes only its own folders (also with
    --older-than); the second's, and unmarked folders of runs the first never had, stay."""
    shared = tmp_path / "shared"
    first, second = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    mine, theirs = (make_run(run_id=str(uuid.uuid4()), started_at=_days_ago(90)) for _ in range(2))
    for db, run in ((first, mine), (second, theirs)):
        store = Store(db)
        store.add_run(run)
        store.close()
    kept_mine, kept_theirs = _session_folder(first, shared, mine.run_id), _session_folder(second, shared, theirs.run_id)
    gone = _session_folder(first, shared, str(uuid.uuid4()))  # a run the first store no longer has
    theirs_gone = _session_folder(second, shared, str(uuid.uuid4()))  # one the second store no longer has
    unmarked = _evidence(shared, str(uuid.uuid4()))  # kept before stores were named: whose is unknown
    (theirs_gone / "report.html.part").write_text("<")  # the other store's write in progress
    done = daskbench_cli("gc", "--db", first, "--evidence-dir", str(shared), capsys=capsys)
    assert done.returncode == 0, done.stderr
    assert not gone.exists() and kept_mine.is_dir() and kept_theirs.is_dir() and theirs_gone.is_dir()
    assert unmarked.is_dir() and (theirs_gone / "report.html.part").exists()
    assert "kept 3 run folders of other stores" in done.stdout
    old = daskbench_cli("gc", "--db", first, "--evidence-dir", str(shared), "--older-than", "30d", capsys=capsys)
    assert old.returncode == 0 and not kept_mine.exists() and kept_theirs.is_dir(), old.stdout


def test_a_run_folder_names_its_store_without_a_password(tmp_path: Path) -> None:
    """The owner file holds the store's identity: a SQLite file's absolute path, a URL without its password."""
    folder = claim_folder(tmp_path / "run", "postgresql://bench:s3cret-pw@db.example:5432/bench?sslmode=require")
    assert (folder / OWNER_FILE).read_text().strip() == "postgresql://bench@db.example:5432/bench"
    assert store_identity(f"sqlite:///{tmp_path / 'x' / '..' / 'r.db'}") == f"sqlite:///{tmp_path / 'r.db'}"


def test_a_report_made_while_gc_removes_evidence_is_whole_and_never_links_a_file_that_is_gone(tmp_path: Path) -> None:
    """``report`` and ``gc --older-than 30`` at once (two processes; gc removes the old run's evidence, the
    store keeps the run): both exit 0 and the page is whole; a report made after gc links the new run's
    evidence, never the old run's removed file (a dead link)."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    root = tmp_path / "r.db.evidence"
    store = Store(db)
    case = make_case()
    store.add_case(case)
    kept: dict[str, Path] = {}
    for name, days in (("old", 90), ("new", 1)):
        run = make_run(run_id=str(uuid.uuid4()), started_at=_days_ago(days), label=name)
        store.add_run(run)
        page = _evidence(root, run.run_id) / "performance-report-0123456789abcdef.html"
        for repeat in range(3):
            store.add_measurement(make_measurement(run, case, repeat, extra={"evidence": {"performance": str(page)}}))
        kept[name] = page
    store.close()
    ids = {name: page.parent.name for name, page in kept.items()}
    report = [
        sys.executable,
        "-m",
        "daskbench",
        "report",
        "--db",
        db,
        "--baseline",
        ids["old"],
        "--candidate",
        ids["new"],
    ]
    during = subprocess.Popen([*report, "-o", str(tmp_path / "during.html")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    gc = daskbench_cli("gc", "--db", db, "--older-than", "30d")
    _, err = during.communicate(timeout=300)
    assert gc.returncode == 0 and during.returncode == 0, gc.stderr + err
    assert (tmp_path / "during.html").read_text().rstrip().endswith("</html>")
    assert not kept["old"].exists() and kept["new"].exists()
    after = subprocess.run([*report, "-o", str(tmp_path / "after.html")], capture_output=True, text=True, timeout=300)
    assert after.returncode == 0, after.stderr
    page = (tmp_path / "after.html").read_text()
    assert kept["new"].resolve().as_uri() in page and kept["old"].resolve().as_uri() not in page
