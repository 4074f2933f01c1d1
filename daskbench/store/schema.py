"""The store's tables, its schema version and the migrations from each older version.

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
  5 - reading a window of a long history touches only it (``tests/fixtures/store-v4.db``): measurements
      indexed by case then run and by run then outcome, each holding the outcome and repeat too, so which
      runs are good and how many measurements ended how are read from the index alone; runs by start; on
      SQLite, metric values kept in the order of their key (``WITHOUT ROWID``), a measurement's values in
      one place, and a fifth of the store smaller. Already indexed by their keys: metric values by
      measurement elsewhere, run tags by run, flags by measurement, events by run, task memory by run.
  6 - on PostgreSQL, whose indexes hold no row id, schema 5's measurement indexes hold the measurement's id
      too (``INCLUDE (id)``, as SQLite's hold its rowid), so a window's measurements are chosen from the
      index alone. Nothing changes on SQLite. (A partial index of each measurement's CPU probe, for ``runs``,
      was tried and left out: it made an import into PostgreSQL a fifth slower.)

Why the project's own migrations rather than an Alembic environment: every store carries its version in
``schema_meta`` since schema 1, migrations run inside the opening's lock and transaction (SQLite's write
lock, PostgreSQL's advisory lock) with the version re-checked there, and nothing but the package is
installed (no script folder, no ``alembic_version`` table to stamp on existing stores). Alembic's
operations do the DDL SQLite cannot do in place (dropping columns, schema 2), imported only when migrating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from alembic.operations import Operations

SCHEMA_VERSION = 6

#: PostgreSQL advisory lock id that serialises schema creation and migration ("dask").
MIGRATION_LOCK_KEY = 0x6461736B

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
    sa.Index("ix_runs_started", "started_at", "run_id"),
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
    sa.Index("ix_measurements_fingerprint_run", "fingerprint", "run_id", "outcome", "repeat", postgresql_include=["id"]),
    sa.Index("ix_measurements_run_outcome", "run_id", "outcome", "fingerprint", "repeat", postgresql_include=["id"]),
)  # fmt: skip
metric_values = sa.Table(
    "metric_values", metadata,
    sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id"), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Float, nullable=False),
    sqlite_with_rowid=False,
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


# -- migrations -------------------------------------------------------------------------

#: The metric columns of schema 1's measurements table.
_V1_METRIC_COLUMNS = (
    "runtime_s", "peak_memory_bytes", "mean_memory_bytes", "peak_worker_memory_bytes",
    "peak_worker_memory_fraction", "spilled_bytes", "spill_count", "task_count",
    "bytes_transferred", "worker_restarts", "cost_usd", "rightsized_cost_usd",
)  # fmt: skip


def _operations(conn: Connection) -> Operations:
    """Alembic's operations on ``conn`` (imported only when migrating: a tenth of a second)."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    return Operations(MigrationContext.configure(conn))


def _to_v2(conn: Connection) -> None:
    """Schema 2: every metric column of ``measurements`` becomes rows of ``metric_values``."""
    ops = _operations(conn)
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


def _to_v5(conn: Connection) -> None:
    """Schema 5: the indexes a window of a long history is read through (`HISTORY_INDEXES`); on SQLite the
    metric values copied into a table kept in their key's order, as a fresh store has it."""
    for index in HISTORY_INDEXES:
        index.create(conn)
    if conn.dialect.name == "sqlite":
        with _operations(conn).batch_alter_table(
            "metric_values", recreate="always", table_kwargs={"sqlite_with_rowid": False}
        ):
            pass


def _to_v6(conn: Connection) -> None:
    """Schema 6: on PostgreSQL, schema 5's measurement indexes made again with the id in them, as a fresh
    store has them; nothing on SQLite."""
    if conn.dialect.name != "postgresql":
        return
    for index in measurements.indexes:
        conn.execute(sa.text(f"DROP INDEX IF EXISTS {index.name}"))
        index.create(conn)


#: The indexes schema 5 added, as a fresh store has them.
HISTORY_INDEXES = tuple(sorted((*runs.indexes, *measurements.indexes), key=lambda index: str(index.name)))

#: version -> function upgrading a store from version - 1, in the caller's transaction.
#: A fresh store is created at `SCHEMA_VERSION` whole.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _to_v2, 3: _to_v3, 4: _to_v4, 5: _to_v5, 6: _to_v6}
