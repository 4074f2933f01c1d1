"""The results store: the only module that speaks SQL.

SQLite by default (WAL, one commit per measurement, so a crash loses nothing already
measured); any SQLAlchemy URL (PostgreSQL, ...) works the same. Measurements are
append-only; baselines are their own table where the newest row of a name wins.

Schema history (``schema_meta.schema_version``):
  1 - runs, cases, measurements, baselines (daskbench 0.1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError, OperationalError

from daskbench.errors import DaskbenchError
from daskbench.model import Case, ClusterSpec, Measurement, Run

SCHEMA_VERSION = 1

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
    sa.Column("runtime_s", sa.Float),
    sa.Column("phases", sa.Text, nullable=False),
    sa.Column("peak_memory_bytes", sa.BigInteger),
    sa.Column("mean_memory_bytes", sa.BigInteger),
    sa.Column("peak_worker_memory_bytes", sa.BigInteger),
    sa.Column("peak_worker_memory_fraction", sa.Float),
    sa.Column("spilled_bytes", sa.BigInteger),
    sa.Column("spill_count", sa.BigInteger),
    sa.Column("task_count", sa.BigInteger),
    sa.Column("bytes_transferred", sa.BigInteger),
    sa.Column("worker_restarts", sa.Integer),
    sa.Column("cost_usd", sa.Float),
    sa.Column("rightsized_cost_usd", sa.Float),
    sa.Column("timeline", sa.Text, nullable=False),
    sa.Column("extra", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.String(40), nullable=False),
    sa.UniqueConstraint("run_id", "fingerprint", "repeat", name="uq_measurement"),
)  # fmt: skip
baselines = sa.Table(
    "baselines", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("run_ids", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
)  # fmt: skip

_MEASUREMENT_SCALARS = (
    "runtime_s", "peak_memory_bytes", "mean_memory_bytes", "peak_worker_memory_bytes",
    "peak_worker_memory_fraction", "spilled_bytes", "spill_count", "task_count",
    "bytes_transferred", "worker_restarts", "cost_usd", "rightsized_cost_usd",
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
    return json.dumps(_json_safe(value), sort_keys=True, allow_nan=False)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


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

    def _apply_migration(self, version: int) -> None:  # pragma: no cover - no migration yet beyond 1
        with self._tx() as conn:
            MIGRATIONS[version](conn)
            conn.execute(schema_meta.update().where(schema_meta.c.key == "schema_version").values(value=str(version)))

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -------------------------------------------------------------------

    def add_run(self, run: Run) -> None:
        with self._tx() as conn:
            conn.execute(runs.insert().values(**_run_row(run)))

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
                conn.execute(measurements.insert().values(**_measurement_row(measurement)))
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
            return [_run_from_row(row) for row in conn.execute(query).mappings()]

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
        return _run_from_row(exact[0] if exact else rows[0])

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
        query = sa.select(measurements).order_by(measurements.c.id)
        if run_ids is not None:
            query = query.where(measurements.c.run_id.in_(list(run_ids)))
        if fingerprint is not None:
            query = query.where(measurements.c.fingerprint == fingerprint)
        with self._tx() as conn:
            return [_measurement_from_row(row) for row in conn.execute(query).mappings()]


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


def _run_from_row(row: Mapping[Any, Any]) -> Run:
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
    )


def _case_from_row(row: Mapping[Any, Any]) -> Case:
    return Case(
        workload=row["workload"],
        params=json.loads(row["params"]),
        cluster=ClusterSpec.from_dict(json.loads(row["cluster"])),
    )


def _measurement_row(m: Measurement) -> dict[str, Any]:
    row = {name: getattr(m, name) for name in _MEASUREMENT_SCALARS}
    row.update(
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
    return row


def _measurement_from_row(row: Mapping[Any, Any]) -> Measurement:
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
        **{name: row[name] for name in _MEASUREMENT_SCALARS},
    )


#: version -> function upgrading a store from version - 1. Version 1 is created whole.
MIGRATIONS: dict[int, Any] = {}
