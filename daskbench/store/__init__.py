"""The results store: the only module that speaks SQL.

SQLite by default (WAL, one commit per measurement, so a crash loses nothing already
measured); any SQLAlchemy URL (PostgreSQL, ...) works the same. Measurements are
append-only; baselines are their own table where the newest row of a name wins.

Metric values are rows of ``metric_values`` (measurement, name, value), one per declared
metric (`daskbench.catalog`) that was measured, so a new metric needs no new column.

Schema history (``schema_meta.schema_version``); each version after 1 has a migration in
`MIGRATIONS` (Alembic operations), tested on a store written by the version before it
(``tests/fixtures/store-v1.db``):
  1 - runs, cases, measurements (a column per metric), baselines (daskbench 0.1).
  2 - metric values move from measurement columns to ``metric_values`` (daskbench 0.2).
  3 - ``run_tags`` (write-once facts about a run), ``run_events`` (its status history,
      append-only) and ``measurement_flags`` (marks added after the fact, append-only).
  4 - ``task_memory``: per-task peak memory per task prefix of a measurement (``--task-memory``),
      keyed like a measurement (run id, fingerprint, repeat) plus the prefix
      (``tests/fixtures/store-v3.db``).
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError, OperationalError

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.model import OUTCOMES, Case, ClusterSpec, Measurement, Run, TaskMemory
from daskbench.redact import redact_text, redact_url, redact_value
from daskbench.text import json_safe

SCHEMA_VERSION = 4

#: PostgreSQL advisory lock id that serialises schema creation and migration ("dask").
_MIGRATION_LOCK_KEY = 0x6461736B
#: Attempts of a write that found the store locked (each already waits SQLite's busy_timeout).
_BUSY_ATTEMPTS = 4

_P = ParamSpec("_P")
_T = TypeVar("_T")


class _Busy(DaskbenchError):
    """The store stayed locked by other writers (retried a bounded number of times)."""


def _is_busy(exc: OperationalError) -> bool:
    text = str(getattr(exc, "orig", None) or exc).lower()
    return "database is locked" in text or "database is busy" in text or "deadlock detected" in text


def _retrying(call: Callable[[], _T]) -> _T:
    """``call()``, tried again with a short random backoff while the store is locked, at most
    `_BUSY_ATTEMPTS` times: concurrent writers wait for each other instead of losing rows."""
    for attempt in range(_BUSY_ATTEMPTS - 1):
        try:
            return call()
        except _Busy:
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    return call()


def _retry_busy(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """A `Store` write method retried by `_retrying` (each attempt is a whole transaction)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return _retrying(lambda: method(*args, **kwargs))

    return wrapper


metadata = sa.MetaData()
schema_meta = sa.Table(
    "schema_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)  # fmt: skip
runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("label", sa.Text, nullable=False),
    sa.Column("started_at", sa.String(40), nullable=False),
    sa.Column("ended_at", sa.String(40)),
    sa.Column("git_sha", sa.String(64)),
    sa.Column("ci_url", sa.Text),
    sa.Column("versions", sa.Text, nullable=False),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("dask_config", sa.Text, nullable=False),
)  # fmt: skip
cases = sa.Table(
    "cases", metadata,
    sa.Column("fingerprint", sa.String(32), primary_key=True),
    sa.Column("workload", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("cluster", sa.Text, nullable=False),
    sa.Column("first_seen_at", sa.String(40), nullable=False),
)  # fmt: skip
measurements = sa.Table(
    "measurements", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), nullable=False),
    sa.Column("fingerprint", sa.String(32), sa.ForeignKey("cases.fingerprint"), nullable=False),
    sa.Column("repeat", sa.Integer, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("phases", sa.Text, nullable=False),
    sa.Column("timeline", sa.Text, nullable=False),
    sa.Column("extra", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.String(40), nullable=False),
    sa.UniqueConstraint("run_id", "fingerprint", "repeat", name="uq_measurement"),
)  # fmt: skip
metric_values = sa.Table(
    "metric_values", metadata,
    sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id"), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Float, nullable=False),
)  # fmt: skip
run_tags = sa.Table(
    "run_tags", metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)  # fmt: skip
run_events = sa.Table(
    "run_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), nullable=False, index=True),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("at", sa.String(40), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
)  # fmt: skip
measurement_flags = sa.Table(
    "measurement_flags", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id"), nullable=False, index=True),
    sa.Column("flag", sa.String(32), nullable=False),
    sa.Column("at", sa.String(40), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
)  # fmt: skip
task_memory = sa.Table(
    "task_memory", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), nullable=False),
    sa.Column("fingerprint", sa.String(32), sa.ForeignKey("cases.fingerprint"), nullable=False),
    sa.Column("repeat", sa.Integer, nullable=False),
    sa.Column("prefix", sa.Text, nullable=False),
    sa.Column("tasks", sa.BigInteger, nullable=False),
    sa.Column("peak_bytes", sa.BigInteger, nullable=False),
    sa.Column("p95_bytes", sa.BigInteger, nullable=False),
    sa.Column("input_bytes", sa.BigInteger, nullable=False),
    sa.Column("concurrency", sa.Integer, nullable=False),
    sa.UniqueConstraint("run_id", "fingerprint", "repeat", "prefix", name="uq_task_memory"),
)  # fmt: skip
baselines = sa.Table(
    "baselines", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("run_ids", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
)  # fmt: skip


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _dumps(value: Any) -> str:
    return json.dumps(json_safe(value), sort_keys=True, allow_nan=False)


class Store:
    """A results store at a SQLAlchemy URL; created (unless ``create`` is False) and migrated on first open.

    A database that is not a daskbench store (tables but no ``schema_meta``, or not SQLite
    at all) is refused before anything is written to it; for SQLite files it is inspected
    read-only first, because even switching on WAL would change its bytes. Read-only
    commands pass ``create=False`` so a mistyped ``--db`` never leaves a new file behind.
    """

    def __init__(self, url: str, create: bool = True) -> None:
        self.url = url
        self.display_url = redact_url(url)
        self.create = create
        self.engine = self._connect(url)
        self._migrate()

    def _connect(self, url: str) -> Engine:
        try:
            parsed = sa.engine.make_url(url)
        except ArgumentError:
            raise DaskbenchError(
                f"{url!r} is not a database URL; use e.g. sqlite:///results/daskbench.db or postgresql://host/db"
            ) from None
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            self._check_sqlite_file(Path(parsed.database))
        try:
            engine = sa.create_engine(parsed)
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            raise DaskbenchError(
                f"no driver for {self.display_url} ({exc}); for PostgreSQL: pip install 'daskbench[postgres]'"
            ) from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
            sa.event.listen(engine, "begin", _sqlite_begin)
        return engine

    @staticmethod
    def preflight(url: str) -> None:
        """Check ``url`` as `Store` would (URL, driver, a SQLite file that is ours or can be created:
        its folder is made) without creating or changing a database: for the session's early checks."""
        probe = Store.__new__(Store)
        probe.url, probe.display_url, probe.create = url, redact_url(url), True
        probe._connect(url).dispose()  # creating an engine opens no connection

    def _check_sqlite_file(self, path: Path) -> None:
        """Refuse a file that is not a daskbench store, and a missing one unless creating; never write to it."""
        if not path.exists() or path.stat().st_size == 0:
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
            return
        if path.is_dir():
            raise DaskbenchError(f"--db {path} is a directory; name a file in it: sqlite:///{path / 'daskbench.db'}")
        tables = _sqlite_tables(path)
        if tables is None:
            raise DaskbenchError(
                f"{self.display_url} is not a usable daskbench store (not a SQLite database); "
                "move the file away or pass another --db"
            )
        if tables and "schema_meta" not in tables:
            raise DaskbenchError(
                f"{self.display_url} has tables but no daskbench schema version; "
                "it is not a daskbench store (left untouched): pass another --db"
            )

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        """One transaction; ``write`` takes SQLite's write lock at BEGIN (``BEGIN IMMEDIATE``),
        so a transaction that reads then writes cannot fail half-way on a stale snapshot."""
        engine = self.engine.execution_options(daskbench_write=True) if write else self.engine
        try:
            with engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            if _is_busy(exc):
                raise _Busy(f"the store {self.display_url} stayed locked by other writers; try again") from None
            raise DaskbenchError(f"cannot use the store {self.display_url}: {_first_line(exc)}; check --db") from None
        except DatabaseError as exc:
            if isinstance(exc, IntegrityError):
                raise
            raise DaskbenchError(
                f"{self.display_url} is not a usable daskbench store ({_first_line(exc)}); "
                "move the file away or pass another --db"
            ) from None

    def _migrate(self) -> None:
        """Create or upgrade the schema under one lock, so simultaneous first opens cannot race.

        A store already at this version is only read (no write lock); otherwise SQLite's
        write lock (``BEGIN IMMEDIATE``) or PostgreSQL's advisory lock serialises the
        check and the change, and whoever comes second finds the work done.
        """
        found = self._schema_version()
        if found == SCHEMA_VERSION:
            return
        if found is None and not self.create:
            raise DaskbenchError(
                f"no daskbench store at {self.display_url}; check --db, or fill one with: pytest -m benchmark"
            )
        _retrying(self._migrate_locked)

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
        value = conn.execute(sa.select(schema_meta.c.value).where(schema_meta.c.key == "schema_version")).scalar()
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
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
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

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -------------------------------------------------------------------

    @_retry_busy
    def add_run(self, run: Run) -> None:
        with self._tx(write=True) as conn:
            conn.execute(runs.insert().values(**_run_row(run)))
            if run.tags:
                conn.execute(run_tags.insert(), _tag_rows(run.run_id, run.tags))

    @_retry_busy
    def tag_run(self, run_id: str, tags: Mapping[str, str]) -> None:
        """Add write-once tags to a run; a tag already set to another value is an error."""
        Run(run_id=run_id, label="", started_at="check", tags=tags)  # the record's checks of keys and values
        with self._tx(write=True) as conn:
            have = dict(
                conn.execute(sa.select(run_tags.c.key, run_tags.c.value).where(run_tags.c.run_id == run_id)).all()
            )
            clash = {key for key, value in tags.items() if key in have and have[key] != value}
            if clash:
                raise DaskbenchError(f"run {run_id[:8]} already has tag(s) {', '.join(sorted(clash))} set differently")
            new = {key: value for key, value in tags.items() if key not in have}
            if new:
                conn.execute(run_tags.insert(), _tag_rows(run_id, new))

    @_retry_busy
    def record_event(self, run_id: str, status: str, detail: str = "") -> None:
        """Append a status event to a run's history (the newest event is its status)."""
        with self._tx(write=True) as conn:
            conn.execute(run_events.insert().values(run_id=run_id, status=status, at=now_iso(), detail=detail))

    def events(self, run_ids: Sequence[str] | None = None) -> dict[str, list[tuple[str, str, str]]]:
        """(status, at, detail) per run, oldest first."""
        query = sa.select(run_events).order_by(run_events.c.id)
        if run_ids is not None:
            query = query.where(run_events.c.run_id.in_(list(run_ids)))
        found: dict[str, list[tuple[str, str, str]]] = {}
        with self._tx() as conn:
            for row in conn.execute(query).mappings():
                found.setdefault(row["run_id"], []).append((row["status"], row["at"], row["detail"]))
        return found

    def last_activity(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The newest measurement time of each run that has one: the heartbeat of a running run."""
        query = (
            sa.select(measurements.c.run_id, sa.func.max(measurements.c.recorded_at))
            .where(measurements.c.run_id.in_(list(run_ids)))
            .group_by(measurements.c.run_id)
        )
        with self._tx() as conn:
            return {run_id: at for run_id, at in conn.execute(query).all() if at}

    @_retry_busy
    def flag_measurements(self, run_id: str, fingerprint: str, flag: str, detail: str = "") -> int:
        """Mark every measurement of one case in one run (append-only); returns how many were marked."""
        with self._tx(write=True) as conn:
            ids = (
                conn.execute(
                    sa.select(measurements.c.id).where(
                        measurements.c.run_id == run_id, measurements.c.fingerprint == fingerprint
                    )
                )
                .scalars()
                .all()
            )
            if ids:
                at = now_iso()
                conn.execute(measurement_flags.insert(),
                             [{"measurement_id": i, "flag": flag, "at": at, "detail": detail} for i in ids])  # fmt: skip
        return len(ids)

    @_retry_busy
    def finish_run(self, run_id: str, ended_at: str | None = None) -> None:
        """Stamp the run's end: the one update the store makes, and only to an unset field."""
        with self._tx(write=True) as conn:
            conn.execute(
                runs.update()
                .where(runs.c.run_id == run_id, runs.c.ended_at.is_(None))
                .values(ended_at=ended_at or now_iso())
            )

    @_retry_busy
    def add_case(self, case: Case) -> None:
        """Insert the case if its fingerprint is new (cases are shared across runs)."""
        row = {
            "fingerprint": case.fingerprint,
            "workload": case.workload,
            "params": _dumps(case.params),
            "cluster": _dumps(case.cluster.identity()),
            "first_seen_at": now_iso(),
        }
        with self._tx(write=True) as conn:
            conn.execute(_insert_or_ignore(conn, cases, ("fingerprint",)).values(**row))

    @_retry_busy
    def add_measurement(self, measurement: Measurement) -> None:
        """Append one measurement in its own transaction; a duplicate key is an error."""
        try:
            with self._tx(write=True) as conn:
                inserted = conn.execute(measurements.insert().values(**_measurement_row(measurement)))
                (measurement_id,) = inserted.inserted_primary_key or (None,)
                values = [{"measurement_id": measurement_id, "name": name, "value": float(value)}
                          for name, value in measurement.metrics.items()]  # fmt: skip
                if values:
                    conn.execute(metric_values.insert(), values)
                if measurement.tasks:
                    conn.execute(task_memory.insert(), _task_rows(measurement))
        except IntegrityError as exc:
            raise DaskbenchError(
                f"measurement {measurement.fingerprint} repeat {measurement.repeat} of run {measurement.run_id} "
                f"is already stored or its run/case is unknown ({_first_line(exc)})"
            ) from None

    @_retry_busy
    def set_baseline(self, name: str, run_ids: Sequence[str]) -> tuple[str, ...]:
        """Point baseline ``name`` at these runs (ids or unique prefixes); returns the full ids."""
        if not name.strip():
            raise DaskbenchError("a baseline needs a name, e.g. daskbench baseline set main <run-id>")
        if name != name.strip() or len(name) > 100 or not name.isprintable():
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise DaskbenchError(
                f"baseline name {shown!r} must be at most 100 printable characters, "
                "without leading or trailing spaces, e.g. main"
            )
        full = tuple(self.run(run_id).run_id for run_id in run_ids)
        if not full:
            raise DaskbenchError(f"baseline {name!r} needs at least one run id; see daskbench runs")
        with self._tx(write=True) as conn:
            conn.execute(baselines.insert().values(name=name, run_ids=_dumps(full), created_at=now_iso()))
        return full

    # -- reading -------------------------------------------------------------------

    def runs(self, limit: int | None = None) -> list[Run]:
        """Runs, newest first."""
        query = sa.select(runs).order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            rows = conn.execute(query).mappings().all()
            tags = _tags_by_run(conn, [row["run_id"] for row in rows])
        return [_run_from_row(row, tags.get(row["run_id"], {})) for row in rows]

    def run(self, run_id: str) -> Run:
        """The run with this id or unique id prefix."""
        with self._tx() as conn:
            rows = (
                conn.execute(sa.select(runs).where(runs.c.run_id.startswith(run_id, autoescape=True))).mappings().all()
            )
        if not run_id or not rows:
            raise DaskbenchError(f"no run {run_id!r} in {self.display_url}; list runs with: daskbench runs")
        exact = [row for row in rows if row["run_id"] == run_id]
        if len(rows) > 1 and not exact:
            raise DaskbenchError(f"run id prefix {run_id!r} matches {len(rows)} runs; give more characters")
        row = exact[0] if exact else rows[0]
        with self._tx() as conn:
            tags = _tags_by_run(conn, [row["run_id"]])
        return _run_from_row(row, tags.get(row["run_id"], {}))

    def latest_run(self) -> Run:
        found = self.runs(limit=1)
        if not found:
            raise DaskbenchError(f"{self.display_url} has no runs yet; run: pytest -m benchmark")
        return found[0]

    def baseline(self, name: str) -> tuple[str, ...]:
        """The run ids of the newest setting of baseline ``name``."""
        query = sa.select(baselines.c.run_ids).where(baselines.c.name == name).order_by(baselines.c.id.desc()).limit(1)
        with self._tx() as conn:
            found = conn.execute(query).scalar_one_or_none()
        if found is None:
            raise DaskbenchError(
                f"no baseline named {name!r} in {self.display_url}; set one with: daskbench baseline set {name} <run-id>"
            )
        return tuple(json.loads(found))

    def baselines(self) -> dict[str, tuple[str, ...]]:
        with self._tx() as conn:
            rows = conn.execute(sa.select(baselines).order_by(baselines.c.id)).mappings().all()
        return {row["name"]: tuple(json.loads(row["run_ids"])) for row in rows}

    def cases(self, fingerprints: Iterable[str] | None = None) -> dict[str, Case]:
        query = sa.select(cases)
        if fingerprints is not None:
            query = query.where(cases.c.fingerprint.in_(list(fingerprints)))
        with self._tx() as conn:
            return {row["fingerprint"]: _case_from_row(row) for row in conn.execute(query).mappings()}

    def measurements(self, run_ids: Sequence[str] | None = None, fingerprint: str | None = None) -> list[Measurement]:
        """Measurements in insertion order, optionally of some runs and/or one case."""
        where: list[sa.ColumnElement[bool]] = []
        if run_ids is not None:
            where.append(measurements.c.run_id.in_(list(run_ids)))
        if fingerprint is not None:
            where.append(measurements.c.fingerprint == fingerprint)
        query = sa.select(measurements).where(*where).order_by(measurements.c.id)
        values_query = (
            sa.select(metric_values)
            .join(measurements, measurements.c.id == metric_values.c.measurement_id)
            .where(*where)
        )
        flags_query = (
            sa.select(measurement_flags.c.measurement_id, measurement_flags.c.flag)
            .join(measurements, measurements.c.id == measurement_flags.c.measurement_id)
            .where(*where)
            .order_by(measurement_flags.c.id)
        )
        with self._tx() as conn:
            rows = conn.execute(query).mappings().all()
            found = _metrics_by_measurement(conn.execute(values_query).mappings())
            flags: dict[int, list[str]] = {}
            for measurement_id, flag in conn.execute(flags_query).all():
                flags.setdefault(measurement_id, []).append(flag)
            tasks = _tasks_by_measurement(conn, where)
        return [_measurement_from_row(row, found.get(row["id"], {}), flags.get(row["id"], []),
                                      tasks.get((row["run_id"], row["fingerprint"], row["repeat"]), ()))
                for row in rows]  # fmt: skip

    # -- exchange (daskbench export / import) --------------------------------------

    def dump_rows(self, since: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every stored row as (kind, plain row) without local ids, runs started at or after ``since``.

        Rows are keyed by what identifies them in any store (run id, fingerprint, (run,
        fingerprint, repeat), ...), never by autoincrement ids, so `merge_rows` can merge them.
        """
        run_query = sa.select(runs).order_by(runs.c.started_at, runs.c.run_id)
        if since is not None:
            run_query = run_query.where(runs.c.started_at >= since)
        with self._tx() as conn:
            run_rows = [dict(row) for row in conn.execute(run_query).mappings()]
            run_ids = {row["run_id"] for row in run_rows}
            found = _exchange_children(conn, run_ids)
            base_query = sa.select(baselines).order_by(baselines.c.id)
            if since is not None:
                base_query = base_query.where(baselines.c.created_at >= since)
            base_rows = [{k: v for k, v in row.items() if k != "id"} for row in conn.execute(base_query).mappings()]
        yield from (("run", row) for row in run_rows)
        for kind in ("tag", "event", "case", "measurement", "flag", "task_peak"):
            yield from ((kind, row) for row in found[kind])
        yield from (("baseline", row) for row in base_rows)

    @_retry_busy
    def merge_rows(self, kind: str, rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        """Insert the rows of one kind this store lacks, in one transaction; returns (added, skipped)."""
        merge = _MERGERS[kind]
        with self._tx(write=True) as conn:
            added = merge(conn, rows)
        return added, len(rows) - added


def _exchange_children(conn: Connection, run_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Tags, events, cases, measurements (with metric values), flags and task memory of these runs."""
    found: dict[str, list[dict[str, Any]]] = {"tag": [], "event": [], "case": [], "measurement": [], "flag": [],
                                              "task_peak": []}  # fmt: skip
    keys: dict[int, tuple[str, str, int]] = {}
    fingerprints: set[str] = set()
    for row in conn.execute(sa.select(run_tags).order_by(run_tags.c.run_id, run_tags.c.key)).mappings():
        if row["run_id"] in run_ids:
            found["tag"].append(dict(row))
    for row in conn.execute(sa.select(run_events).order_by(run_events.c.id)).mappings():
        if row["run_id"] in run_ids:
            found["event"].append({k: v for k, v in row.items() if k != "id"})
    values: dict[int, dict[str, float]] = {}
    for row in conn.execute(sa.select(metric_values)).mappings():
        values.setdefault(row["measurement_id"], {})[row["name"]] = row["value"]
    for row in conn.execute(sa.select(measurements).order_by(measurements.c.id)).mappings():
        if row["run_id"] in run_ids:
            keys[row["id"]] = (row["run_id"], row["fingerprint"], row["repeat"])
            fingerprints.add(row["fingerprint"])
            plain = {k: v for k, v in row.items() if k != "id"}
            found["measurement"].append({**plain, "metrics": values.get(row["id"], {})})
    for row in conn.execute(sa.select(cases).order_by(cases.c.fingerprint)).mappings():
        if row["fingerprint"] in fingerprints:
            found["case"].append(dict(row))
    for row in conn.execute(sa.select(measurement_flags).order_by(measurement_flags.c.id)).mappings():
        if row["measurement_id"] in keys:
            run_id, fingerprint, repeat = keys[row["measurement_id"]]
            found["flag"].append({"run_id": run_id, "fingerprint": fingerprint, "repeat": repeat,
                                  "flag": row["flag"], "at": row["at"], "detail": row["detail"]})  # fmt: skip
    for row in conn.execute(sa.select(task_memory).order_by(task_memory.c.id)).mappings():
        if row["run_id"] in run_ids:
            found["task_peak"].append({k: v for k, v in row.items() if k != "id"})
    return found


def _merge_plain(table: sa.Table, key: tuple[str, ...]) -> Callable[[Connection, Sequence[Mapping[str, Any]]], int]:
    """A merger inserting rows whose ``key`` columns are not stored yet (nor earlier in ``rows``)."""

    def merge(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        have = {tuple(row) for row in conn.execute(sa.select(*(table.c[name] for name in key)))}
        new: list[dict[str, Any]] = []
        for row in rows:
            ident = tuple(row[name] for name in key)
            if ident not in have:
                have.add(ident)
                new.append({column.name: row.get(column.name) for column in table.columns if column.name != "id"})
        if new:
            conn.execute(table.insert(), new)
        return len(new)

    return merge


def _merge_runs(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """New runs are inserted; a stored run exported before it ended gets its ``ended_at`` from a
    later export (the one update the store makes, and only to an unset field)."""
    open_runs = set(conn.execute(sa.select(runs.c.run_id).where(runs.c.ended_at.is_(None))).scalars())
    ended = 0
    for row in rows:
        if row["run_id"] in open_runs and row.get("ended_at"):
            conn.execute(runs.update().where(runs.c.run_id == row["run_id"], runs.c.ended_at.is_(None))
                         .values(ended_at=row["ended_at"]))  # fmt: skip
            ended += 1
    return _merge_plain(runs, ("run_id",))(conn, rows) + ended


def _merge_measurements(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    have = {tuple(row) for row in conn.execute(sa.select(measurements.c.run_id, measurements.c.fingerprint,
                                                                    measurements.c.repeat))}  # fmt: skip
    added = 0
    for row in rows:
        ident = (row["run_id"], row["fingerprint"], row["repeat"])
        if ident in have:
            continue
        have.add(ident)
        plain = {column.name: row[column.name] for column in measurements.columns if column.name != "id"}
        (measurement_id,) = conn.execute(measurements.insert().values(**plain)).inserted_primary_key or (None,)
        metric_rows = [{"measurement_id": measurement_id, "name": name, "value": float(value)}
                       for name, value in row.get("metrics", {}).items()]  # fmt: skip
        if metric_rows:
            conn.execute(metric_values.insert(), metric_rows)
        added += 1
    return added


def _merge_flags(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    ids = {(r, f, n): i for i, r, f, n in conn.execute(sa.select(measurements.c.id, measurements.c.run_id,
                                                                  measurements.c.fingerprint, measurements.c.repeat))}  # fmt: skip
    have = {tuple(row) for row in conn.execute(sa.select(measurement_flags.c.measurement_id, measurement_flags.c.flag,
                                                                    measurement_flags.c.at, measurement_flags.c.detail))}  # fmt: skip
    new: list[dict[str, Any]] = []
    for row in rows:
        measurement_id = ids.get((row["run_id"], row["fingerprint"], row["repeat"]))
        ident = (measurement_id, row["flag"], row["at"], row["detail"])
        if measurement_id is not None and ident not in have:
            have.add(ident)
            new.append(dict(zip(("measurement_id", "flag", "at", "detail"), ident, strict=True)))
    if new:
        conn.execute(measurement_flags.insert(), new)
    return len(new)


def _merge_baselines(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """Baselines keyed by (name, created_at, run ids); inserted oldest first so the newest still wins."""
    return _merge_plain(baselines, ("name", "created_at", "run_ids"))(conn, sorted(rows, key=lambda r: r["created_at"]))


#: How `Store.merge_rows` merges each kind of `Store.dump_rows` row, keyed on ids every store shares.
_MERGERS: dict[str, Callable[[Connection, Sequence[Mapping[str, Any]]], int]] = {
    "run": _merge_runs,
    "tag": _merge_plain(run_tags, ("run_id", "key")),
    "event": _merge_plain(run_events, ("run_id", "status", "at", "detail")),
    "case": _merge_plain(cases, ("fingerprint",)),
    "measurement": _merge_measurements,
    "flag": _merge_flags,
    "task_peak": _merge_plain(task_memory, ("run_id", "fingerprint", "repeat", "prefix")),
    "baseline": _merge_baselines,
}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Wait for other writers (busy_timeout first, so even switching to WAL waits), and let
    `_sqlite_begin` issue BEGIN itself: the driver's own would not cover DDL."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE for writes (the write lock up front, waited for), plain BEGIN for reads."""
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("daskbench_write") else "BEGIN")


def _sqlite_tables(path: Path) -> set[str] | None:
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


def _insert_or_ignore(conn: Connection, table: sa.Table, key: tuple[str, ...]) -> Any:
    """An INSERT that does nothing when a row with the same ``key`` exists: one statement, so
    two writers adding the same row at once cannot both pass a check and collide."""
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(key))
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(key))
    raise DaskbenchError(f"daskbench stores support SQLite and PostgreSQL, not {conn.dialect.name}; pass another --db")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _run_row(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "label": run.label,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "git_sha": run.git_sha,
        "ci_url": redact_url(run.ci_url) if run.ci_url else None,
        "versions": _dumps(run.versions),
        "host": _dumps(run.host),
        "dask_config": _dumps(redact_value(dict(run.dask_config))),  # the one rule (daskbench.redact), again here
    }


def _tag_rows(run_id: str, tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"run_id": run_id, "key": key, "value": value} for key, value in tags.items()]


def _tags_by_run(conn: Connection, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for start in range(0, len(run_ids), 500):  # keep IN lists short for every backend
        query = sa.select(run_tags).where(run_tags.c.run_id.in_(list(run_ids[start : start + 500])))
        for row in conn.execute(query).mappings():
            found.setdefault(row["run_id"], {})[row["key"]] = row["value"]
    return found


def _run_from_row(row: Mapping[Any, Any], tags: Mapping[str, str]) -> Run:
    return Run(
        run_id=row["run_id"],
        label=row["label"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        git_sha=row["git_sha"],
        ci_url=row["ci_url"],
        versions=json.loads(row["versions"]),
        host=json.loads(row["host"]),
        dask_config=redact_value(json.loads(row["dask_config"])),  # also stores written before the rule
        tags=dict(tags),
    )


def _case_from_row(row: Mapping[Any, Any]) -> Case:
    return Case(
        workload=row["workload"],
        params=json.loads(row["params"]),
        cluster=ClusterSpec.from_dict(json.loads(row["cluster"])),
    )


def _measurement_row(m: Measurement) -> dict[str, Any]:
    return dict(
        run_id=m.run_id,
        fingerprint=m.fingerprint,
        repeat=m.repeat,
        outcome=m.outcome,
        message=redact_text(m.message),
        phases=_dumps(m.phases),
        timeline=_dumps(m.timeline),
        extra=_dumps(m.extra),
        recorded_at=m.recorded_at or now_iso(),
    )


def _task_rows(m: Measurement) -> list[dict[str, Any]]:
    """The ``task_memory`` rows of one measurement, one per task prefix."""
    key = {"run_id": m.run_id, "fingerprint": m.fingerprint, "repeat": m.repeat}
    return [{**key, **task.to_dict()} for task in m.tasks]


def _tasks_by_measurement(
    conn: Connection, where: Sequence[sa.ColumnElement[bool]]
) -> dict[tuple[str, str, int], tuple[TaskMemory, ...]]:
    """Task memory per (run id, fingerprint, repeat) of the measurements ``where`` selects."""
    same = sa.and_(*(measurements.c[name] == task_memory.c[name] for name in ("run_id", "fingerprint", "repeat")))
    query = sa.select(task_memory).join(measurements, same).where(*where).order_by(task_memory.c.id)
    found: dict[tuple[str, str, int], list[TaskMemory]] = {}
    for row in conn.execute(query).mappings():
        key = (row["run_id"], row["fingerprint"], row["repeat"])
        found.setdefault(key, []).append(TaskMemory.from_dict(dict(row)))
    return {key: tuple(tasks) for key, tasks in found.items()}


def _metrics_by_measurement(rows: Iterable[Mapping[Any, Any]]) -> dict[int, dict[str, float | int]]:
    """Metric values per measurement id; names this version does not declare are left in the store."""
    found: dict[int, dict[str, float | int]] = {}
    for row in rows:
        if catalog.is_declared(row["name"]):
            value = row["value"]
            found.setdefault(row["measurement_id"], {})[row["name"]] = (
                round(value) if catalog.get(row["name"]).integer else float(value)
            )
    return found


def _measurement_from_row(
    row: Mapping[Any, Any],
    values: Mapping[str, float | int],
    flags: Sequence[str],
    tasks: tuple[TaskMemory, ...] = (),
) -> Measurement:
    outcome, message = row["outcome"], row["message"]
    if outcome not in OUTCOMES:  # written by a newer daskbench: shown, not a crash
        outcome, message = "error", f"unknown outcome {outcome!r} (written by a newer daskbench): {message}"
    return Measurement(
        run_id=row["run_id"],
        fingerprint=row["fingerprint"],
        repeat=row["repeat"],
        outcome=outcome,
        message=message,
        phases=json.loads(row["phases"]),
        timeline=tuple((float(t), int(v)) for t, v in json.loads(row["timeline"])),
        extra=json.loads(row["extra"]),
        recorded_at=row["recorded_at"],
        metrics=values,
        flags=tuple(dict.fromkeys(flags)),
        tasks=tasks,
    )


# -- migrations -------------------------------------------------------------------------

#: The metric columns of schema 1's measurements table.
_V1_METRIC_COLUMNS = (
    "runtime_s", "peak_memory_bytes", "mean_memory_bytes", "peak_worker_memory_bytes",
    "peak_worker_memory_fraction", "spilled_bytes", "spill_count", "task_count",
    "bytes_transferred", "worker_restarts", "cost_usd", "rightsized_cost_usd",
)  # fmt: skip


def _to_v2(conn: Connection) -> None:
    """Schema 2: every metric column of ``measurements`` becomes rows of ``metric_values``."""
    ops = Operations(MigrationContext.configure(conn))
    metric_values.create(conn)
    for column in _V1_METRIC_COLUMNS:
        conn.execute(
            sa.text(
                f"INSERT INTO metric_values (measurement_id, name, value) "
                f"SELECT id, :name, {column} FROM measurements WHERE {column} IS NOT NULL"
            ),
            {"name": column},
        )
    for column in _V1_METRIC_COLUMNS:
        ops.drop_column("measurements", column)


def _to_v3(conn: Connection) -> None:
    """Schema 3: run tags, run status events and measurement flags (three new tables)."""
    for table in (run_tags, run_events, measurement_flags):
        table.create(conn)


def _to_v4(conn: Connection) -> None:
    """Schema 4: per-task peak memory per task prefix of a measurement (one new table, as a fresh store has it)."""
    task_memory.create(conn)


#: version -> function upgrading a store from version - 1, in the caller's transaction.
#: A fresh store is created at `SCHEMA_VERSION` whole.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _to_v2, 3: _to_v3, 4: _to_v4}
