"""Records to rows and back: `Run`, `Case`, `Measurement` (its metric values, flags and task
memory) as the store keeps them; every text that may hold a secret is redacted on the way in."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from daskbench import catalog
from daskbench.model import OUTCOMES, Case, ClusterSpec, Measurement, Outcome, Run, TaskMemory, now_iso
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


def run_row(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "label": run.label,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "git_sha": run.git_sha,
        "ci_url": redact_url(run.ci_url) if run.ci_url else None,
        "versions": dumps(run.versions),
        "host": dumps(run.host),
        "dask_config": dumps(redact_value(dict(run.dask_config))),  # the one rule (daskbench.redact), again here
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
    return Run(
        run_id=row["run_id"],
        label=row["label"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        git_sha=row["git_sha"],
        ci_url=row["ci_url"],
        versions=json.loads(row["versions"]),
        host=json.loads(row["host"]),
        dask_config=configs[text],
        tags=dict(tags),
    )


def case_from_row(row: Mapping[Any, Any]) -> Case:
    return Case(
        workload=row["workload"],
        params=json.loads(row["params"]),
        cluster=ClusterSpec.from_dict(json.loads(row["cluster"])),
    )


def measurement_row(m: Measurement) -> dict[str, Any]:
    return dict(
        run_id=m.run_id,
        fingerprint=m.fingerprint,
        repeat=m.repeat,
        outcome=m.outcome,
        message=redact_text(m.message),
        phases=dumps(m.phases),
        timeline=dumps(m.timeline),
        extra=dumps(m.extra),
        recorded_at=m.recorded_at or now_iso(),
    )


def task_rows(m: Measurement) -> list[dict[str, Any]]:
    """The ``task_memory`` rows of one measurement, one per task prefix."""
    key = {"run_id": m.run_id, "fingerprint": m.fingerprint, "repeat": m.repeat}
    return [{**key, **task.to_dict()} for task in m.tasks]


def tasks_by_measurement(
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
    tasks: tuple[TaskMemory, ...] = (),
) -> Measurement:
    outcome, message = known_outcome(row["outcome"], row["message"])  # a newer daskbench's: shown, not a crash
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
