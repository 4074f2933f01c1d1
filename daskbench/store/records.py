"""The records API of a store, a class per noun: runs (with their tags and events), baselines (names
for runs), cases, measurements (with their flags), and rows exchanged with another store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from daskbench.errors import DaskbenchError
from daskbench.model import WRONG_RESULT, Case, Measurement, Run, now_iso, read_outcome
from daskbench.store.engine import first_line, insert_or_ignore, middle_values, refresh_statistics, retry_busy
from daskbench.store.merge import BATCH, MERGERS, rows_of
from daskbench.store.opening import Database
from daskbench.store.rows import (
    MeasuredOutcome,
    case_from_row,
    case_to_row,
    dumps,
    in_chunks,
    known_outcome,
    measurement_from_row,
    measurement_to_row,
    metrics_by_measurement,
    run_from_row,
    run_to_row,
    tag_rows,
    tags_by_run,
    tasks_by_measurement,
    tasks_to_rows,
)
from daskbench.store.schema import (
    baselines,
    cases,
    measurement_flags,
    measurements,
    metadata,
    metric_values,
    run_events,
    run_tags,
    runs,
    task_memory,
)
from daskbench.text import first_few, plural

#: The longest text taken as a run id or prefix (daskbench's own are UUIDs, 36 characters).
MAX_RUN_ID = 200


class RunRecords(Database):
    """Runs: added, tagged (write-once), their status events, finished; read newest first or by id prefix."""

    @retry_busy
    def add_run(self, run: Run) -> None:
        with self._tx(write=True) as conn:
            conn.execute(runs.insert().values(**run_to_row(run)))
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
        wheres = [[]] if run_ids is None else [[run_events.c.run_id.in_(chunk)] for chunk in in_chunks(run_ids)]
        found: dict[str, list[tuple[str, str, str]]] = {}
        with self._tx() as conn:
            for where in wheres:
                for row in conn.execute(query.where(*where)).mappings():
                    found.setdefault(row["run_id"], []).append((row["status"], row["at"], row["detail"]))
        return found

    def last_activity(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The newest measurement time of each run that has one: the heartbeat of a running run."""
        found: dict[str, str] = {}
        with self._tx() as conn:
            for chunk in in_chunks(run_ids):
                query = (
                    sa.select(measurements.c.run_id, sa.func.max(measurements.c.recorded_at))
                    .where(measurements.c.run_id.in_(chunk))
                    .group_by(measurements.c.run_id)
                )
                found.update((run_id, at) for run_id, at in conn.execute(query).all() if at)
        return found

    @retry_busy
    def finish_run(self, run_id: str, ended_at: str | None = None) -> None:
        """Stamp the run's end: the one update the store makes, and only to an unset field."""
        with self._tx(write=True) as conn:
            conn.execute(
                runs.update()
                .where(runs.c.run_id == run_id, runs.c.ended_at.is_(None))
                .values(ended_at=ended_at or now_iso())
            )

    def runs(self, limit: int | None = None) -> list[Run]:
        """Runs, newest first; within a `snapshot`, read once and reused."""
        if self._memo is None:
            return self._read_runs(limit)
        everything = self._memo.get("runs")
        if everything is None:
            everything = self._memo["runs"] = self._read_runs(None)
        return list(everything if limit is None else everything[:limit])

    def _read_runs(self, limit: int | None) -> list[Run]:
        query = sa.select(runs).order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            rows = conn.execute(query).mappings().all()
            tags = tags_by_run(conn, [row["run_id"] for row in rows])
        configs: dict[str, Any] = {}
        return [run_from_row(row, tags.get(row["run_id"], {}), configs) for row in rows]

    def run(self, run_id: str) -> Run:
        """The run with this id or unique id prefix."""
        if len(run_id) > MAX_RUN_ID:
            raise DaskbenchError(
                f"run id {run_id[:12]!r}... is {len(run_id)} characters long; a run id has at most "
                f"{MAX_RUN_ID} (see: daskbench runs)"
            )
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


class BaselineRecords(RunRecords):
    """Baselines: a name for a set of runs; the newest setting of a name wins."""

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


class CaseRecords(Database):
    """Cases: one row per fingerprint, shared by the runs that measured it."""

    @retry_busy
    def add_case(self, case: Case) -> None:
        """Insert the case if its fingerprint is new (cases are shared across runs)."""
        with self._tx(write=True) as conn:
            conn.execute(insert_or_ignore(conn, cases, ("fingerprint",)).values(**case_to_row(case)))

    def cases(self, fingerprints: Iterable[str] | None = None) -> dict[str, Case]:
        query = sa.select(cases)
        if fingerprints is not None:
            query = query.where(cases.c.fingerprint.in_(list(fingerprints)))
        with self._tx() as conn:
            return {row["fingerprint"]: case_from_row(row) for row in conn.execute(query).mappings()}


class MeasurementRecords(Database):
    """Measurements: appended one per transaction with their metric values and task peaks; flagged; read."""

    @retry_busy
    def add_measurement(self, measurement: Measurement) -> None:
        """Append one measurement in its own transaction; a duplicate key is an error."""
        try:
            with self._tx(write=True) as conn:
                inserted = conn.execute(measurements.insert().values(**measurement_to_row(measurement)))
                (measurement_id,) = inserted.inserted_primary_key or (None,)
                values = [
                    {"measurement_id": measurement_id, "name": name, "value": float(value)}
                    for name, value in measurement.metrics.items()
                ]
                if values:
                    conn.execute(metric_values.insert(), values)
                if measurement.tasks:
                    conn.execute(task_memory.insert(), tasks_to_rows(measurement))
        except IntegrityError as exc:
            raise DaskbenchError(
                f"measurement {measurement.fingerprint} repeat {measurement.repeat} of run {measurement.run_id} "
                f"is already stored or its run/case is unknown ({first_line(exc)})"
            ) from None

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
                conn.execute(
                    measurement_flags.insert(),
                    [{"measurement_id": i, "flag": flag, "at": at, "detail": detail} for i in ids],
                )
        return len(ids)

    def measurements(
        self, run_ids: Sequence[str] | None = None, fingerprint: str | None = None, ids: Iterable[int] | None = None
    ) -> list[Measurement]:
        """Measurements in insertion order, optionally of some runs and/or one case, or those with these ``ids``
        (`MeasuredOutcome.id`: a window chosen from `outcomes`, decoded alone)."""
        wheres: list[list[sa.ColumnElement[bool]]]
        if ids is not None:
            wheres = [[measurements.c.id.in_(chunk)] for chunk in in_chunks(sorted(set(ids)))]
        else:
            where: list[sa.ColumnElement[bool]] = []
            if run_ids is not None:
                where.append(measurements.c.run_id.in_(list(run_ids)))
            if fingerprint is not None:
                where.append(measurements.c.fingerprint == fingerprint)
            wheres = [where]
        with self._tx() as conn:
            return [m for where in wheres for m in _read_measurements(conn, where)]

    def outcomes(self, run_ids: Sequence[str], fingerprints: Iterable[str] | None = None) -> list[MeasuredOutcome]:
        """The keys and outcomes (flags applied) of the measurements of these runs (and cases), in insertion
        order: what choosing a window of history reads, through the indexes, without decoding a measurement."""
        cases = None if fingerprints is None else sorted(set(fingerprints))
        found: list[MeasuredOutcome] = []
        with self._tx() as conn:
            for runs_chunk in in_chunks(run_ids):
                for cases_chunk in in_chunks(cases) if cases is not None else [None]:
                    where = [measurements.c.run_id.in_(runs_chunk)]
                    if cases_chunk is not None:
                        where.append(measurements.c.fingerprint.in_(cases_chunk))
                    found += _read_outcomes(conn, where)
        return sorted(found, key=lambda row: row.id)

    def outcome_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """Per run, how many measurements ended in each outcome (as a reader sees it), counted by the database."""
        counts: dict[str, dict[str, int]] = {}
        wrong = sa.select(measurement_flags.c.measurement_id).where(measurement_flags.c.flag == WRONG_RESULT)
        with self._tx() as conn:
            for chunk in in_chunks(run_ids):
                of_runs = measurements.c.run_id.in_(chunk)
                query = sa.select(measurements.c.run_id, measurements.c.outcome, sa.func.count()).where(of_runs)
                for run_id, outcome, n in conn.execute(query.group_by(measurements.c.run_id, measurements.c.outcome)):
                    shown = counts.setdefault(run_id, {})
                    name = known_outcome(outcome)[0]
                    shown[name] = shown.get(name, 0) + n
                flagged = (
                    sa.select(measurements.c.run_id, sa.func.count())
                    .where(of_runs, measurements.c.outcome == "passed", measurements.c.id.in_(wrong))
                    .group_by(measurements.c.run_id)
                )
                for run_id, n in conn.execute(flagged):  # a passed measurement flagged wrong-result reads as one
                    shown = counts[run_id]
                    shown["passed"] -= n
                    shown[WRONG_RESULT] = shown.get(WRONG_RESULT, 0) + n
                    if not shown["passed"]:
                        del shown["passed"]
        return counts

    def metric_medians(self, run_ids: Sequence[str] | None, name: str) -> dict[str, float]:
        """Per run, the median of one metric's non-zero values over its measurements (any outcome), as
        `statistics.median` takes it (even counts: the mean of the middle two), picked by the database:
        the one or two middle values of each run come back (`engine.middle_values`), not every value.
        ``run_ids`` None: every run of the store, in one query (not one per `in_chunks` of their ids)."""
        pairs = (
            sa.select(measurements.c.run_id.label("key"), metric_values.c.value.label("value"))
            .join(metric_values, metric_values.c.measurement_id == measurements.c.id)
            .where(metric_values.c.name == name, metric_values.c.value != 0)
        )
        medians: dict[str, float] = {}
        with self._tx() as conn:
            for chunk in [None] if run_ids is None else in_chunks(run_ids):
                of_runs = [] if chunk is None else [measurements.c.run_id.in_(chunk)]
                query = middle_values(conn, pairs.where(*of_runs))
                medians.update((run_id, (float(low) + float(high)) / 2) for run_id, low, high in conn.execute(query))
        return medians


def _read_measurements(conn: Connection, where: Sequence[sa.ColumnElement[bool]]) -> list[Measurement]:
    """The measurements ``where`` selects, with their metric values, flags and task memory (four queries)."""
    query = sa.select(measurements).where(*where).order_by(measurements.c.id)
    values_query = (
        sa.select(metric_values).join(measurements, measurements.c.id == metric_values.c.measurement_id).where(*where)
    )
    rows = conn.execute(query).mappings().all()
    found = metrics_by_measurement(conn.execute(values_query).mappings())
    flags = _flags(conn, where)
    tasks = tasks_by_measurement(conn, where)
    return [
        measurement_from_row(
            row,
            found.get(row["id"], {}),
            flags.get(row["id"], []),
            tasks.get((row["run_id"], row["fingerprint"], row["repeat"]), ()),
        )
        for row in rows
    ]


def _flags(conn: Connection, where: Sequence[sa.ColumnElement[bool]]) -> dict[int, list[str]]:
    """The flags of the measurements ``where`` selects, oldest first, by measurement id."""
    query = (
        sa.select(measurement_flags.c.measurement_id, measurement_flags.c.flag)
        .join(measurements, measurements.c.id == measurement_flags.c.measurement_id)
        .where(*where)
        .order_by(measurement_flags.c.id)
    )
    flags: dict[int, list[str]] = {}
    for measurement_id, flag in conn.execute(query).all():
        flags.setdefault(measurement_id, []).append(flag)
    return flags


def _read_outcomes(conn: Connection, where: Sequence[sa.ColumnElement[bool]]) -> list[MeasuredOutcome]:
    columns = (measurements.c.id, measurements.c.run_id, measurements.c.fingerprint, measurements.c.repeat)
    flags = _flags(conn, where)
    return [
        MeasuredOutcome(
            i, run_id, fp, repeat, read_outcome(known_outcome(outcome)[0], flags.get(i, ())), tuple(flags.get(i, ()))
        )
        for i, run_id, fp, repeat, outcome in conn.execute(sa.select(*columns, measurements.c.outcome).where(*where))
    ]


class RowExchange(Database):
    """Every row out (`dump_rows`) and rows in (`merge_rows`): what ``daskbench export``/``import`` carry,
    streamed both ways: memory stays the same at any size of store or file."""

    def dump_rows(self, since: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every stored row as (kind, plain row) without local ids, runs started at or after ``since``
        (filtered by the database), read in one transaction a batch at a time as they are consumed.

        Rows are keyed by what identifies them in any store (run id, fingerprint, (run,
        fingerprint, repeat), ...), never by autoincrement ids, so `merge_rows` can merge them.
        """
        with self._tx() as conn:
            yield from rows_of(conn, since)

    @retry_busy
    def merge_rows(self, rows: Callable[[], Iterable[tuple[str, Mapping[str, Any]]]]) -> dict[str, tuple[int, int]]:
        """Insert the rows this store lacks, in one transaction, so rows that do not fit (a measurement of a
        run neither has) change nothing; ``rows()`` gives (kind, row) parents first (a retry calls it again),
        merged a batch of one kind at a time (`merge.BATCH`), then the planner's statistics taken again when
        rows were added (`engine.refresh_statistics`). Returns (added, skipped) per kind."""
        counts: dict[str, tuple[int, int]] = {}
        batch: list[Mapping[str, Any]]

        def flush(conn: Connection, kind: str, batch: list[Mapping[str, Any]]) -> None:
            added = MERGERS[kind](conn, batch)
            before = counts.get(kind, (0, 0))
            counts[kind] = (before[0] + added, before[1] + len(batch) - added)

        try:
            with self._tx(write=True) as conn:
                kind, batch = "", []  # the rows of one kind not merged yet
                for found, row in rows():
                    if batch and (found != kind or len(batch) >= BATCH):
                        flush(conn, kind, batch)
                        batch = []
                    kind = found
                    batch.append(row)
                if batch:
                    flush(conn, kind, batch)
        except IntegrityError as exc:
            raise DaskbenchError(f"rows that do not fit the store ({first_line(exc)}); nothing merged") from None
        if any(added for added, _ in counts.values()):
            with self._tx() as conn:
                refresh_statistics(conn, metadata.sorted_tables)
        return counts
