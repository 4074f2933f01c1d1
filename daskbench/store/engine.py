"""How the store talks to its database: SQLite's pragmas and write locks, retries while another
writer holds the lock, one-statement insert-or-ignore, and a driver error's first line."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from daskbench.errors import DaskbenchError

#: Attempts of a write that found the store locked (each already waits SQLite's busy_timeout).
BUSY_ATTEMPTS = 4

_P = ParamSpec("_P")
_T = TypeVar("_T")


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
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def sqlite_begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE for writes (the write lock up front, waited for), plain BEGIN for reads."""
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("daskbench_write") else "BEGIN")


def sqlite_tables(path: Path) -> set[str] | None:
    """The table names of a SQLite file read in read-only mode (no journal change), None if it is not SQLite."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return None
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise DaskbenchError(f"{path} stayed locked by another process for 30 s; try again") from None
        return None
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def insert_or_ignore(conn: Connection, table: sa.Table, key: tuple[str, ...]) -> Any:
    """An INSERT that does nothing when a row with the same ``key`` exists: one statement, so
    two writers adding the same row at once cannot both pass a check and collide."""
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(key))
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(key))
    raise DaskbenchError(f"daskbench stores support SQLite and PostgreSQL, not {conn.dialect.name}; pass another --db")


def first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__
