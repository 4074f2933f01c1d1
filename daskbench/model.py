"""The records daskbench measures and stores (the verdicts on them: `daskbench.verdicts`).

Every record is a frozen dataclass that checks itself on construction and names the
field that broke a rule, so a bad value is caught where it is made, not three modules
later when it is stored. Metric values are checked against their declarations in
`daskbench.catalog`. A run, a case and a measurement write their JSON themselves (``to_json``, read
back by ``from_json``, as pyperf's records do): the store writes those, so the export carries them, and
`daskbench.flat` shows them (``show``, ``runs``, pytest-benchmark's extra info); nothing else builds
them. Stdlib only (and catalog, text): everything else imports this module.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, get_args

from daskbench import catalog
from daskbench.text import saturation_text


def calls_said(record: Mapping[str, Any]) -> int:
    """The calls of the benchmark a record says one measurement makes (its ``"loops"``: a measurement's
    ``extra``, a lockstep turn's "go" or "done"): a whole number from 1, else 1 (a record from before
    measurements made several: `daskbench.lockstep.loops`)."""
    found = record.get("loops", 1)
    return found if isinstance(found, int) and not isinstance(found, bool) and found >= 1 else 1


#: The tag of a lockstep session's run saying its controller set a case's loops' calibration round aside
#: (`calibration_set_aside`), written by the session (`daskbench.lockstep.turns.run_tags`) and read when a stored
#: group is judged again (`daskbench.judge.compare`); a group without it (older) judges that round as the others.
SET_ASIDE_TAG: Mapping[str, str] = MappingProxyType({"ab_set_aside": "calibration"})


def calibration_set_aside(calls: Sequence[int]) -> bool:
    """Whether a lockstep case's first round, of ``calls[i]`` calls a measurement in its round i (the fewer of its
    two sides'), was the calibration of its loops and is set aside, not judged: one call each side, and its next
    round made more (`daskbench.lockstep.loops`). A single call reads the ratio with the whole noise of one call
    and of a fresh session's first (`measure/first-round`: on four suite checks its log ratio lay on average
    2.3 times as far from the case's median as a later round's), so one such round among ten widens a case's
    interval by about a fifth. A case that cannot loop (its next round one call too) keeps it: a round like the
    others."""
    return len(calls) >= 2 and calls[0] == 1 and calls[1] > 1


def now_iso() -> str:
    """Now, in UTC, as every record's timestamp is written: ``2026-11-23T09:40:16+00:00``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


Outcome = Literal[
    "passed", "failed", "oom", "timeout", "worker-lost", "error", "wrong-result", "interrupted", "cluster-lost"
]
#: The outcome of a measurement cut short by Ctrl-C / SIGTERM: not a result, never judged.
INTERRUPTED: Outcome = "interrupted"
#: The outcome of a measurement during which the client lost its scheduler (killed, unreachable):
#: the cluster failed, not the workload; nothing measured, never judged, and the session stops.
CLUSTER_LOST: Outcome = "cluster-lost"
#: The outcome of a measurement during which a worker died for a reason other than memory (killed,
#: crashed): its runtime, if the tasks were re-run to the end, includes the re-run. Kept out of
#: verdicts unless asked for (``compare --include-worker-loss`` judges it as the workload's failure).
WORKER_LOST: Outcome = "worker-lost"
#: Outcomes that are no result of the workload at all: never judged, whatever is asked.
NOT_RESULTS: tuple[str, ...] = (INTERRUPTED, CLUSTER_LOST)
OUTCOMES: tuple[str, ...] = get_args(Outcome)

_TAG_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

#: The flag `Store.flag_measurements` adds when the benchmark's own check of its result failed;
#: a passed measurement carrying it reads back as outcome ``wrong-result`` (never ok).
WRONG_RESULT = "wrong-result"


def read_outcome(stored: str, flags: Iterable[str]) -> str:
    """The outcome a reader sees: a ``passed`` measurement flagged `WRONG_RESULT` is ``wrong-result``
    (the one place a flag changes what is read: `Measurement` and the store's counts ask it)."""
    return WRONG_RESULT if stored == "passed" and WRONG_RESULT in flags else stored


#: The flag `daskbench baseline accept` adds: history mode judges a case only against the
#: runs from the newest accepted one on (a deliberate change of level, not a regression).
ACCEPTED_STEP = "accepted-step"

#: Run tags holding the pytest selection of a run (``-k``, ``-m``), when one was given.
SELECT_K, SELECT_M = "select_k", "select_m"
#: Run tags of a plain session that measured one shard of its selection (``pytest -m benchmark --shard K/N``):
#: the shard, and the digest of the split (`daskbench.shards.plan.ShardPlan.digest`); the rest is another shard's.
SHARD, SHARD_PLAN = "shard", "shard_plan"

#: Version of the JSON shapes ``show``, ``runs`` and ``compare`` print (``{"version": ..., ...}``).
JSON_VERSION = 1


def require(condition: bool, record: str, name: str, rule: str) -> None:
    """How every record refuses a value: a `ValueError` naming the record, the field and the rule it broke."""
    if not condition:
        raise ValueError(f"{record}.{name} {rule}")


@dataclass(frozen=True)
class ClusterSpec:
    """Where a case runs. Identity fields feed the fingerprint; ``target`` is info only.

    ``scheduler_config`` (named so since 0.1, kept for stable fingerprints) holds the Dask
    config keys a sweep sets for this case (``--config KEY=V1,V2``), on scheduler, workers
    and client alike, as sorted ``(key, value text)`` pairs; `config` reads it as a dict.

    ``backend`` is the kind of cluster (``local``, ``address``, ``coiled``, ``class``);
    ``target`` is what was asked for (an address, a class path, a kwargs file), kept so a
    user can find the cluster again but never part of a case's identity.
    """

    backend: str
    n_workers: int
    threads_per_worker: int
    memory_per_worker: int | None
    worker_saturation: float
    scheduler_config: tuple[tuple[str, str], ...] = ()
    target: str = ""

    def __post_init__(self) -> None:
        require(bool(self.backend), "ClusterSpec", "backend", "must not be empty")
        require(self.n_workers >= 1, "ClusterSpec", "n_workers", f"must be >= 1, got {self.n_workers}")
        require(
            self.threads_per_worker >= 1,
            "ClusterSpec",
            "threads_per_worker",
            f"must be >= 1, got {self.threads_per_worker}",
        )
        require(
            self.memory_per_worker is None or self.memory_per_worker > 0,
            "ClusterSpec",
            "memory_per_worker",
            f"must be > 0 bytes or None, got {self.memory_per_worker}",
        )
        require(
            self.worker_saturation > 0,
            "ClusterSpec",
            "worker_saturation",
            f"must be a number > 0 or inf, got {self.worker_saturation}",
        )

    @property
    def task_slots(self) -> int | None:
        """Tasks the scheduler sends each worker at once: ceil(saturation x threads), at least 1;
        None when queuing is off (``inf``: every ready task goes to a worker)."""
        if math.isinf(self.worker_saturation):
            return None
        return max(math.ceil(self.worker_saturation * self.threads_per_worker), 1)

    @property
    def config(self) -> dict[str, str]:
        """The Dask config keys swept for this case (``--config KEY=V1,V2``), key -> value as given."""
        return dict(self.scheduler_config)

    def identity(self) -> dict[str, Any]:
        """The fields that make two clusters comparable; JSON-safe (inf as ``"inf"``)."""
        return {
            "backend": self.backend,
            "n_workers": self.n_workers,
            "threads_per_worker": self.threads_per_worker,
            "memory_per_worker": self.memory_per_worker,
            "worker_saturation": saturation_text(self.worker_saturation),
            "scheduler_config": dict(self.scheduler_config),
        }

    def to_json(self) -> dict[str, Any]:
        """Every field: `identity` and ``target``."""
        return {**self.identity(), "target": self.target}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterSpec:
        """The spec of `to_json`, or of `identity` (no ``target``: as the store keeps it)."""
        return cls(
            backend=data["backend"],
            n_workers=int(data["n_workers"]),
            threads_per_worker=int(data["threads_per_worker"]),
            memory_per_worker=data.get("memory_per_worker"),
            worker_saturation=float(data["worker_saturation"]),
            scheduler_config=tuple(sorted(dict(data.get("scheduler_config") or {}).items())),
            target=data.get("target", ""),
        )


@dataclass(frozen=True)
class Case:
    """What is measured: a workload, its parameters, and the cluster it runs on.

    The fingerprint hashes identity only (workload, params, cluster identity), so a
    renamed pytest test or an added note never forks a case's history.
    """

    workload: str
    params: Mapping[str, Any]
    cluster: ClusterSpec
    info: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        require(bool(self.workload), "Case", "workload", "must not be empty")
        try:
            json.dumps(dict(self.params), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Case.params must be JSON scalars/lists/dicts: {exc}") from None

    @property
    def fingerprint(self) -> str:
        identity = {"workload": self.workload, "params": dict(self.params), "cluster": self.cluster.identity()}
        blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        """The case as the store keeps it: its fingerprint and identity (the cluster's as `ClusterSpec.identity`);
        ``info`` and the cluster's ``target`` describe one session's case and are not kept."""
        return {
            "fingerprint": self.fingerprint,
            "workload": self.workload,
            "params": dict(self.params),
            "cluster": self.cluster.identity(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        return cls(
            workload=data["workload"], params=dict(data["params"]), cluster=ClusterSpec.from_json(data["cluster"])
        )


#: The run tags of a package installed from git (its PEP 610 record): the commit, and the repository it came
#: from (``git_commit_dask``, ``git_url_dask``; a name's ``-`` written ``_``). Tags, so no schema change.
COMMIT_TAG, COMMIT_URL_TAG = "git_commit_", "git_url_"


@dataclass(frozen=True)
class SourceCommit:
    """A package as a run had it from git: its (normalized) name, the full commit id and the repository URL
    (redacted as recorded; empty when unknown)."""

    package: str
    commit: str
    url: str = ""

    def short(self) -> str:
        return self.commit[:12]

    def tags(self) -> dict[str, str]:
        """The run tags that record it."""
        key = self.package.replace("-", "_").replace(".", "_")
        return {f"{COMMIT_TAG}{key}": self.commit, **({f"{COMMIT_URL_TAG}{key}": self.url} if self.url else {})}


def recorded_commits(tags: Mapping[str, str]) -> dict[str, SourceCommit]:
    """The packages a run had from git, by name, read back from its tags (`SourceCommit.tags`)."""
    found = {}
    for key, commit in tags.items():
        if key.startswith(COMMIT_TAG) and commit:
            name = key.removeprefix(COMMIT_TAG)
            found[name.replace("_", "-")] = SourceCommit(
                name.replace("_", "-"), commit, tags.get(COMMIT_URL_TAG + name, "")
            )
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class Run:
    """One invocation of the suite, with everything needed to explain a difference later.

    ``tags`` are write-once text facts about the run (an A/B group and side, the test
    selection, a host class...), stored one row each so a new tag needs no schema change.
    """

    run_id: str
    label: str
    started_at: str
    ended_at: str | None = None
    git_sha: str | None = None
    ci_url: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    host: Mapping[str, Any] = field(default_factory=dict)
    dask_config: Mapping[str, Any] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(bool(self.run_id), "Run", "run_id", "must not be empty")
        require(bool(self.started_at), "Run", "started_at", "must be an ISO timestamp")
        for key, value in self.tags.items():
            require(bool(_TAG_KEY.match(key)), "Run", "tags", f"key {key!r} must be lower_snake_case (<= 64 chars)")
            require(isinstance(value, str), "Run", "tags", f"value of {key!r} must be text, got {value!r}")

    def to_json(self) -> dict[str, Any]:
        """Every field, the mappings as plain dicts: what the store writes and `daskbench.flat` shows."""
        return {
            "run_id": self.run_id,
            "label": self.label,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "git_sha": self.git_sha,
            "ci_url": self.ci_url,
            **{key: dict(getattr(self, key)) for key in _RUN_MAPPINGS},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        mappings = {key: dict(data.get(key) or {}) for key in _RUN_MAPPINGS}
        return cls(
            run_id=data["run_id"],
            label=data["label"],
            started_at=data["started_at"],
            ended_at=data.get("ended_at"),
            git_sha=data.get("git_sha"),
            ci_url=data.get("ci_url"),
            versions=mappings["versions"],
            host=mappings["host"],
            dask_config=mappings["dask_config"],
            tags=mappings["tags"],
        )


_RUN_MAPPINGS = ("versions", "host", "dask_config", "tags")


@dataclass(frozen=True)
class TaskMemory:
    """Per-task peak memory of one task prefix in one measurement (``--task-memory``).

    Each task's peak is the worker process's memory polled while it ran, minus the level
    at its start. ``tasks`` ran; ``peak_bytes`` is the largest task peak, ``p95_bytes`` the
    95th percentile; ``input_bytes`` the largest input (its dependencies' sizes) of a task.
    ``concurrency`` is the most tasks that ran at once in one worker process while a task
    of this prefix ran: with more than one, the concurrent tasks share the growth, and
    each is charged all of it (an upper bound).
    """

    prefix: str
    tasks: int
    peak_bytes: int
    p95_bytes: int
    input_bytes: int = 0
    concurrency: int = 1

    def __post_init__(self) -> None:
        require(bool(self.prefix), "TaskMemory", "prefix", "must not be empty")
        require(self.tasks >= 1, "TaskMemory", "tasks", f"must be >= 1, got {self.tasks}")
        for name in ("peak_bytes", "p95_bytes", "input_bytes"):
            value = getattr(self, name)
            require(value >= 0, "TaskMemory", name, f"must be >= 0 bytes, got {value}")
        require(self.p95_bytes <= self.peak_bytes, "TaskMemory", "p95_bytes", "must be <= peak_bytes")
        require(self.concurrency >= 1, "TaskMemory", "concurrency", f"must be >= 1, got {self.concurrency}")

    def to_json(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "tasks": self.tasks,
            "peak_bytes": self.peak_bytes,
            "p95_bytes": self.p95_bytes,
            "input_bytes": self.input_bytes,
            "concurrency": self.concurrency,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskMemory:
        """The record from `to_json`'s shape (or a store row with those keys)."""
        return cls(
            prefix=str(data["prefix"]),
            tasks=int(data["tasks"]),
            peak_bytes=int(data["peak_bytes"]),
            p95_bytes=int(data["p95_bytes"]),
            input_bytes=int(data.get("input_bytes") or 0),
            concurrency=int(data.get("concurrency") or 1),
        )


@dataclass(frozen=True)
class Measurement:
    """One repeat of one case in one run.

    ``flags`` are marks added after the fact, append-only (`Store.flag_measurements`),
    e.g. that the benchmark's own check of the result failed: a ``passed`` measurement
    flagged `WRONG_RESULT` reads as outcome ``wrong-result`` (the stored row is untouched).
    ``metrics`` holds the declared metrics (`daskbench.catalog`) that were measured,
    by name; each is also an attribute (``m.runtime_s``), None when not measured.
    ``runtime_s`` is the compute phase only, per call when the window made several (`loops`);
    ``phases`` holds every timed phase (cluster start, restart, data preparation, graph build,
    compute, ...) in seconds, as the window took them (all its calls).
    Memory figures are process memory (RSS) in bytes; ``timeline`` is the cluster-wide
    sum over workers as ``(seconds since compute start, bytes)`` pairs, downsampled.
    """

    run_id: str
    fingerprint: str
    repeat: int
    outcome: Outcome
    message: str = ""
    metrics: Mapping[str, float | int] = field(default_factory=dict)
    phases: Mapping[str, float] = field(default_factory=dict)
    timeline: tuple[tuple[float, int], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: str = ""
    flags: tuple[str, ...] = ()
    #: Per-task peak memory per task prefix (``--task-memory``); empty when not measured.
    tasks: tuple[TaskMemory, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", read_outcome(self.outcome, self.flags))  # every reader of outcome/ok
        require(self.outcome in OUTCOMES, "Measurement", "outcome", f"must be one of {OUTCOMES}, got {self.outcome!r}")
        require(self.repeat >= 0, "Measurement", "repeat", f"must be >= 0, got {self.repeat}")
        for name, value in self.metrics.items():
            require(catalog.is_declared(name), "Measurement", name, "is not a declared metric (daskbench.catalog)")
            problem = catalog.get(name).check(value)
            require(problem is None, "Measurement", name, problem or "")
        require(
            self.outcome not in ("passed", WRONG_RESULT) or "runtime_s" in self.metrics,
            "Measurement",
            "runtime_s",
            "is required when outcome is 'passed'",
        )

    @classmethod
    def of(cls, **fields: Any) -> Measurement:
        """A measurement from flat keywords: declared metric names (None for not measured) go to ``metrics``."""
        metrics = {name: fields.pop(name) for name in list(fields) if catalog.is_declared(name)}
        given = {**dict(fields.pop("metrics", {})), **{k: v for k, v in metrics.items() if v is not None}}
        return cls(**fields, metrics=given)

    def __getattr__(self, name: str) -> Any:
        """A declared metric by name (``m.peak_memory_bytes``); None when it was not measured."""
        if name.startswith("__") or not catalog.is_declared(name):
            raise AttributeError(f"Measurement has no attribute or metric {name!r}")
        return self.metrics.get(name)

    @property
    def ok(self) -> bool:
        return self.outcome == "passed"

    @property
    def loops(self) -> int:
        """The calls of the benchmark its timed window made (``extra["loops"]``; 1 in rows recorded before
        measurements made several: `daskbench.lockstep.loops`). Its runtime and the metrics summed over the
        window are per call (`daskbench.catalog.Metric.per_call`)."""
        return calls_said(self.extra)

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON values (the timeline as ``[seconds, bytes]`` pairs, each task `TaskMemory.to_json`):
        what the store writes (and so the export) and `daskbench.flat` shows."""
        return {
            "run_id": self.run_id,
            "fingerprint": self.fingerprint,
            "repeat": self.repeat,
            "outcome": self.outcome,
            "message": self.message,
            "metrics": dict(self.metrics),
            "phases": dict(self.phases),
            "timeline": [[seconds, size] for seconds, size in self.timeline],
            "extra": dict(self.extra),
            "recorded_at": self.recorded_at,
            "flags": list(self.flags),
            "tasks": [task.to_json() for task in self.tasks],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measurement:
        """The record of `to_json`'s shape; a flag given twice is kept once."""
        return cls(
            run_id=data["run_id"],
            fingerprint=data["fingerprint"],
            repeat=data["repeat"],
            outcome=data["outcome"],
            message=data.get("message", ""),
            metrics=dict(data.get("metrics") or {}),
            phases=dict(data.get("phases") or {}),
            extra=dict(data.get("extra") or {}),
            timeline=tuple((float(seconds), int(size)) for seconds, size in data.get("timeline") or ()),
            recorded_at=data.get("recorded_at", ""),
            flags=tuple(dict.fromkeys(data.get("flags") or ())),
            tasks=tuple(TaskMemory.from_json(task) for task in data.get("tasks") or ()),
        )


def group_measurements(
    measurements: Iterable[Measurement], by: Literal["fingerprint", "run_id"]
) -> dict[str, list[Measurement]]:
    """Measurements grouped by case fingerprint or by run, each group in the given order."""
    grouped: dict[str, list[Measurement]] = {}
    for m in measurements:
        grouped.setdefault(getattr(m, by), []).append(m)
    return grouped
