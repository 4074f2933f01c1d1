"""Export and import at the row level: every row of some runs keyed by ids every store shares
(`children_of`), and how each kind of row is merged into a store that may have it (`MERGERS`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

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


def children_of(conn: Connection, run_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Tags, events, cases, measurements (with metric values), flags and task memory of these runs."""
    found: dict[str, list[dict[str, Any]]] = {
        "tag": [],
        "event": [],
        "case": [],
        "measurement": [],
        "flag": [],
        "task_peak": [],
    }
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
            found["flag"].append(
                {
                    "run_id": run_id,
                    "fingerprint": fingerprint,
                    "repeat": repeat,
                    "flag": row["flag"],
                    "at": row["at"],
                    "detail": row["detail"],
                }
            )
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
            conn.execute(
                runs.update()
                .where(runs.c.run_id == row["run_id"], runs.c.ended_at.is_(None))
                .values(ended_at=row["ended_at"])
            )
            ended += 1
    return _merge_plain(runs, ("run_id",))(conn, rows) + ended


def _merge_measurements(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    have = {
        tuple(row)
        for row in conn.execute(sa.select(measurements.c.run_id, measurements.c.fingerprint, measurements.c.repeat))
    }
    added = 0
    for row in rows:
        ident = (row["run_id"], row["fingerprint"], row["repeat"])
        if ident in have:
            continue
        have.add(ident)
        plain = {column.name: row[column.name] for column in measurements.columns if column.name != "id"}
        (measurement_id,) = conn.execute(measurements.insert().values(**plain)).inserted_primary_key or (None,)
        metric_rows = [
            {"measurement_id": measurement_id, "name": name, "value": float(value)}
            for name, value in row.get("metrics", {}).items()
        ]
        if metric_rows:
            conn.execute(metric_values.insert(), metric_rows)
        added += 1
    return added


def _merge_flags(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    ids = {
        (r, f, n): i
        for i, r, f, n in conn.execute(
            sa.select(measurements.c.id, measurements.c.run_id, measurements.c.fingerprint, measurements.c.repeat)
        )
    }
    have = {
        tuple(row)
        for row in conn.execute(
            sa.select(
                measurement_flags.c.measurement_id,
                measurement_flags.c.flag,
                measurement_flags.c.at,
                measurement_flags.c.detail,
            )
        )
    }
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
MERGERS: dict[str, Callable[[Connection, Sequence[Mapping[str, Any]]], int]] = {
    "run": _merge_runs,
    "tag": _merge_plain(run_tags, ("run_id", "key")),
    "event": _merge_plain(run_events, ("run_id", "status", "at", "detail")),
    "case": _merge_plain(cases, ("fingerprint",)),
    "measurement": _merge_measurements,
    "flag": _merge_flags,
    "task_peak": _merge_plain(task_memory, ("run_id", "fingerprint", "repeat", "prefix")),
    "baseline": _merge_baselines,
}
