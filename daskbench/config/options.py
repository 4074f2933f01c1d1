"""The option table and the layering: each `Option` once (flag, env var, pyproject key), and `resolve`,
which layers defaults < ``[tool.daskbench]`` < ``DASKBENCH_*`` < flags into `Settings`."""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daskbench.clusters import forms as cluster_forms
from daskbench.config.dask_config import CONFIG_SEPARATOR, ConfigSweep, parse_config_sweep
from daskbench.config.values import (
    DEFAULT_DB,
    Shortened,
    parse_bool,
    parse_cluster,
    parse_data,
    parse_db,
    parse_endpoint,
    parse_fixture_names,
    parse_floors,
    parse_label,
    parse_memory_list,
    parse_name,
    parse_package_names,
    parse_positive_int,
    parse_saturation_list,
    parse_seconds,
    parse_size,
    parse_text,
    parse_threads_list,
    parse_wait,
    parse_workers_list,
    shard_numbers,
)
from daskbench.errors import DaskbenchError
from daskbench.redact import redact_text
from daskbench.text import WIDTH, first_few, plural, terminal_safe
from daskbench.workloads.base import SIZES

#: Upper bounds on what a typo could ask for; --allow-large lifts them.
LIMITS: dict[str, float] = {"workers": 256, "repeat": 100, "timeout": 24 * 3600, "clusters": 64}
#: ``DASKBENCH_*`` variables read outside `OPTIONS` (alerts, ab, CI scripts, tests); others are typos.
OTHER_ENV = frozenset({
    "DASKBENCH_AB_ROUNDS", "DASKBENCH_ALERT_REPO", "DASKBENCH_BASELINE", "DASKBENCH_CONFIRM_REPEAT",
    "DASKBENCH_GITHUB_API", "DASKBENCH_HISTORY", "DASKBENCH_HISTORY_FILE", "DASKBENCH_HOST_CLASS",
    "DASKBENCH_REPORT", "DASKBENCH_SCREENSHOT_DIR", "DASKBENCH_TEST_SLOWDOWN", "DASKBENCH_ENV_CACHE",
    # ci/nightly's side-by-side confirmation (daskbench confirm) and the interpreter it runs in:
    "DASKBENCH_CONFIRM_ROUNDS", "DASKBENCH_CONFIRM_ARGS", "DASKBENCH_PYTHON",
    # daskbench culprit's budget and mirrors (ci/nightly's hunt too), and what ci/nightly installs first:
    "DASKBENCH_CULPRIT_BUDGET", "DASKBENCH_MIRRORS", "DASKBENCH_NIGHTLY_INSTALL",
    # set by daskbench ab on its lockstep sessions (daskbench.lockstep.turns):
    "DASKBENCH_AB_CONTROL", "DASKBENCH_AB_GROUP", "DASKBENCH_AB_MAX_ROUNDS", "DASKBENCH_AB_PART",
    "DASKBENCH_AB_SIDE", "DASKBENCH_MACHINE_SHARE", "DASKBENCH_CALIBRATION_SIDE", "DASKBENCH_AB_METRIC",
    "DASKBENCH_AB_BOUNDARY", "DASKBENCH_AB_REPEAT_WITHIN", "DASKBENCH_AB_SUITE_ALPHA", "DASKBENCH_AB_FAMILY",
    # how a local cluster's workers start (daskbench.clusters.forkserver):
    "DASKBENCH_WORKER_START",
    # the compute a lockstep measurement of several calls aims at (daskbench.lockstep.loops):
    "DASKBENCH_LOOP_TARGET",
})  # fmt: skip


@dataclass(frozen=True)
class Option:
    """One setting: its flag, env var and pyproject key all derive from ``name``."""

    name: str
    parse: Callable[[str], Any]
    default: str | None
    help: str
    example: str
    is_flag: bool = False
    #: Given several times on the command line (``--config A=1 --config B=2``), joined by ``;``.
    repeatable: bool = False
    #: The ``[tool.daskbench]`` key, when it is not the flag's name (a table: ``floors``).
    pyproject_key: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "DASKBENCH_" + self.name.upper()

    @property
    def key(self) -> str:
        return self.pyproject_key or self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("cluster", parse_cluster, "local", f"cluster: {cluster_forms()}",
           "--cluster tcp://127.0.0.1:8786"),
    Option("cluster_kwargs", parse_text, None,
           "YAML file of keyword arguments for the cluster's class (local: LocalCluster's, e.g. dashboard_address)",
           "--cluster-kwargs cluster.yaml"),
    Option("workers", parse_workers_list, "1,2", "comma list of cluster sizes (workers)", "--workers 1,2"),
    Option("threads_per_worker", parse_threads_list, "1", "comma list of threads per worker",
           "--threads-per-worker 1,2"),
    Option("memory_per_worker", parse_memory_list, "auto",
           "comma list of memory limits per worker (e.g. 2GiB,4GiB); auto splits this machine's memory",
           "--memory-per-worker 2GiB,4GiB"),
    Option("saturation", parse_saturation_list, "1.0,1.1,inf",
           "comma list of distributed.scheduler.worker-saturation values (numbers > 0 or inf)",
           "--saturation 1.0,inf"),
    Option("config", parse_config_sweep, None,
           "sweep a Dask config key: KEY=V1,V2 (repeat the flag for more keys; ';' between keys in the "
           "env var), set on scheduler, workers and client",
           "--config distributed.worker.memory.target=0.6,0.8", repeatable=True),
    Option("size", parse_size, "small", f"workload size: {', '.join(SIZES)}", "--size tiny"),
    Option("repeat", parse_positive_int, "1", "repeats per case (workers restarted before each)", "--repeat 3"),
    Option("timeout", parse_seconds, "900", "seconds one measurement may take before it is recorded as timeout",
           "--timeout 600"),
    Option("db", parse_db, DEFAULT_DB, "results store: SQLAlchemy URL (sqlite:///..., postgresql://...) or a .db file",
           "--db sqlite:///results/daskbench.db"),
    Option("label", parse_label, None, "free-text label of the run (default: the git branch)", "--label nightly"),
    Option("data", parse_data, "results/data", "where workload inputs live: a directory or s3://bucket/prefix",
           "--data s3://bucket/daskbench-data"),
    Option("s3_endpoint", parse_endpoint, None, "S3-compatible endpoint URL for --data s3://",
           "--s3-endpoint http://127.0.0.1:5555"),
    Option("prices", parse_text, None, "JSON price table (shape of daskbench/metrics/prices.json) for cost",
           "--prices my-prices.json"),
    Option("compare", parse_name, None, "after the session, compare this run against this baseline name",
           "--compare main"),
    Option("floor", parse_floors, None,
           "minimum effect that counts, by kind (runtime, memory, cost, work) or metric name, for every case or "
           "one workload's: runtime=1.1,memory=1.15,wordcount:runtime=1.3 or 1.2 for all (default: each metric's "
           "declared floor, 1.1); in pyproject a [tool.daskbench.floors] table",
           "--floor runtime=1.1,wordcount:runtime=1.3", pyproject_key="floors"),
    Option("interleave", parse_bool, "false", "run repeats of different settings alternately (ABAB)",
           "--interleave", is_flag=True),
    Option("allow_large", parse_bool, "false",
           f"accept more than {LIMITS['workers']} workers, {LIMITS['repeat']} repeats, a --timeout over "
           f"{LIMITS['timeout'] // 3600:g} h or a sweep of more than {LIMITS['clusters']:g} cluster settings",
           "--allow-large", is_flag=True),
    Option("restart_workers", parse_bool, "false",
           "on a running scheduler (tcp://...), restart its workers before each measurement (it may be shared)",
           "--restart-workers", is_flag=True),
    Option("wait_idle", parse_wait, "0",
           "on a running scheduler (tcp://...), wait up to this many seconds for other clients' tasks to finish, "
           "before the session and before each measurement (a measurement still busy then is recorded as error)",
           "--wait-idle 300"),
    Option("allow_busy_cluster", parse_bool, "false",
           "on a running scheduler busy with other clients' tasks, measure anyway (each such measurement "
           "is marked shared_cluster_busy; worker-saturation is still only changed while it is idle)",
           "--allow-busy-cluster", is_flag=True),
    Option("evidence", parse_bool, "false",
           "keep Dask's performance report and the task stream of each measurement (a folder per run beside "
           "a SQLite store, else under results/evidence or --evidence-dir)", "--evidence", is_flag=True),
    Option("task_memory", parse_bool, "false",
           "per-task peak memory: poll each worker process's memory every few ms while tasks run and "
           "report, per task prefix, tasks, peak, p95 and input bytes (daskbench show RUN --tasks)",
           "--task-memory", is_flag=True),
    Option("evidence_dir", parse_text, None, "folder for --evidence (default: beside a SQLite store)",
           "--evidence-dir results/evidence"),
    Option("record_versions", parse_package_names, None,
           "comma list of packages whose versions a run records besides dask, numpy and the rest "
           "(so daskbench env and confirm can rebuild them)", "--record-versions standin,dask-ml"),
    Option("client_fixtures", parse_fixture_names, None,
           "comma list of client fixtures a suite written for another harness takes (small_client,client): each "
           "gives a Client on daskbench's cluster, and a test taking one without calling measure is measured whole",
           "--client-fixtures small_client,client"),
    Option("shard", shard_numbers, None,
           "measure only shard K of N of the selected cases (split by the store's history of them, else by count; "
           "every runner with the same store makes the same split): a suite on N runners", "--shard 2/4"),
)  # fmt: skip
OPTIONS_BY_NAME = {option.name: option for option in OPTIONS}


def shown_message(text: str) -> str:
    """A message as daskbench shows it on a terminal, whatever user input it echoes: secrets hidden
    (`redact_text`, the one redaction rule) and control characters escaped (`terminal_safe`)."""
    return terminal_safe(redact_text(str(text)))


@dataclass(frozen=True)
class Settings:
    cluster: str
    cluster_kwargs: str | None
    workers: tuple[int, ...]
    threads_per_worker: tuple[int, ...]
    memory_per_worker: tuple[int | None, ...]
    saturation: tuple[float, ...]
    config: ConfigSweep | None
    size: str
    repeat: int
    timeout: float
    db: str
    label: str | None
    data: str
    s3_endpoint: str | None
    prices: str | None
    compare: str | None
    floor: dict[str, float] | None
    interleave: bool
    allow_large: bool = False
    restart_workers: bool = False
    wait_idle: float = 0.0
    allow_busy_cluster: bool = False
    evidence: bool = False
    evidence_dir: str | None = None
    task_memory: bool = False
    record_versions: tuple[str, ...] | None = None
    client_fixtures: tuple[str, ...] | None = None
    shard: tuple[int, int] | None = None


def add_options(addoption: Callable[..., Any], names: tuple[str, ...] | None = None) -> None:
    """Add the options (all, or those named) to a pytest group or an argparse parser."""
    for option in OPTIONS:
        if names is not None and option.name not in names:
            continue
        kwargs: dict[str, Any] = {"dest": "daskbench_" + option.name, "default": None}
        default = f" (default: {option.default})" if option.default is not None else ""
        help_text = f"{option.help}{default}; env {option.env}"
        if option.is_flag:
            addoption(option.flag, action="store_const", const="true", help=help_text, **kwargs)
        elif option.repeatable:
            addoption(option.flag, action="append", metavar="KEY=V1,V2", help=help_text, **kwargs)
        else:
            addoption(option.flag, metavar=option.name.upper(), help=help_text, **kwargs)


def load_pyproject(start: Path) -> dict[str, Any]:
    """The ``[tool.daskbench]`` table of the nearest pyproject.toml at or above ``start``."""
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text())
            except tomllib.TOMLDecodeError as exc:
                raise DaskbenchError(f"{path} is not valid TOML ({exc}); fix the file") from None
            return dict(data.get("tool", {}).get("daskbench", {}))
    return {}


def resolve(
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    pyproject: Mapping[str, Any] | None = None,
) -> Settings:
    """Layer the sources and parse every value; raises `DaskbenchError` naming the source."""
    env = os.environ if env is None else env
    pyproject = pyproject or {}
    unknown = sorted(set(pyproject) - {option.key for option in OPTIONS})
    if unknown:
        said = _unknown_names("key", unknown, [option.key for option in OPTIONS])
        raise DaskbenchError(f"[tool.daskbench] has {said}; the keys are the flags without --: pytest --help")
    _check_env_names(env)
    values = {option.name: _resolve_one(option, flags, env, pyproject) for option in OPTIONS}
    settings = Settings(**values)
    _check_limits(settings)
    return settings


def resolve_option(
    name: str,
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    pyproject: Mapping[str, Any] | None = None,
) -> Any:
    """One option's value, layered as `resolve` layers them all: for what the plugin must know before
    the session's settings are read (the client fixtures it declares before collection)."""
    return _resolve_one(OPTIONS_BY_NAME[name], flags, os.environ if env is None else env, pyproject or {})


def _check_env_names(env: Mapping[str, str]) -> None:
    """A misspelt ``DASKBENCH_*`` variable is an error, not silently ignored."""
    known = {option.env for option in OPTIONS} | OTHER_ENV
    unknown = sorted(name for name in env if name.startswith("DASKBENCH_") and name not in known)
    if unknown:
        said = _unknown_names("environment variable", unknown, sorted(known))
        raise DaskbenchError(f"{said}; the variables: pytest --help")


def _unknown_names(what: str, unknown: list[str], known: list[str]) -> str:
    """``3 unknown keys: flor and 2 more (did you mean floors?)``: the first, how many more, the name meant."""
    meant = difflib.get_close_matches(unknown[0], known, n=1)
    return f"{plural(len(unknown), f'unknown {what}')}: {first_few(unknown, 1)}" + (
        f" (did you mean {meant[0]}?)" if meant else ""
    )


def _check_limits(settings: Settings) -> None:
    """Upper bounds that catch typos (--repeat 1000000); --allow-large lifts them."""
    if settings.allow_large:
        return
    asked = {"workers": max(settings.workers), "repeat": settings.repeat, "timeout": settings.timeout}
    for name, value in asked.items():
        if value > LIMITS[name]:
            raise DaskbenchError(
                f"--{name} {value:g} is more than {LIMITS[name]:g}; lower it, or pass --allow-large if you mean it"
            )
    clusters = sweep_size(settings)
    if clusters > LIMITS["clusters"]:
        raise DaskbenchError(
            f"the sweep asks for {clusters} cluster settings (saturation x workers x threads x memory x --config), "
            f"more than {LIMITS['clusters']:g}; sweep fewer values, or pass --allow-large if you mean it"
        )


def sweep_size(settings: Settings) -> int:
    """How many cluster settings the sweep axes make (their product)."""
    size = len(settings.saturation) * len(settings.workers)
    size *= len(settings.threads_per_worker) * len(settings.memory_per_worker)
    return size * math.prod(len(values) for _, values in settings.config or ())


def _resolve_one(option: Option, flags: Mapping[str, Any], env: Mapping[str, str], pyproject: Mapping[str, Any]) -> Any:
    raw, source = option.default, "default"
    if option.key in pyproject:
        raw, source = _as_text(pyproject[option.key], option), f"[tool.daskbench] {option.key}"
    if env.get(option.env):
        raw, source = env[option.env], option.env
    if flags.get(option.name) is not None:
        raw, source = _as_text(flags[option.name], option), option.flag
    if raw is None:
        return None
    try:
        return option.parse(raw)
    except ValueError as exc:
        raise DaskbenchError(_error_line(source, exc, option.example)) from None


def _error_line(source: str, exc: ValueError, example: str) -> str:
    """``SOURCE: message (example: ...)``; a `Shortened` message in its most informative form that
    fits in `WIDTH` columns, with the example when that fits too."""
    if not isinstance(exc, Shortened):  # one form: the example shows the fix, whatever the width
        return shown_message(f"{source}: {exc} (example: {example})")
    lines = [line for form in exc.forms for line in (f"{source}: {form} (example: {example})", f"{source}: {form}")]
    return shown_message(next((line for line in lines if len(line) <= WIDTH), lines[-1]))


def _as_text(value: Any, option: Option) -> str:
    if isinstance(value, dict):  # a table: [tool.daskbench.floors] runtime = 1.1 -> "runtime=1.1"
        return ",".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, list):
        return (CONFIG_SEPARATOR if option.repeatable else ",").join(str(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
