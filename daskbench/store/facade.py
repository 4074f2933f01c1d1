"""The `Store`: The results store: the only module that speaks SQL.

SQLite by default (WAL, one commit per measurement, so a crash loses nothing already
measured); any SQLAlchemy URL (PostgreSQL, ...) works the same. Measurements are
append-only; baselines are their own table where the newest row of a name wins.

Metric values are rows of ``metric_values`` (measurement, name, value), one per declared
metric (`daskbench.catalog`) that was measured, so a new metric needs no new column.

The tables and migrations are in `schema`, records to rows in `rows`, export/import merging in
`merge`, and what is particular to each database in `engine`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError, OperationalError

from daskbench.errors import DaskbenchError, StoreFault
from daskbench.model import Case, Measurement, Run, now_iso
from daskbench.redact import redact_url
from daskbench.store.engine import (
    Busy,
    first_line,
    insert_or_ignore,
    inspect_sqlite,
    is_busy,
    retry_busy,
    retrying,
    sqlite_begin,
    sqlite_pragmas,
    sqlite_read_pragmas,
    store_fault,
    unwritable,
)
from daskbench.store.merge import MERGERS, children_of
from daskbench.store.rows import (
    case_from_row,
    dumps,
    measurement_from_row,
    measurement_row,
    metrics_by_measurement,
    run_from_row,
    run_row,
    tag_rows,
    tags_by_run,
    task_rows,
    tasks_by_measurement,
)
from daskbench.store.schema import (
    MIGRATION_LOCK_KEY,
    MIGRATIONS,
    SCHEMA_VERSION,
    baselines,
    cases,
    measurement_flags,
    measurements,
    metadata,
    metric_values,
    run_events,
    run_tags,
    runs,
    schema_meta,
    task_memory,
)
from daskbench.text import first_few, plural

#: The longest text taken as a run id or prefix (daskbench's own are UUIDs, 36 characters).
MAX_RUN_ID = 200


class Store:
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
        self.engine = self._connect(url)
        self._migrate()

    def _connect(self, url: str) -> Engine:
        try:
            parsed = sa.engine.make_url(url)
        except ArgumentError:
            raise DaskbenchError(
                f"{url!r} is not a database URL; use e.g. sqlite:///results/daskbench.db or postgresql://host/db"
            ) from None
        read_uri = None
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            self.path = Path(parsed.database)
            read_uri = self._check_sqlite_file(self.path)
        if read_uri is not None:
            return self._read_only_engine(read_uri)
        try:
            engine = sa.create_engine(parsed)
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
        probe = Store.__new__(Store)
        probe.url, probe.display_url, probe.create, probe.fault, probe.path = url, redact_url(url), True, None, None
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
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        """One transaction; ``write`` takes SQLite's write lock at BEGIN (``BEGIN IMMEDIATE``),
        so a transaction that reads then writes cannot fail half-way on a stale snapshot."""
        engine = self.engine.execution_options(daskbench_write=True) if write else self.engine
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

    def _fault(self, exc: DatabaseError) -> DaskbenchError:
        """The one line for a database error: the storage's fault named (full, read-only, permission:
        a `StoreFault`, kept as ``fault``), else what SQLite found wrong with the file."""
        why = store_fault(exc, self.path)
        if why is not None:
            self.fault = self.fault or f"cannot write the store {self.display_url}: {why}"
            return StoreFault(self.fault)
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

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -------------------------------------------------------------------

    @retry_busy
    def add_run(self, run: Run) -> None:
        with self._tx(write=True) as conn:
            conn.execute(runs.insert().values(**run_row(run)))
            if run.tags:
                conn.execute(run_tags.insert(), tag_rows(run.run_id, run.tags))

    @retry_busy
    def tag_run(self, run_id: str, tags: Mapping[str, str]) -> None:
        """Add write-once tags to a run; a tag already set to another value is an error."""
        Run(run_id=run_id, label="", started_at="check", tags=tags)  # the record's checks of keys and values
        with self._tx(write=True) as conn:
            have = dict(
                conn.execute(sa.select(run_tags.c.key, run_tags.c.value).where(run_tags.c.run_id == run_id)).all()
            )
            clash = {key for key, value in tags.items() if key in have and have[key] != value}
            if clash:
                raise DaskbenchError(
                    f"run {run_id[:8]} already has {plural(len(clash), 'tag')} set differently: {first_few(sorted(clash))}"
                )
            new = {key: value for key, value in tags.items() if key not in have}
            if new:
                conn.execute(run_tags.insert(), tag_rows(run_id, new))

    @retry_busy
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

    @retry_busy
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

    @retry_busy
    def finish_run(self, run_id: str, ended_at: str | None = None) -> None:
        """Stamp the run's end: the one update the store makes, and only to an unset field."""
        with self._tx(write=True) as conn:
            conn.execute(
                runs.update()
                .where(runs.c.run_id == run_id, runs.c.ended_at.is_(None))
                .values(ended_at=ended_at or now_iso())
            )

    @retry_busy
    def add_case(self, case: Case) -> None:
        """Insert the case if its fingerprint is new (cases are shared across runs)."""
        row = {
            "fingerprint": case.fingerprint,
            "workload": case.workload,
            "params": dumps(case.params),
            "cluster": dumps(case.cluster.identity()),
            "first_seen_at": now_iso(),
        }
        with self._tx(write=True) as conn:
            conn.execute(insert_or_ignore(conn, cases, ("fingerprint",)).values(**row))

    @retry_busy
    def add_measurement(self, measurement: Measurement) -> None:
        """Append one measurement in its own transaction; a duplicate key is an error."""
        try:
            with self._tx(write=True) as conn:
                inserted = conn.execute(measurements.insert().values(**measurement_row(measurement)))
                (measurement_id,) = inserted.inserted_primary_key or (None,)
                values = [{"measurement_id": measurement_id, "name": name, "value": float(value)}
                          for name, value in measurement.metrics.items()]  # fmt: skip
                if values:
                    conn.execute(metric_values.insert(), values)
                if measurement.tasks:
                    conn.execute(task_memory.insert(), task_rows(measurement))
        except IntegrityError as exc:
            raise DaskbenchError(
                f"measurement {measurement.fingerprint} repeat {measurement.repeat} of run {measurement.run_id} "
                f"is already stored or its run/case is unknown ({first_line(exc)})"
            ) from None

    @retry_busy
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
            conn.execute(baselines.insert().values(name=name, run_ids=dumps(full), created_at=now_iso()))
        return full

    # -- reading -------------------------------------------------------------------

    def runs(self, limit: int | None = None) -> list[Run]:
        """Runs, newest first."""
        query = sa.select(runs).order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            rows = conn.execute(query).mappings().all()
            tags = tags_by_run(conn, [row["run_id"] for row in rows])
        return [run_from_row(row, tags.get(row["run_id"], {})) for row in rows]

    def run(self, run_id: str) -> Run:
        """The run with this id or unique id prefix."""
        if len(run_id) > MAX_RUN_ID:
            raise DaskbenchError(f"run id {run_id[:12]!r}... is {len(run_id)} characters long; a run id has at most "
                                 f"{MAX_RUN_ID} (see: daskbench runs)")  # fmt: skip
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
            tags = tags_by_run(conn, [row["run_id"]])
        return run_from_row(row, tags.get(row["run_id"], {}))

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
            return {row["fingerprint"]: case_from_row(row) for row in conn.execute(query).mappings()}

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
            found = metrics_by_measurement(conn.execute(values_query).mappings())
            flags: dict[int, list[str]] = {}
            for measurement_id, flag in conn.execute(flags_query).all():
                flags.setdefault(measurement_id, []).append(flag)
            tasks = tasks_by_measurement(conn, where)
        return [measurement_from_row(row, found.get(row["id"], {}), flags.get(row["id"], []),
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
            found = children_of(conn, run_ids)
            base_query = sa.select(baselines).order_by(baselines.c.id)
            if since is not None:
                base_query = base_query.where(baselines.c.created_at >= since)
            base_rows = [{k: v for k, v in row.items() if k != "id"} for row in conn.execute(base_query).mappings()]
        yield from (("run", row) for row in run_rows)
        for kind in ("tag", "event", "case", "measurement", "flag", "task_peak"):
            yield from ((kind, row) for row in found[kind])
        yield from (("baseline", row) for row in base_rows)

    @retry_busy
    def merge_rows(self, groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, tuple[int, int]]:
        """Insert the rows this store lacks, kind by kind in the order given (parents first), in one
        transaction, so rows that do not fit (a measurement of a run neither has) change nothing;
        returns (added, skipped) per kind."""
        counts: dict[str, tuple[int, int]] = {}
        try:
            with self._tx(write=True) as conn:
                for kind, rows in groups.items():
                    added = MERGERS[kind](conn, rows)
                    counts[kind] = (added, len(rows) - added)
        except IntegrityError as exc:
            raise DaskbenchError(f"rows that do not fit the store ({first_line(exc)}); nothing merged") from None
        return counts
