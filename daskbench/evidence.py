"""Evidence kept beside the store (``--evidence``): Dask's performance report and task stream.

A verdict and its breakdown say what moved; the evidence lets a maintainer look at the
measurement itself afterwards. With ``--evidence`` each measurement's compute phase is
wrapped in ``distributed.performance_report`` (one HTML file) and its task stream
(``Client.get_task_stream``) is saved as JSON. Files live in one folder per run: beside
a SQLite store (``<store>.evidence/<run id>/``), else under ``results/evidence`` or
``--evidence-dir``. Names are content-addressed (``<kind>-<sha256 prefix>.<ext>``), so
the same bytes are never written twice and a path says which content it holds. The
paths go into ``Measurement.extra["evidence"]``; the seconds the keeping took (its own
cost, outside the timed compute phase) into ``extra["evidence_seconds"]``.
``daskbench gc`` removes the folders of runs the store no longer has, or of old runs no
baseline names (`find_garbage`, `remove_garbage`). Several stores may share one evidence folder
(``--evidence-dir``; ``results/evidence`` for every non-SQLite store), so each run folder names
its store in `OWNER_FILE` (`claim_folder`) and gc touches only folders provably its own.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from daskbench.store import sqlite_file
from daskbench.text import json_safe, one_line

DEFAULT_DIR = Path("results/evidence")
#: In each run folder: the store it belongs to (`store_identity`).
OWNER_FILE = ".daskbench-store"
_HASH_CHARS = 16


def evidence_root(db: str, evidence_dir: str | None) -> Path:
    """Where evidence folders go: ``evidence_dir`` if given, beside a SQLite file, else results/evidence."""
    if evidence_dir:
        return Path(evidence_dir).expanduser().resolve()
    file = sqlite_file(db)
    if file is not None:
        database = file.expanduser().resolve()
        return database.with_name(database.name + ".evidence")
    return DEFAULT_DIR.resolve()


def store_identity(db: str) -> str:
    """The store a run folder belongs to, as written in `OWNER_FILE`: a SQLite file's absolute path,
    else the URL without password or query (so it holds no secret)."""
    file = sqlite_file(db)
    if file is not None:
        return f"sqlite:///{file.expanduser().resolve()}"
    url = make_url(db)
    plain = URL.create(url.drivername, url.username, None, url.host, url.port, url.database)
    return plain.render_as_string(hide_password=False)


def claim_folder(folder: Path, db: str) -> Path:
    """Make a run's evidence ``folder`` and mark it as the store ``db``'s; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    owner = folder / OWNER_FILE
    if not owner.exists():
        owner.write_text(store_identity(db) + "\n", encoding="utf-8")
    return folder


def keep_file(folder: Path, kind: str, suffix: str, content: bytes) -> Path:
    """Write ``content`` as ``<kind>-<hash>.<suffix>`` in ``folder`` (unless already there); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(content).hexdigest()[:_HASH_CHARS]
    path = folder / f"{kind}-{digest}.{suffix}"
    if not path.exists():
        temporary = path.with_suffix(path.suffix + ".part")
        temporary.write_bytes(content)
        temporary.replace(path)
    return path


@dataclass
class Kept:
    """What one measurement's evidence left: ``extra`` entries (paths, seconds, errors)."""

    extra: dict[str, Any] = field(default_factory=dict)


@contextmanager
def kept(client: Any, folder: Path | None) -> Iterator[Kept]:
    """Around the compute phase: keep the performance report and task stream in ``folder`` (None: nothing)."""
    found = Kept()
    if folder is None:
        yield found
        return
    from distributed import performance_report

    since = time.time()
    with tempfile.TemporaryDirectory(prefix="daskbench-evidence-") as scratch:
        report = Path(scratch) / "report.html"
        recorder = performance_report(filename=str(report))
        recorder.__enter__()
        try:
            yield found
        finally:
            start = time.perf_counter()
            found.extra = _save(client, folder, report, since, _close(recorder))
            found.extra["evidence_seconds"] = round(time.perf_counter() - start, 4)


def _close(recorder: Any) -> dict[str, str]:
    """Finish the performance report; ``{}`` when done, else its error (e.g. an old distributed's
    dashboard with a bokeh it does not take)."""
    try:
        recorder.__exit__(None, None, None)
    except Exception as exc:
        return {"performance_report": one_line(exc)}
    return {}


def _save(client: Any, folder: Path, report: Path, since: float, errors: dict[str, str]) -> dict[str, Any]:
    """Move the files into the run's folder (the performance report unless ``errors`` says it failed; the
    task stream in any case); a failure is noted, never raised (evidence is optional)."""
    paths: dict[str, str] = {}
    try:
        if "performance_report" not in errors:
            paths["performance_report"] = str(keep_file(folder, "performance-report", "html", report.read_bytes()))
    except Exception as exc:
        errors["performance_report"] = one_line(exc)
    try:
        stream = json.dumps(json_safe(client.get_task_stream(start=since)), sort_keys=True, default=str).encode()
        paths["task_stream"] = str(keep_file(folder, "task-stream", "json", stream))
    except Exception as exc:
        errors["task_stream"] = one_line(exc)
    return {"evidence": paths, **({"evidence_errors": errors} if errors else {})}


#: A run's evidence folder is named by its run id (a UUID); gc touches nothing else.
_RUN_FOLDER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Garbage:
    """What `find_garbage` found: run folders to remove (with the reason), their size, and how many
    run folders it left alone as another store's."""

    folders: tuple[tuple[Path, str], ...]
    partial_files: tuple[Path, ...]
    size_bytes: int
    others: int = 0


def find_garbage(root: Path, runs_started: dict[str, str], protected: set[str], before: str | None, db: str) -> Garbage:
    """Evidence under ``root`` of the store ``db`` that no run needs: folders of runs the store no
    longer has, and with ``before`` (an ISO time) of runs started earlier that no baseline names;
    plus ``.part`` files a crash left. ``runs_started`` maps every run id in the store to its start
    time. Only folders that are the store's (`is_ours`) are looked at."""
    folders = [f for f in sorted(root.iterdir()) if f.is_dir() and _RUN_FOLDER.match(f.name)] if root.is_dir() else []
    ours = [folder for folder in folders if is_ours(folder, db, folder.name in runs_started)]
    found = [(f, why) for f in ours if (why := _why_remove(runs_started.get(f.name), f.name in protected, before))]
    removed = {folder for folder, _ in found}
    partial = tuple(p for folder in ours if folder not in removed for p in folder.glob("*.part"))
    size = sum(f.stat().st_size for folder in removed for f in folder.rglob("*") if f.is_file())
    return Garbage(tuple(found), partial, size + sum(p.stat().st_size for p in partial), len(folders) - len(ours))


def is_ours(folder: Path, db: str, known: bool) -> bool:
    """Whether a run folder is the store ``db``'s: its `OWNER_FILE` names the store; without one (kept
    before stores were named), when the store has the run or the folder is under the store's own root
    (beside its SQLite file, where no other store's default puts evidence)."""
    try:
        return (folder / OWNER_FILE).read_text(encoding="utf-8").strip() == store_identity(db)
    except FileNotFoundError:
        return known or folder.parent == _own_root(db)
    except (OSError, UnicodeDecodeError):
        return False


def _own_root(db: str) -> Path | None:
    """The evidence root only the store ``db`` uses by default: beside its SQLite file (else None)."""
    root = evidence_root(db, None)
    return None if root == DEFAULT_DIR.resolve() else root


def _why_remove(started: str | None, protected: bool, before: str | None) -> str | None:
    """Why a run folder of this store goes (None: it stays)."""
    if started is None:
        return "run not in the store"
    if before is not None and started < before and not protected:
        return f"run started {started[:10]}"
    return None


def remove_garbage(garbage: Garbage) -> None:
    """Delete what `find_garbage` found (files first, then the emptied run folders)."""
    for folder, _ in garbage.folders:
        for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            path.unlink() if path.is_file() or path.is_symlink() else path.rmdir()
        folder.rmdir()
    for path in garbage.partial_files:
        path.unlink(missing_ok=True)
