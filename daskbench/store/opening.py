"""Opening a store: the URL and its driver checked, a SQLite file inspected before use, the schema
created or migrated under one lock, and each transaction's database errors said in one line."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError, OperationalError

from daskbench.errors import DaskbenchError, StoreFault
from daskbench.redact import redact_url
from daskbench.store.engine import (
    Busy,
    FileIdentity,
    file_gone,
    first_line,
    inspect_sqlite,
    is_busy,
    lost_clause,
    retrying,
    server_lost,
    sqlite_begin,
    sqlite_file,
    sqlite_pragmas,
    sqlite_read_pragmas,
    store_fault,
    unwritable,
)
from daskbench.store.schema import MIGRATION_LOCK_KEY, MIGRATIONS, SCHEMA_VERSION, metadata, schema_meta
from daskbench.text import say


def upgraded_line(shown_url: str, found: int) -> str:
    """The one line an upgrade of the store from schema ``found`` says: what changed, and who can no longer read
    it (a daskbench that knows schema ``found`` at most refuses a newer store, naming both numbers)."""
    return (
        f"note: upgraded the store at {shown_url} from schema {found} to {SCHEMA_VERSION}: a daskbench that knows "
        f"schema {SCHEMA_VERSION - 1} or older refuses it from now on"
    )


def sqlite_damage(path: Path) -> str | None:
    """Why the SQLite store at ``path`` is no longer one, read by a connection of its own (an open one trusts
    the pages it holds and would not see the file written over), else None."""
    try:
        with closing(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)) as conn:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        return f"SQLite cannot read {path} any more ({first_line(exc)})"
    return None if "schema_meta" in names else f"{path} no longer holds daskbench's tables (emptied or replaced)"


class Database:
    """A results store at a SQLAlchemy URL; created (unless ``create`` is False) and migrated on first open.

    A database that is not a daskbench store (tables but no ``schema_meta``, or not SQLite
    at all), or a store of a newer schema, is refused before anything is written to it; for
    SQLite files it is inspected read-only first, because even switching on WAL would change
    its bytes. Read-only commands pass ``create=False`` so a mistyped ``--db`` never leaves a
    new file behind; with it, a SQLite store this process cannot write (read-only media or
    file, a folder without write permission, a full disk) is opened read-only, so it reads as
    ever and a write names the cause. Without it (a session), such a store is refused at once.

    ``fault`` is the first `StoreFault` a transaction met (None while all went well), so a
    session can say what was stored only of what was committed.
    """

    def __init__(self, url: str, create: bool = True) -> None:
        self.url = url
        self.display_url = redact_url(url)
        self.create = create
        self.fault: str | None = None
        self.path: Path | None = None
        #: The SQLite file opened (None for a database server, and until it exists): a write checks it is
        #: still that file.
        self.identity: FileIdentity | None = None
        self._memo: dict[str, Any] | None = None
        self.engine = self._connect(url)
        self._migrate()
        self.identity = FileIdentity.of(self.path) if self.path is not None else None

    def _connect(self, url: str) -> Engine:
        try:
            parsed = sa.engine.make_url(url)
        except ArgumentError:
            raise DaskbenchError(
                f"{url!r} is not a database URL; use e.g. sqlite:///results/daskbench.db or postgresql://host/db"
            ) from None
        read_uri = None
        self.path = sqlite_file(parsed)
        if self.path is not None:
            read_uri = self._check_sqlite_file(self.path)
        if read_uri is not None:
            return self._read_only_engine(read_uri)
        try:  # pre-ping: a server restarted between two transactions costs a reconnection, not the session
            engine = sa.create_engine(parsed, **({} if self.path is not None else {"pool_pre_ping": True}))
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            raise DaskbenchError(
                f"no driver for {self.display_url} ({exc}); for PostgreSQL: pip install 'psycopg[binary]>=3.1'"
            ) from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", sqlite_pragmas)
            sa.event.listen(engine, "begin", sqlite_begin)
        return engine

    @staticmethod
    def _read_only_engine(uri: str) -> Engine:
        """An engine on a SQLite store that reads it through ``uri`` (``mode=ro``, maybe ``immutable=1``)
        and never switches its journal: a write fails with SQLite's read-only error."""
        engine = sa.create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False),
            poolclass=sa.pool.QueuePool,
        )
        sa.event.listen(engine, "connect", sqlite_read_pragmas)
        sa.event.listen(engine, "begin", sqlite_begin)
        return engine

    @staticmethod
    def preflight(url: str) -> None:
        """Check ``url`` as `Store` would (URL, driver, a SQLite file that is ours or can be created:
        its folder is made) without creating or changing a database: for the session's early checks."""
        probe = Database.__new__(Database)
        probe.url, probe.display_url, probe.create, probe.fault, probe.path = url, redact_url(url), True, None, None
        probe.identity = None
        probe._connect(url).dispose()  # creating an engine opens no connection

    def _check_sqlite_file(self, path: Path) -> str | None:
        """Refuse a file that is not a daskbench store or is of a newer schema, and a missing one unless
        creating; never write to it. Returns the read-only URI to open it with when it cannot be written
        and this store only reads (else None); creating, a store that cannot be written is refused."""
        if not path.exists() or path.stat().st_size == 0:
            self._check_new_file(path)
            return None
        if path.is_dir():
            raise DaskbenchError(f"--db {path} is a directory; name a file in it: sqlite:///{path / 'daskbench.db'}")
        found = inspect_sqlite(path)
        if found is None:
            raise DaskbenchError(
                f"{self.display_url} is not a usable daskbench store (not a SQLite database); "
                "move the file away or pass another --db"
            )
        if found.tables and "schema_meta" not in found.tables:
            raise DaskbenchError(
                f"{self.display_url} has tables but no daskbench schema version; "
                "it is not a daskbench store (left untouched): pass another --db"
            )
        if "schema_meta" in found.tables:
            self._checked_version(found.version)
        return self._unwritable_uri(path, found.uri)

    def _check_new_file(self, path: Path) -> None:
        """A missing store: refused unless creating; else its folder made, and where SQLite can write."""
        if not self.create:
            raise DaskbenchError(
                f"no daskbench store at {self.display_url}; check --db, or fill one with: pytest -m benchmark"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DaskbenchError(
                f"cannot create the folder {path.parent} for --db ({exc.strerror or exc}); "
                "pass a --db in a writable folder"
            ) from None
        self._unwritable_uri(path, "")

    def _unwritable_uri(self, path: Path, uri: str) -> str | None:
        """``uri`` when the store at ``path`` cannot be written and this store only reads; a `StoreFault`
        naming the cause when it cannot be written and this store would create or write; else None."""
        why = unwritable(path)
        if why is None:
            return None
        if self.create:
            raise StoreFault(f"cannot write the store {self.display_url}: {why}")
        return uri

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One command's view of the store: within it the run list is read once and reused (`runs`),
        however many readers ask; a write through this store forgets it. Nested, the outer one holds."""
        if self._memo is not None:
            yield
            return
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        """One transaction; ``write`` takes SQLite's write lock at BEGIN (``BEGIN IMMEDIATE``),
        so a transaction that reads then writes cannot fail half-way on a stale snapshot."""
        if write and self._memo:
            self._memo.clear()
        engine = self.engine.execution_options(daskbench_write=True) if write else self.engine
        if write:
            self._check_same_file()
        try:
            with engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            if is_busy(exc):
                raise Busy(f"the store {self.display_url} stayed locked by other writers; try again") from None
            raise self._fault(exc) from None
        except DatabaseError as exc:
            if isinstance(exc, IntegrityError):
                raise
            raise self._fault(exc) from None

    def _check_same_file(self) -> None:
        """Before a write: the SQLite file opened is still there, the same file (a `StoreFault` when it was
        deleted, moved or replaced: SQLite would write on into a file nobody can read again)."""
        if self.path is None or self.identity is None or FileIdentity.of(self.path) == self.identity:
            return
        raise self._kept_fault(f"cannot write the store {self.display_url}: {file_gone(self.path)}")

    def damage(self) -> str | None:
        """Why the store opened can no longer be used, in a clause (its SQLite file deleted, moved or replaced;
        no longer a daskbench store; its server gone), else None: asked after code that runs with this user's
        rights (a pull request's benchmarks) could have written over it."""
        if self.path is not None and self.identity is not None and FileIdentity.of(self.path) != self.identity:
            return file_gone(self.path)
        if self.path is not None:
            return sqlite_damage(self.path)
        try:
            self._schema_version()
        except DaskbenchError as error:
            return str(error)
        return None

    def _kept_fault(self, line: str) -> StoreFault:
        """A `StoreFault`, its line kept as ``fault`` (the first one wins: it says what stopped the writes)."""
        self.fault = self.fault or line
        return StoreFault(self.fault)

    def _fault(self, exc: DatabaseError) -> DaskbenchError:
        """The one line for a database error: the storage's fault named (full, read-only, permission, a
        database server gone: a `StoreFault`, kept as ``fault``), else what SQLite found wrong with the file."""
        why = store_fault(exc, self.path)
        if why is not None:
            return self._kept_fault(f"cannot write the store {self.display_url}: {why}")
        if self.path is None and server_lost(exc):
            return self._kept_fault(f"cannot reach the store {self.display_url} {lost_clause(exc)}")
        if isinstance(exc, OperationalError):
            return DaskbenchError(f"cannot use the store {self.display_url}: {first_line(exc)}; check --db")
        return DaskbenchError(
            f"{self.display_url} is not a usable daskbench store ({first_line(exc)}); "
            "move the file away or pass another --db"
        )

    def _migrate(self) -> None:
        """Create or upgrade the schema under one lock, so simultaneous first opens cannot race.

        A store already at this version is only read (no write lock); otherwise SQLite's
        write lock (``BEGIN IMMEDIATE``) or PostgreSQL's advisory lock serialises the
        check and the change, and whoever comes second finds the work done.
        """
        found = retrying(self._schema_version)  # a fresh file switching to WAL can refuse even a reader at once
        if found == SCHEMA_VERSION:
            return
        if found is None and not self.create:
            raise DaskbenchError(
                f"no daskbench store at {self.display_url}; check --db, or fill one with: pytest -m benchmark"
            )
        retrying(self._migrate_locked)

    def _schema_version(self) -> int | None:
        """The stored schema version, or None for a database without daskbench's tables."""
        with self._tx() as conn:
            return self._version_in(conn)

    def _version_in(self, conn: Connection) -> int | None:
        names = set(sa.inspect(conn).get_table_names())  # one look, so a store created meanwhile reads whole
        if "schema_meta" not in names:
            if names:
                raise DaskbenchError(
                    f"{self.display_url} has tables but no daskbench schema version; "
                    "it is not a daskbench store: pass another --db"
                )
            return None
        return self._checked_version(
            conn.execute(sa.select(schema_meta.c.value).where(schema_meta.c.key == "schema_version")).scalar()
        )

    def _checked_version(self, value: str | None) -> int:
        """The stored schema version ``value`` as a number; a newer or broken one is refused in one line."""
        try:
            found = int(value) if value is not None else -1
        except ValueError:
            found = -1
        if found > SCHEMA_VERSION:
            raise DaskbenchError(
                f"{self.display_url} uses store schema {found}, newer than this daskbench knows ({SCHEMA_VERSION}); "
                "upgrade daskbench (pip install -U daskbench) or pass another --db"
            )
        if found < 1:
            raise DaskbenchError(
                f"{self.display_url} has a broken store schema version {value!r}; "
                "restore the file from a backup or pass another --db"
            )
        return found

    def _migrate_locked(self) -> None:
        with self._tx(write=True) as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            found = self._version_in(conn)
            if found is None:
                metadata.create_all(conn)
                conn.execute(schema_meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
                return
            for version in range(found + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](conn)
                conn.execute(
                    schema_meta.update().where(schema_meta.c.key == "schema_version").values(value=str(version))
                )
        if found < SCHEMA_VERSION:  # said once: the next open finds the store upgraded (whoever came second, nothing)
            say(upgraded_line(self.display_url, found))

    def close(self) -> None:
        self.engine.dispose()
