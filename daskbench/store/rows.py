"""Records to rows and back: `Run`, `Case`, `Measurement` (its metric values, flags and task
memory) as the store keeps them; every text that may hold a secret is redacted on the way in.

A row holds what the record's own JSON says (``to_json``; read back with ``from_json``), its mappings as
JSON text: the store, and so the export, keeps what ``show`` and ``runs`` show (`daskbench.flat`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from daskbench import catalog
from daskbench.model import OUTCOMES, Case, Measurement, Outcome, Run, now_iso
from daskbench.redact import redact_text, redact_url, redact_value
from daskbench.store.schema import measurements, run_tags, task_memory
from daskbench.text import json_safe

#: The most values one ``IN (...)`` list holds: short for every backend's limit on bound parameters.
IN_CHUNK = 500

_T = TypeVar("_T")


def in_chunks(values: Iterable[_T], size: int = IN_CHUNK) -> Iterator[list[_T]]:
    """``values`` in lists of at most ``size``, for ``IN (...)`` clauses."""
    batch: list[_T] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(frozen=True)
class MeasuredOutcome:
    """What choosing a window of history reads of a measurement: its keys and outcome as a reader sees it
    (flags applied, `read_outcome`), without its metrics, phases, timeline or extra."""

    id: int
    run_id: str
    fingerprint: str
    repeat: int
    outcome: str
    flags: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.outcome == "passed"


def known_outcome(outcome: str, message: str = "") -> tuple[Outcome, str]:
    """An outcome this version knows, and the message; one written by a newer daskbench reads as ``error``."""
    if outcome in OUTCOMES:
        return cast(Outcome, outcome), message
    return "error", f"unknown outcome {outcome!r} (written by a newer daskbench): {message}"


def dumps(value: Any) -> str:
    return json.dumps(json_safe(value), sort_keys=True, allow_nan=False)


def run_to_row(run: Run) -> dict[str, Any]:
    """The ``runs`` row of a run (its tags are `tag_rows`)."""
    record = run.to_json()
    return {
        **{key: record[key] for key in ("run_id", "label", "started_at", "ended_at", "git_sha")},
        "ci_url": redact_url(record["ci_url"]) if record["ci_url"] else None,
        "versions": dumps(record["versions"]),
        "host": dumps(record["host"]),
        "dask_config": dumps(redact_value(record["dask_config"])),  # the one rule (daskbench.redact), again here
    }


def tag_rows(run_id: str, tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"run_id": run_id, "key": key, "value": value} for key, value in tags.items()]


def tags_by_run(conn: Connection, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for chunk in in_chunks(run_ids):
        query = sa.select(run_tags).where(run_tags.c.run_id.in_(chunk))
        for row in conn.execute(query).mappings():
            found.setdefault(row["run_id"], {})[row["key"]] = row["value"]
    return found


def run_from_row(row: Mapping[Any, Any], tags: Mapping[str, str], configs: dict[str, Any] | None = None) -> Run:
    """The `Run` of a row; ``configs`` (stored text -> redacted value), shared by the rows of one read, redacts
    each distinct Dask config once: a year of nightly runs mostly shares one."""
    text = row["dask_config"]
    configs = {} if configs is None else configs
    if text not in configs:
        configs[text] = redact_value(json.loads(text))  # also stores written before the rule
    record = {key: row[key] for key in ("run_id", "label", "started_at", "ended_at", "git_sha", "ci_url")}
    mappings = {key: json.loads(row[key]) for key in ("versions", "host")}
    return Run.from_json({**record, **mappings, "dask_config": configs[text], "tags": tags})


def case_to_row(case: Case) -> dict[str, Any]:
    """The ``cases`` row of a case, first seen now."""
    record = case.to_json()
    text = {key: dumps(record[key]) for key in ("params", "cluster")}
    return {"fingerprint": record["fingerprint"], "workload": record["workload"], **text, "first_seen_at": now_iso()}


def case_from_row(row: Mapping[Any, Any]) -> Case:
    return Case.from_json({"workload": row["workload"], **{key: json.loads(row[key]) for key in ("params", "cluster")}})


#: How a measurement is named in any store (its task memory rows, and an export's flags, name it so).
MEASUREMENT_KEY = ("run_id", "fingerprint", "repeat")


def measurement_to_row(m: Measurement) -> dict[str, Any]:
    """The ``measurements`` row of a measurement (its metric values, flags and tasks have tables of their own)."""
    record = m.to_json()
    return {
        **{key: record[key] for key in (*MEASUREMENT_KEY, "outcome")},
        "message": redact_text(record["message"]),
        **{key: dumps(record[key]) for key in ("phases", "timeline", "extra")},
        "recorded_at": record["recorded_at"] or now_iso(),
    }


def tasks_to_rows(m: Measurement) -> list[dict[str, Any]]:
    """The ``task_memory`` rows of one measurement, one per task prefix."""
    record = m.to_json()
    key = {name: record[name] for name in MEASUREMENT_KEY}
    return [{**key, **task} for task in record["tasks"]]


def tasks_by_measurement(
    conn: Connection, where: Sequence[sa.ColumnElement[bool]]
) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """Task memory rows (`TaskMemory.to_json`'s keys) per (run id, fingerprint, repeat) of the measurements
    ``where`` selects."""
    same = sa.and_(*(measurements.c[name] == task_memory.c[name] for name in ("run_id", "fingerprint", "repeat")))
    query = sa.select(task_memory).join(measurements, same).where(*where).order_by(task_memory.c.id)
    found: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in conn.execute(query).mappings():
        found.setdefault((row["run_id"], row["fingerprint"], row["repeat"]), []).append(dict(row))
    return found


def metrics_by_measurement(rows: Iterable[Mapping[Any, Any]]) -> dict[int, dict[str, float | int]]:
    """Metric values per measurement id; names this version does not declare are left in the store."""
    found: dict[int, dict[str, float | int]] = {}
    integer: dict[str, bool | None] = {}  # per name: rounded, kept as float, or None (undeclared)
    for row in rows:
        name = row["name"]
        if name not in integer:
            integer[name] = catalog.get(name).integer if catalog.is_declared(name) else None
        kind = integer[name]
        if kind is not None:
            value = row["value"]
            found.setdefault(row["measurement_id"], {})[name] = round(value) if kind else float(value)
    return found


def measurement_from_row(
    row: Mapping[Any, Any],
    values: Mapping[str, float | int],
    flags: Sequence[str],
    tasks: Sequence[Mapping[str, Any]] = (),
) -> Measurement:
    """The measurement of a row, its metric values, flags and task memory rows (`tasks_by_measurement`)."""
    outcome, message = known_outcome(row["outcome"], row["message"])  # a newer daskbench's: shown, not a crash
    record = {key: row[key] for key in (*MEASUREMENT_KEY, "recorded_at")}
    text = {key: json.loads(row[key]) for key in ("phases", "timeline", "extra")}
    return Measurement.from_json(
        {**record, **text, "outcome": outcome, "message": message, "metrics": values, "flags": flags, "tasks": tasks}
    )
