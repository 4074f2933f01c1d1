"""How the store talks to its database: whether a URL names a SQLite file, SQLite's pragmas and write locks, retries while another
writer holds the lock, a read-only look at a SQLite file, why a store cannot be written (SQLite's
error name, the file system's read-only flag and free space, the user's permissions), one-statement
insert-or-ignore, the planner's statistics refreshed after a bulk load, and a driver error's first line."""

from __future__ import annotations

import functools
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from daskbench.errors import DaskbenchError

#: Attempts of a write that found the store locked (each already waits SQLite's busy_timeout).
BUSY_ATTEMPTS = 4
#: The fix for a store this user cannot read, and the one line for a full disk (of the store's folder).
_READ_FIX = "make it readable to this user or pass another --db"
_FULL = (
    "the disk holding {folder} is full (no space left on the device); free space on it or pass a --db on another disk"
)

_P = ParamSpec("_P")
_T = TypeVar("_T")


def sqlite_file(url: str | sa.URL) -> Path | None:
    """The file a SQLite URL names, as written in it (``sqlite:///results/r.db`` -> ``results/r.db``); None for
    any other database and for an in-memory SQLite one (``sqlite://``, ``:memory:``, ``file::memory:``,
    ``?mode=memory``). The one place that decides whether a database URL is a SQLite file."""
    parsed = sa.engine.make_url(url) if isinstance(url, str) else url
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file::memory:"):
        return None
    return None if parsed.query.get("mode") == "memory" else Path(database)


class Busy(DaskbenchError):
    """The store stayed locked by other writers (retried a bounded number of times)."""


def is_busy(exc: OperationalError) -> bool:
    text = str(getattr(exc, "orig", None) or exc).lower()
    return "database is locked" in text or "database is busy" in text or "deadlock detected" in text


def retrying(call: Callable[[], _T]) -> _T:
    """``call()``, tried again with a short random backoff while the store is locked, at most
    `BUSY_ATTEMPTS` times: concurrent writers wait for each other instead of losing rows."""
    for attempt in range(BUSY_ATTEMPTS - 1):
        try:
            return call()
        except Busy:
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    return call()


def retry_busy(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """A `Store` write method retried by `retrying` (each attempt is a whole transaction)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return retrying(lambda: method(*args, **kwargs))

    return wrapper


def sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Wait for other writers (busy_timeout first, so even switching to WAL waits), and let
    `sqlite_begin` issue BEGIN itself: the driver's own would not cover DDL."""
    _pragmas(dbapi_connection, "PRAGMA busy_timeout=30000", "PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON")


def sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """`sqlite_pragmas` for a store opened read-only: no journal-mode switch, which would write."""
    _pragmas(dbapi_connection, "PRAGMA busy_timeout=30000", "PRAGMA foreign_keys=ON")


def _pragmas(dbapi_connection: Any, *statements: str) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for statement in statements:
        cursor.execute(statement)
    cursor.close()


def sqlite_begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE for writes (the write lock up front, waited for), plain BEGIN for reads."""
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("daskbench_write") else "BEGIN")


class Inspected(NamedTuple):
    """What a read-only look at a SQLite file found: its tables, its raw schema version (None without
    one) and the URI that read it (``mode=ro``, plus ``immutable=1`` where no -shm could be made)."""

    tables: set[str]
    version: str | None
    uri: str


def inspect_sqlite(path: Path) -> Inspected | None:
    """``path`` read in read-only mode (no journal change, no write), None if it is not SQLite.

    A store in WAL mode needs a -shm file even to be read; where none can be made (read-only media,
    a folder without write permission, a full disk) it is read as immutable instead, so its bytes are
    read wherever they can be."""
    base = f"{path.resolve().as_uri()}?mode=ro"
    try:
        return _inspect(base)
    except sqlite3.OperationalError as exc:
        if _locked(exc):
            raise DaskbenchError(f"{path} stayed locked by another process for 30 s; try again") from None
        try:
            return _inspect(f"{base}&immutable=1")
        except sqlite3.OperationalError as again:
            raise DaskbenchError(f"cannot read {path} ({_why_unreadable(path, again)}); {_READ_FIX}") from None
    except sqlite3.DatabaseError:
        return None


def _inspect(uri: str) -> Inspected:
    """The tables and schema version of the database at ``uri``, read in one connection."""
    conn = sqlite3.connect(uri, uri=True, timeout=30)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = None
        if "schema_meta" in tables:
            found = conn.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
            version = found[0] if found else None
        return Inspected(tables, version, uri)
    finally:
        conn.close()


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite gave up waiting for another process's lock (its error name says so)."""
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _why_unreadable(path: Path, exc: sqlite3.Error) -> str:
    """Permission denied when this user cannot read the file, else SQLite's own words."""
    return "permission denied" if not os.access(path, os.R_OK) else first_line(exc)


def unwritable(path: Path) -> str | None:
    """Why SQLite cannot write the store at ``path`` (nor the -wal and -shm files beside it), as a
    clause naming the cause and its fix; None when it can. Read-only media, then permission, then space."""
    folder = path.parent
    info = os.statvfs(folder)
    if info.f_flag & os.ST_RDONLY:
        return (
            f"{folder} is on a read-only file system; remount it read-write or pass a --db on writable storage "
            "(runs, show, report and export read the store where it is)"
        )
    if path.exists() and not os.access(path, os.W_OK):
        return (
            f"the file is read-only to this user (permission denied); make it writable (chmod u+w {path}) "
            "or pass another --db"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"this user cannot create files in {folder} (permission denied), where SQLite keeps the store's "
            "-wal and -shm files; make the folder writable or pass a --db in one that is"
        )
    if (info.f_bfree if os.geteuid() == 0 else info.f_bavail) == 0:
        return _FULL.format(folder=folder)
    return None


#: SQLite's names of the errors that mean the store could not be written (not that it is corrupt).
WRITE_FAULTS = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM")


def store_fault(exc: BaseException, path: Path | None) -> str | None:
    """Why a SQLite store at ``path`` failed to be written, if the error says it could not be
    (SQLite's error name: full, read-only, cannot open, I/O, permission); None otherwise."""
    name = getattr(getattr(exc, "orig", None) or exc, "sqlite_errorname", "")
    if path is None or not name.startswith(WRITE_FAULTS):
        return None
    if name == "SQLITE_FULL":
        return _FULL.format(folder=path.parent)
    return unwritable(path)


#: SQLSTATE classes and codes of a PostgreSQL connection that is gone or cannot be made: class 08 (connection
#: exception), and the server shutting down, crashed, or not yet accepting connections (57P01-57P03).
_LOST_STATES = ("08", "57P01", "57P02", "57P03")


def server_lost(exc: BaseException) -> bool:
    """Whether a database server's error says its connection is gone or could not be made: SQLAlchemy saw a
    disconnect, or the driver's error carries no SQLSTATE (the server never answered) or a connection one."""
    if getattr(exc, "connection_invalidated", False):
        return True
    original = getattr(exc, "orig", None)
    if original is None or isinstance(original, sqlite3.Error):
        return False
    state = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    return state is None or str(state).startswith(_LOST_STATES)


def lost_clause(exc: BaseException) -> str:
    """The clause for a store whose database server went away or cannot be reached, with the fix."""
    return (
        f"({first_line(exc)}): its database server stopped or is unreachable; check that it is up and reachable "
        "(pg_isready), then run again"
    )


class FileIdentity(NamedTuple):
    """Which file a SQLite store is (device, inode): a store deleted or replaced while open is another, or none."""

    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        try:
            found = path.stat()
        except OSError:
            return None
        return cls(found.st_dev, found.st_ino)


def file_gone(path: Path) -> str:
    """The clause for a SQLite store whose file was deleted, moved or replaced while in use: SQLite would go on
    writing to the old file, and every row written there would be lost with it."""
    return (
        f"the file {path} was deleted, moved or replaced while in use, so nothing more can be stored in it; "
        "restore the file (or pass another --db) and run again"
    )


def insert_or_ignore(conn: Connection, table: sa.Table, key: tuple[str, ...]) -> Any:
    """An INSERT that does nothing when a row with the same ``key`` exists: one statement, so
    two writers adding the same row at once cannot both pass a check and collide."""
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(key))
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(key))
    raise DaskbenchError(f"daskbench stores support SQLite and PostgreSQL, not {conn.dialect.name}; pass another --db")


def middle_values(conn: Connection, pairs: sa.Select[Any]) -> sa.Select[Any]:
    """Per ``key`` of ``pairs`` (a query of columns ``key`` and ``value``), the lower and upper middle of its
    values in order (the same one for an odd count) as ``key, low, high``, picked by the database: on
    PostgreSQL an ordered ``array_agg`` per key (each key's values sorted alone; ranking every row at once with
    window functions sorted them all together, on disk); elsewhere ``row_number`` and ``count`` windows."""
    found = pairs.subquery()
    if conn.dialect.name == "postgresql":
        ordered = postgresql.array_agg(postgresql.aggregate_order_by(found.c.value, found.c.value))
        n = sa.func.count()
        return sa.select(found.c.key, ordered[(n + 1) // 2], ordered[(n + 2) // 2]).group_by(found.c.key)
    ranked = sa.select(
        found.c.key,
        found.c.value,
        sa.func.row_number().over(partition_by=found.c.key, order_by=found.c.value).label("k"),
        sa.func.count().over(partition_by=found.c.key).label("n"),
    ).subquery()
    middle = ranked.c.k.in_([(ranked.c.n + 1) // 2, (ranked.c.n + 2) // 2])
    return (
        sa.select(ranked.c.key, sa.func.min(ranked.c.value), sa.func.max(ranked.c.value))
        .where(middle)
        .group_by(ranked.c.key)
    )


def refresh_statistics(conn: Connection, tables: Iterable[sa.Table]) -> None:
    """After a bulk load, the planner's statistics of ``tables`` taken again: on PostgreSQL ``ANALYZE`` (until
    autovacuum gets to it, a freshly imported table is planned as the few rows it held before, and reads of
    a window of history scan whole tables); SQLite plans by its indexes alone and keeps no statistics here."""
    if conn.dialect.name == "postgresql":
        for table in tables:
            conn.exec_driver_sql(f"ANALYZE {table.name}")  # names of the store's own tables


def first_line(exc: BaseException) -> str:
    """The first line of a (driver's) error, or its type's name when it has no text."""
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__
