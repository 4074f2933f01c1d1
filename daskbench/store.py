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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError, OperationalError

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.model import Case, ClusterSpec, Measurement, Run
from daskbench.text import json_safe

SCHEMA_VERSION = 3

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
baselines = sa.Table(
    "baselines", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("run_ids", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
)  # fmt: skip


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, safe for logs and reports."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def _dumps(value: Any) -> str:
    return json.dumps(json_safe(value), sort_keys=True, allow_nan=False)


class Store:
    """A results store at a SQLAlchemy URL; created and migrated on first open."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.display_url = redact_url(url)
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
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        try:
            engine = sa.create_engine(parsed)
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            raise DaskbenchError(
                f"no driver for {self.display_url} ({exc}); for PostgreSQL: pip install 'daskbench[postgres]'"
            ) from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise DaskbenchError(f"cannot use the store {self.display_url}: {_first_line(exc)}; check --db") from None
        except DatabaseError as exc:
            if isinstance(exc, IntegrityError):
                raise
            raise DaskbenchError(
                f"{self.display_url} is not a usable daskbench store ({_first_line(exc)}); "
                "move the file away or pass another --db"
            ) from None

    def _migrate(self) -> None:
        with self._tx() as conn:
            inspector = sa.inspect(conn)
            if not inspector.has_table("schema_meta"):
                if inspector.has_table("measurements"):
                    raise DaskbenchError(
                        f"{self.display_url} has tables but no daskbench schema version; "
                        "it is not a daskbench store: pass another --db"
                    )
                metadata.create_all(conn)
                conn.execute(schema_meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
                return
            found = int(
                conn.execute(sa.select(schema_meta.c.value).where(schema_meta.c.key == "schema_version")).scalar_one()
            )
        if found > SCHEMA_VERSION:
            raise DaskbenchError(
                f"{self.display_url} uses store schema {found}, newer than this daskbench knows ({SCHEMA_VERSION}); "
                "upgrade daskbench (pip install -U daskbench) or pass another --db"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            self._apply_migration(version)

    def _apply_migration(self, version: int) -> None:
        """Upgrade to ``version`` in one transaction, unless another process already did."""
        with self._tx() as conn:
            current = conn.execute(sa.select(schema_meta.c.value).where(schema_meta.c.key == "schema_version"))
            if int(current.scalar_one()) >= version:
                return
            MIGRATIONS[version](conn)
            conn.execute(schema_meta.update().where(schema_meta.c.key == "schema_version").values(value=str(version)))

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -------------------------------------------------------------------

    def add_run(self, run: Run) -> None:
        with self._tx() as conn:
            conn.execute(runs.insert().values(**_run_row(run)))
            if run.tags:
                conn.execute(run_tags.insert(), _tag_rows(run.run_id, run.tags))

    def tag_run(self, run_id: str, tags: Mapping[str, str]) -> None:
        """Add write-once tags to a run; a tag already set to another value is an error."""
        Run(run_id=run_id, label="", started_at="check", tags=tags)  # the record's checks of keys and values
        with self._tx() as conn:
            have = dict(
                conn.execute(sa.select(run_tags.c.key, run_tags.c.value).where(run_tags.c.run_id == run_id)).all()
            )
            clash = {key for key, value in tags.items() if key in have and have[key] != value}
            if clash:
                raise DaskbenchError(f"run {run_id[:8]} already has tag(s) {', '.join(sorted(clash))} set differently")
            new = {key: value for key, value in tags.items() if key not in have}
            if new:
                conn.execute(run_tags.insert(), _tag_rows(run_id, new))

    def record_event(self, run_id: str, status: str, detail: str = "") -> None:
        """Append a status event to a run's history (the newest event is its status)."""
        with self._tx() as conn:
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

    def flag_measurements(self, run_id: str, fingerprint: str, flag: str, detail: str = "") -> int:
        """Mark every measurement of one case in one run (append-only); returns how many were marked."""
        with self._tx() as conn:
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

    def finish_run(self, run_id: str, ended_at: str | None = None) -> None:
        """Stamp the run's end: the one update the store makes, and only to an unset field."""
        with self._tx() as conn:
            conn.execute(
                runs.update()
                .where(runs.c.run_id == run_id, runs.c.ended_at.is_(None))
                .values(ended_at=ended_at or now_iso())
            )

    def add_case(self, case: Case) -> None:
        """Insert the case if its fingerprint is new (cases are shared across runs)."""
        row = {
            "fingerprint": case.fingerprint,
            "workload": case.workload,
            "params": _dumps(case.params),
            "cluster": _dumps(case.cluster.identity()),
            "first_seen_at": now_iso(),
        }
        with self._tx() as conn:
            exists = conn.execute(sa.select(cases.c.fingerprint).where(cases.c.fingerprint == row["fingerprint"]))
            if exists.first() is None:
                conn.execute(cases.insert().values(**row))

    def add_measurement(self, measurement: Measurement) -> None:
        """Append one measurement in its own transaction; a duplicate key is an error."""
        try:
            with self._tx() as conn:
                inserted = conn.execute(measurements.insert().values(**_measurement_row(measurement)))
                (measurement_id,) = inserted.inserted_primary_key or (None,)
                values = [{"measurement_id": measurement_id, "name": name, "value": float(value)}
                          for name, value in measurement.metrics.items()]  # fmt: skip
                if values:
                    conn.execute(metric_values.insert(), values)
        except IntegrityError as exc:
            raise DaskbenchError(
                f"measurement {measurement.fingerprint} repeat {measurement.repeat} of run {measurement.run_id} "
                f"is already stored or its run/case is unknown ({_first_line(exc)})"
            ) from None

    def set_baseline(self, name: str, run_ids: Sequence[str]) -> tuple[str, ...]:
        """Point baseline ``name`` at these runs (ids or unique prefixes); returns the full ids."""
        if not name.strip():
            raise DaskbenchError("a baseline needs a name, e.g. daskbench baseline set main <run-id>")
        full = tuple(self.run(run_id).run_id for run_id in run_ids)
        if not full:
            raise DaskbenchError(f"baseline {name!r} needs at least one run id; see daskbench runs")
        with self._tx() as conn:
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
        return [_measurement_from_row(row, found.get(row["id"], {}), flags.get(row["id"], [])) for row in rows]


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


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
        "ci_url": run.ci_url,
        "versions": _dumps(run.versions),
        "host": _dumps(run.host),
        "dask_config": _dumps(run.dask_config),
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
        dask_config=json.loads(row["dask_config"]),
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
        message=m.message,
        phases=_dumps(m.phases),
        timeline=_dumps(m.timeline),
        extra=_dumps(m.extra),
        recorded_at=m.recorded_at or now_iso(),
    )


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
    row: Mapping[Any, Any], values: Mapping[str, float | int], flags: Sequence[str]
) -> Measurement:
    return Measurement(
        run_id=row["run_id"],
        fingerprint=row["fingerprint"],
        repeat=row["repeat"],
        outcome=row["outcome"],
        message=row["message"],
        phases=json.loads(row["phases"]),
        timeline=tuple((float(t), int(v)) for t, v in json.loads(row["timeline"])),
        extra=json.loads(row["extra"]),
        recorded_at=row["recorded_at"],
        metrics=values,
        flags=tuple(dict.fromkeys(flags)),
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


#: version -> function upgrading a store from version - 1, in the caller's transaction.
#: A fresh store is created at `SCHEMA_VERSION` whole.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _to_v2, 3: _to_v3}
