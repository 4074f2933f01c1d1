"""The records as the flat rows users see: what ``daskbench show`` and ``runs`` print (``--format json`` and
their tables) and pytest-benchmark's extra info.

Every field is read from the records' own JSON (`Run.to_json`, `Case.to_json` and `ClusterSpec.identity`,
`Measurement.to_json`, `TaskMemory.to_json`), the one builder the store writes too, so a measurement reads
the same in ``show``, in ``runs`` and in an export line; a row only joins a measurement with its case and
lifts fields to columns of their own (every declared metric, the `FLAT_EXTRA`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from daskbench import catalog
from daskbench.model import Case, Measurement, Run
from daskbench.text import inf_or_number

#: ``Measurement.extra`` keys a `measurement_row` lifts to columns of their own.
FLAT_EXTRA = ("instance", "rightsized_instance", "time_breakdown", "thread_seconds", "evidence")
#: The columns of a case in a `measurement_row`, in order (`case_columns`).
CASE_COLUMNS = (
    "workload", "params", "n_workers", "threads_per_worker", "memory_per_worker", "worker_saturation", "task_slots",
    "config", "backend",
)  # fmt: skip
#: The fields of a `measurement_row` that head each of its `task_rows`.
TASK_HEAD = (
    "fingerprint", "workload", "params", "n_workers", "threads_per_worker", "memory_per_worker", "worker_saturation",
    "config", "repeat", "outcome",
)  # fmt: skip
#: The run tags a `RunSummary` lifts to fields of their own (an A/B run's group, side and round).
SUMMARY_TAGS = ("ab_group", "ab_side", "ab_round")


def case_columns(case: Case | None) -> dict[str, Any]:
    """`CASE_COLUMNS` of a case (None: not in the store, every column empty): the saturation a number or
    ``"inf"``, the task slots a number or ``"unlimited"``, the swept Dask config a mapping."""
    if case is None:
        return {key: {} if key in ("params", "config") else None for key in CASE_COLUMNS}
    record, spec = case.to_json(), case.cluster
    return {
        **{key: record[key] for key in ("workload", "params")},
        **{key: record["cluster"][key] for key in ("n_workers", "threads_per_worker", "memory_per_worker")},
        "worker_saturation": inf_or_number(spec.worker_saturation),
        "task_slots": "unlimited" if spec.task_slots is None else spec.task_slots,
        "config": record["cluster"]["scheduler_config"],
        "backend": record["cluster"]["backend"],
    }


def measurement_row(m: Measurement, case: Case | None) -> dict[str, Any]:
    """A measurement with its case as one flat row: its keys, `case_columns`, repeat, outcome, message, phases,
    its calls (``loops``: 1 in rows recorded before there were several), every declared metric (None when not
    measured; per call), the `FLAT_EXTRA` and when it was recorded."""
    record = m.to_json()
    return {
        **{key: record[key] for key in ("run_id", "fingerprint")},
        **case_columns(case),
        **{key: record[key] for key in ("repeat", "outcome", "message", "phases")},
        "loops": m.loops,
        **{name: record["metrics"].get(name) for name in catalog.names()},
        **{key: record["extra"].get(key) for key in FLAT_EXTRA},
        "recorded_at": record["recorded_at"],
    }


def task_rows(m: Measurement, case: Case | None) -> list[dict[str, Any]]:
    """One row per task prefix of a measurement (`TaskMemory.to_json`), headed by its row's `TASK_HEAD` fields."""
    row = measurement_row(m, case)
    head = {key: row[key] for key in TASK_HEAD}
    return [{**head, **task} for task in m.to_json()["tasks"]]


@dataclass(frozen=True)
class RunSummary:
    """A run as ``runs`` and ``show`` list it: the run, its measurements counted by outcome, its median CPU
    probe (how fast the machine was; None when not measured) and its status (`daskbench.store.runstatus`)."""

    run: Run
    outcomes: Mapping[str, int]
    cpu_probe_s: float | None = None
    status: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        """The run's fields (`Run.to_json` but its Dask config), status, counts, probe and `SUMMARY_TAGS`."""
        run = self.run.to_json()
        return {
            **{key: run[key] for key in ("run_id", "label", "started_at", "ended_at")},
            "status": self.status,
            **{key: run[key] for key in ("git_sha", "ci_url")},
            "measurements": sum(self.outcomes.values()),
            "outcomes": dict(sorted(self.outcomes.items())),
            **{key: run[key] for key in ("versions", "host", "tags")},
            "cpu_probe_s": self.cpu_probe_s,
            **{key: run["tags"].get(key) for key in SUMMARY_TAGS},
        }


def probe_text(seconds: float | None) -> str:
    """A run's median CPU probe (`RunSummary.cpu_probe_s`) in milliseconds, lower on a faster machine; ``-``."""
    return f"{seconds * 1e3:.1f}ms" if seconds else "-"
