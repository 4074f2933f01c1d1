"""Export and import at the row level, in bounded memory: every row of some runs keyed by ids every store shares,
read a batch at a time (`rows_of`), and how each kind of row is merged a batch at a time into a store that may
have it (`MERGERS`: each looks up only its batch's keys, so a batch costs the same at any size of store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from daskbench.store.rows import MEASUREMENT_KEY, in_chunks
from daskbench.store.schema import (
    baselines,
    cases,
    measurement_flags,
    measurements,
    metric_values,
    run_events,
    run_tags,
    runs,
    task_memory,
)

#: Rows read, or merged, at a time: a few megabytes of measurements.
BATCH = 1000
_FLAG_COLUMNS = ("flag", "at", "detail")


def rows_of(conn: Connection, since: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, row) of every run started at or after ``since`` (all without it), then its tags, events, cases,
    measurements (with metric values), flags and task memory, then the baselines set since; without local ids.
    Filtered by the database and read a batch at a time, so memory stays the same at any size."""
    chosen = [runs.c.started_at >= since] if since is not None else []
    run_ids = sa.select(runs.c.run_id).where(*chosen).scalar_subquery()
    of_runs = [measurements.c.run_id.in_(run_ids)] if chosen else []
    yield from _kind("run", conn, sa.select(runs).where(*chosen).order_by(runs.c.started_at, runs.c.run_id))
    tags = sa.select(run_tags).order_by(run_tags.c.run_id, run_tags.c.key)
    yield from _kind("tag", conn, tags.where(run_tags.c.run_id.in_(run_ids)) if chosen else tags)
    events = sa.select(run_events).order_by(run_events.c.id)
    yield from _kind("event", conn, events.where(run_events.c.run_id.in_(run_ids)) if chosen else events)
    measured = sa.select(measurements.c.fingerprint).where(*of_runs).distinct().scalar_subquery()
    yield from _kind(
        "case", conn, sa.select(cases).where(cases.c.fingerprint.in_(measured)).order_by(cases.c.fingerprint)
    )
    yield from _measurement_rows(conn, of_runs)
    keys = (measurements.c.run_id, measurements.c.fingerprint, measurements.c.repeat)
    flags = (
        sa.select(*keys, *(measurement_flags.c[name] for name in _FLAG_COLUMNS))
        .join(measurements, measurements.c.id == measurement_flags.c.measurement_id)
        .where(*of_runs)
        .order_by(measurement_flags.c.id)
    )
    yield from _kind("flag", conn, flags)
    peaks = sa.select(task_memory).order_by(task_memory.c.id)
    yield from _kind("task_peak", conn, peaks.where(task_memory.c.run_id.in_(run_ids)) if chosen else peaks)
    since_set = [baselines.c.created_at >= since] if since is not None else []
    yield from _kind("baseline", conn, sa.select(baselines).where(*since_set).order_by(baselines.c.id))


def _kind(kind: str, conn: Connection, query: sa.Select[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of ``query`` as (kind, row without its local id), fetched a batch at a time."""
    for row in conn.execute(query.execution_options(yield_per=BATCH)).mappings():
        yield kind, {key: value for key, value in row.items() if key != "id"}


def _measurement_rows(
    conn: Connection, where: Sequence[sa.ColumnElement[bool]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Measurements in insertion order, a page of `BATCH` at a time (by id), each with its metric values."""
    last = 0
    while True:
        page = (
            conn.execute(
                sa.select(measurements).where(*where, measurements.c.id > last).order_by(measurements.c.id).limit(BATCH)
            )
            .mappings()
            .all()
        )
        if not page:
            return
        last = page[-1]["id"]
        values: dict[int, dict[str, float]] = {}
        query = sa.select(metric_values).where(metric_values.c.measurement_id.in_([row["id"] for row in page]))
        for value in conn.execute(query).mappings():
            values.setdefault(value["measurement_id"], {})[value["name"]] = value["value"]
        for row in page:
            plain = {key: value for key, value in row.items() if key != "id"}
            yield "measurement", {**plain, "metrics": values.get(row["id"], {})}


# -- merging, a batch at a time ---------------------------------------------------------------------

Merger = Callable[[Connection, Sequence[Mapping[str, Any]]], int]


def _stored(conn: Connection, table: sa.Table, key: tuple[str, ...], rows: Sequence[Mapping[str, Any]]) -> set[Any]:
    """The ``key`` tuples already stored among those that share a first key column with ``rows``."""
    found: set[Any] = set()
    for chunk in in_chunks(sorted({row[key[0]] for row in rows})):
        query = sa.select(*(table.c[name] for name in key)).where(table.c[key[0]].in_(chunk))
        found.update(tuple(row) for row in conn.execute(query))
    return found


def _new_rows(
    conn: Connection, table: sa.Table, key: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The rows whose ``key`` is neither stored nor earlier in ``rows``."""
    have = _stored(conn, table, key, rows)
    new = []
    for row in rows:
        ident = tuple(row[name] for name in key)
        if ident not in have:
            have.add(ident)
            new.append(row)
    return new


def _merge_plain(table: sa.Table, key: tuple[str, ...]) -> Merger:
    """A merger inserting rows whose ``key`` columns are not stored yet (nor earlier in the batch)."""

    def merge(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        new = _new_rows(conn, table, key, rows)
        if new:
            conn.execute(table.insert(), [_columns(table, row) for row in new])
        return len(new)

    return merge


def _columns(table: sa.Table, row: Mapping[str, Any]) -> dict[str, Any]:
    return {column.name: row.get(column.name) for column in table.columns if column.name != "id"}


def _merge_runs(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """New runs are inserted; a stored run exported before it ended gets its ``ended_at`` from a
    later export (the one update the store makes, and only to an unset field)."""
    open_runs: set[str] = set()
    for chunk in in_chunks(sorted({row["run_id"] for row in rows})):
        query = sa.select(runs.c.run_id).where(runs.c.run_id.in_(chunk), runs.c.ended_at.is_(None))
        open_runs.update(conn.execute(query).scalars())
    ended = 0
    for row in rows:
        if row["run_id"] in open_runs and row.get("ended_at"):
            conn.execute(
                runs.update()
                .where(runs.c.run_id == row["run_id"], runs.c.ended_at.is_(None))
                .values(ended_at=row["ended_at"])
            )
            open_runs.discard(row["run_id"])
            ended += 1
    return _merge_plain(runs, ("run_id",))(conn, rows) + ended


def _merge_measurements(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """New measurements inserted together (their new ids returned in order), then all their metric values."""
    new = _new_rows(conn, measurements, MEASUREMENT_KEY, rows)
    if not new:
        return 0
    insert = measurements.insert().returning(measurements.c.id, sort_by_parameter_order=True)
    ids = conn.execute(insert, [_columns(measurements, row) for row in new]).scalars().all()
    values = [
        {"measurement_id": measurement_id, "name": name, "value": float(value)}
        for measurement_id, row in zip(ids, new, strict=True)
        for name, value in row.get("metrics", {}).items()
    ]
    if values:
        _insert_many(conn, metric_values, values)
    return len(new)


def _insert_many(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert many rows of ``table``: on PostgreSQL with COPY inside the transaction (psycopg's executemany
    sends one statement a row: 1.5 million metric values of a year of 300 cases took most of an import);
    elsewhere with the driver's executemany."""
    if conn.dialect.name != "postgresql":
        conn.execute(table.insert(), rows)
        return
    columns = list(rows[0])
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN"  # names of this module's tables
    driver: Any = conn.connection.driver_connection  # the same transaction's psycopg connection
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(tuple(row[name] for name in columns))


def _merge_flags(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """Flags of stored measurements (named by their key), unless one with the same content is stored."""
    ids: dict[tuple[Any, ...], int] = {}
    for chunk in in_chunks(sorted({row["run_id"] for row in rows})):
        query = sa.select(measurements.c.id, *(measurements.c[name] for name in MEASUREMENT_KEY))
        ids.update({tuple(key): i for i, *key in conn.execute(query.where(measurements.c.run_id.in_(chunk)))})
    have: set[tuple[Any, ...]] = set()
    for chunk in in_chunks(sorted({i for row in rows if (i := ids.get(_key(row))) is not None})):
        query = sa.select(measurement_flags.c.measurement_id, *(measurement_flags.c[name] for name in _FLAG_COLUMNS))
        have.update(tuple(row) for row in conn.execute(query.where(measurement_flags.c.measurement_id.in_(chunk))))
    new: list[dict[str, Any]] = []
    for row in rows:
        measurement_id = ids.get(_key(row))
        ident = (measurement_id, *(row[name] for name in _FLAG_COLUMNS))
        if measurement_id is not None and ident not in have:
            have.add(ident)
            new.append(dict(zip(("measurement_id", *_FLAG_COLUMNS), ident, strict=True)))
    if new:
        conn.execute(measurement_flags.insert(), new)
    return len(new)


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name in MEASUREMENT_KEY)


def _merge_baselines(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """Baselines keyed by (name, created_at, run ids); inserted oldest first so the newest still wins."""
    return _merge_plain(baselines, ("name", "created_at", "run_ids"))(conn, sorted(rows, key=lambda r: r["created_at"]))


#: How `Store.merge_rows` merges a batch of each kind of `Store.dump_rows` row, keyed on ids every store shares.
MERGERS: dict[str, Merger] = {
    "run": _merge_runs,
    "tag": _merge_plain(run_tags, ("run_id", "key")),
    "event": _merge_plain(run_events, ("run_id", "status", "at", "detail")),
    "case": _merge_plain(cases, ("fingerprint",)),
    "measurement": _merge_measurements,
    "flag": _merge_flags,
    "task_peak": _merge_plain(task_memory, ("run_id", "fingerprint", "repeat", "prefix")),
    "baseline": _merge_baselines,
}
