"""Settings, layered: defaults < ``[tool.daskbench]`` in pyproject.toml < ``DASKBENCH_*`` env < flags.

Each option is defined once here and added both to pytest (`plugin.py`) and to the CLI
(`cli.py`). Values are parsed at this boundary; a bad one raises `DaskbenchError` with a
one-line message naming where the value came from and what is accepted, before any
cluster starts.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from daskbench import catalog
from daskbench.clusters import forms as cluster_forms
from daskbench.errors import DaskbenchError
from daskbench.redact import masked_choices, redact_text, redact_url, redact_value
from daskbench.text import WIDTH, first_few, plural, terminal_safe
from daskbench.workloads.base import SIZES

DEFAULT_DB = "sqlite:///results/daskbench.db"

#: Upper bounds on what a typo could ask for; --allow-large lifts them.
LIMITS: dict[str, float] = {"workers": 256, "repeat": 100, "timeout": 24 * 3600, "clusters": 64}
#: --memory-per-worker above this is refused (it would make costs meaningless).
MAX_MEMORY_PER_WORKER = 16 * 2**40
#: --memory-per-worker below this is refused: an idle Dask worker process takes ~150-200 MiB, so with
#: less it is restarted for ever and the cluster never starts (the session would wait out its start limit).
MIN_MEMORY_PER_WORKER = 256 * 2**20
#: --timeout below this cannot measure anything.
MIN_TIMEOUT = 1.0
#: ``DASKBENCH_*`` variables read outside `OPTIONS` (alerts, ab, CI scripts, tests); others are typos.
OTHER_ENV = frozenset({
    "DASKBENCH_AB_ROUNDS", "DASKBENCH_ALERT_REPO", "DASKBENCH_BASELINE", "DASKBENCH_CONFIRM_REPEAT",
    "DASKBENCH_GITHUB_API", "DASKBENCH_HISTORY", "DASKBENCH_HISTORY_FILE", "DASKBENCH_HOST_CLASS",
    "DASKBENCH_REPORT", "DASKBENCH_SCREENSHOT_DIR", "DASKBENCH_TEST_SLOWDOWN", "DASKBENCH_ENV_CACHE",
    # ci/nightly's side-by-side confirmation (daskbench confirm) and the interpreter it runs in:
    "DASKBENCH_CONFIRM_ROUNDS", "DASKBENCH_CONFIRM_ARGS", "DASKBENCH_PYTHON",
    # set by daskbench ab on its lockstep sessions (daskbench.ab.turns):
    "DASKBENCH_AB_CONTROL", "DASKBENCH_AB_GROUP", "DASKBENCH_AB_MAX_ROUNDS", "DASKBENCH_AB_PART",
    "DASKBENCH_AB_SIDE", "DASKBENCH_MACHINE_SHARE", "DASKBENCH_CALIBRATION_SIDE",
})  # fmt: skip

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip


def parse_saturation_list(text: str) -> tuple[float, ...]:
    """``"1.0,1.1,inf"`` -> (1.0, 1.1, inf); each value a number > 0 or ``inf``."""
    values = []
    for item in _split(text):
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a number > 0 or 'inf'") from None
        if math.isnan(value) or value <= 0:
            raise ValueError(f"{item!r} is not a number > 0 or 'inf'")
        if math.isinf(value) and item.strip().lower() not in ("inf", "+inf", "infinity"):
            raise ValueError(f"{item!r} is too large for a number; write inf for no limit")
        values.append(value)
    return tuple(dict.fromkeys(values))


def parse_workers_list(text: str) -> tuple[int, ...]:
    """``"1,2"`` -> (1, 2); each a whole number of workers >= 1."""
    return tuple(dict.fromkeys(_positive_int(item, "worker count") for item in _split(text)))


def parse_positive_int(text: str) -> int:
    return _positive_int(text.strip(), "value")


def parse_floors(text: str) -> dict[str, float]:
    """``"runtime=1.1,memory=15%,wordcount:runtime=1.3"`` or ``"1.2"`` -> floors keyed by metric
    name, or by ``workload:metric`` for one workload's cases (which wins over the plain one)."""
    floors: dict[str, float] = {}
    for item in _split(text):
        name, _, value = item.rpartition("=")
        workload, colon, target = name.rpartition(":")
        if colon and not workload.strip():
            raise ValueError(f"{item!r} names no workload before ':'; e.g. wordcount:runtime=1.3")
        metrics = _floor_targets(target)
        if not metrics:
            raise ValueError(
                f"unknown metric {target!r}; use a kind ({', '.join(catalog.KINDS)}) or a metric name "
                f"({', '.join(catalog.compared())}), optionally after a workload: wordcount:runtime=1.3"
            )
        prefix = f"{workload.strip()}:" if colon else ""
        floors.update(dict.fromkeys((prefix + metric for metric in metrics), _floor_value(value)))
    return floors


def _floor_targets(name: str) -> tuple[str, ...]:
    """The metrics a floor item names: all (no name), one metric, or every compared metric of a kind."""
    key = name.strip().replace("-", "_")
    if not key:
        return catalog.names()
    return (key,) if catalog.is_declared(key) else catalog.of_kind(key)


def _floor_value(text: str) -> float:
    raw = text.strip()
    try:
        value = 1.0 + float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not 1.0 <= value < 100.0:
        raise ValueError(f"{text!r} is not a ratio >= 1 like 1.1 or a percentage like 10% (runtime=1.1)")
    return value


def parse_threads_list(text: str) -> tuple[int, ...]:
    """``"1,2"`` -> (1, 2): threads per worker, each a whole number >= 1."""
    return tuple(dict.fromkeys(_positive_int(item, "threads per worker") for item in _split(text)))


def parse_memory_list(text: str) -> tuple[int | None, ...]:
    """``"2GiB,4GiB"`` -> bytes each, at least `MIN_MEMORY_PER_WORKER`; ``auto`` (None) splits this machine's memory."""
    items = _split(text)
    values = [parse_bytes(item) for item in items]
    for item, value in zip(items, values, strict=True):
        if value is not None and value < MIN_MEMORY_PER_WORKER:
            least = f"{item!r} is less than {MIN_MEMORY_PER_WORKER // 2**20} MiB, too little for a Dask worker to start"
            raise Shortened(f"{least} (it takes ~200 MiB idle); give e.g. 2GiB or auto", f"{least}; give e.g. 2GiB")
    return tuple(dict.fromkeys(values))


#: Dask config keys that have their own option (``--config`` would fight it).
_OWN_OPTION = {"distributed.scheduler.worker-saturation": "--saturation"}
#: Separator of several ``--config`` sweeps in one text (env var, pyproject list joined).
CONFIG_SEPARATOR = ";"

ConfigSweep = tuple[tuple[str, tuple[str, ...]], ...]


def parse_config_sweep(text: str) -> ConfigSweep:
    """``"distributed.worker.memory.target=0.6,0.8;array.chunk-size=64MiB"`` -> ((key, values), ...).

    Each key must exist in Dask's config (dask's and distributed's defaults), checked now,
    before any cluster starts; values are kept as text and read as YAML when applied.
    """
    sweeps: dict[str, tuple[str, ...]] = {}
    for item in (part.strip() for part in text.split(CONFIG_SEPARATOR)):
        if not item:
            continue
        key, equals, values = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE[,VALUE...]")
        _check_config_key(key)
        if key in sweeps:
            raise ValueError(f"{key} is given twice; give its values once: {key}=V1,V2")
        sweeps[key] = tuple(dict.fromkeys(_split(values)))
        _check_config_values(key, sweeps[key])
    return tuple(sweeps.items())


def _check_config_values(key: str, values: tuple[str, ...]) -> None:
    """Each value, read as YAML as it will be applied, is one Dask's config schema allows for ``key``
    (type, enum, bounds): a wrong one would only fail when the workers start."""
    import yaml

    schema = _schema_of(key)
    for text in values if schema else ():
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        if not _fits(schema, value):
            shown = redact_value(text, key)
            raise Shortened(
                f"{shown!r} is not a value {key} takes (its default: {redact_value(_default_text(key), key)})"
            )


def _default_text(key: str) -> str:
    import dask

    return json.dumps(dask.config.get(key), default=str)


@functools.cache
def _config_schema() -> dict[str, Any]:
    """The JSON schemas dask and distributed ship for their config, as one."""
    import importlib.resources

    import yaml

    found: dict[str, Any] = {}
    for package, name in (("dask", "dask-schema.yaml"), ("distributed", "distributed-schema.yaml")):
        found.update(yaml.safe_load(importlib.resources.files(package).joinpath(name).read_text())["properties"])
    return {"properties": found}


def _schema_of(key: str) -> dict[str, Any]:
    """The schema of ``key`` (``{}`` where dask and distributed declare none)."""
    node = _config_schema()
    for part in key.split("."):
        children = node.get("properties", {})
        node = children.get(part) or children.get(part.replace("_", "-")) or {}
    return node


def _fits(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` passes the parts of a JSON schema Dask's use: oneOf/anyOf, enum, type, bounds."""
    branches = schema.get("oneOf") or schema.get("anyOf")
    if branches:
        return any(_fits(branch, value) for branch in branches)
    if "enum" in schema and not any(_same(value, item) for item in schema["enum"]):
        return False
    types = schema.get("type", [])
    if types and not any(_is_type(value, name) for name in ([types] if isinstance(types, str) else types)):
        return False
    return not isinstance(value, int | float) or isinstance(value, bool) or _in_bounds(schema, value)


def _same(value: Any, item: Any) -> bool:
    return bool(value == item) and isinstance(value, bool) == isinstance(item, bool)


def _is_type(value: Any, name: str) -> bool:
    """A JSON schema type test; a number passes for ``string`` too (Dask reads a timeout of 30 as 30 s)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    kinds = {"number": number, "integer": number and float(value).is_integer(), "boolean": isinstance(value, bool),
             "string": isinstance(value, str) or number, "null": value is None, "array": isinstance(value, list),
             "object": isinstance(value, dict)}  # fmt: skip
    return kinds.get(name, True)


def _in_bounds(schema: dict[str, Any], value: float) -> bool:
    low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    above, below = schema.get("exclusiveMinimum", -math.inf), schema.get("exclusiveMaximum", math.inf)
    return bool(low <= value <= high and above < value < below)


def _check_config_key(key: str) -> None:
    """A key Dask knows (its defaults, after importing distributed); else a one-line error."""
    if key in _OWN_OPTION:
        raise ValueError(f"{key} has its own option; use {_OWN_OPTION[key]}")
    import dask
    import distributed  # noqa: F401  (loads distributed's defaults into dask.config)

    missing = object()
    if dask.config.get(key, default=missing) is missing:
        parent = key.rsplit(".", 1)[0]
        near = dask.config.get(parent, default=None)
        raise Shortened(*_unknown_key_forms(key, parent, sorted(near) if isinstance(near, dict) else []))


class Shortened(ValueError):
    """A bad value's message in several forms, the most informative first: the error line shows
    the first that fits in `WIDTH` columns after where the value came from."""

    def __init__(self, *forms: str) -> None:
        super().__init__(forms[0])
        self.forms = forms


def _unknown_key_forms(key: str, parent: str, siblings: list[str]) -> list[str]:
    """What to say of an unknown config key: the key meant (a near spelling), else the first few
    keys of its section and how many more, and the command that lists them all."""
    head, where = f"{key} is not a Dask config key", f"(dask config get {parent})" if siblings else "(dask config list)"
    meant = difflib.get_close_matches(key.rsplit(".", 1)[-1], siblings, n=1)
    forms = [f"{head}; did you mean {parent}.{meant[0]}?", f"{head}; did you mean {meant[0]}?"] if meant else []
    forms += [f"{head}; {parent} has {first_few(siblings, shown)} {where}" for shown in (3, 2, 1) if siblings]
    return [*forms, f"{head} {where}", head]


def parse_size(text: str) -> str:
    size = text.strip().lower()
    if size not in SIZES:
        raise ValueError(f"{text!r} is not a size; choose one of {', '.join(SIZES)}")
    return size


def parse_bytes(text: str) -> int | None:
    """``"4GiB"``, ``"512 MB"``, ``"1e9"`` -> bytes; ``"auto"`` -> None (machine split)."""
    value = text.strip().lower().replace(" ", "")
    if value in ("", "auto"):
        return None
    match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[0-9]+)?)([a-z]*)", value)
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"{text!r} is not a memory size like 4GiB, 512MB or auto")
    amount = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(amount) or amount > MAX_MEMORY_PER_WORKER:
        raise ValueError(f"{text!r} is more than {MAX_MEMORY_PER_WORKER // 2**40} TiB per worker")
    number = int(amount)
    if number <= 0:
        raise ValueError(f"{text!r} must be more than 0 bytes")
    return number


def parse_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < MIN_TIMEOUT:
        raise ValueError(f"{text!r} must be a number of seconds >= {MIN_TIMEOUT:g}")
    return value


def parse_wait(text: str) -> float:
    """Seconds to wait: a number >= 0 (0: do not wait)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} must be a number of seconds >= 0")
    return value


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not true/false")


def parse_text(text: str) -> str:
    return text.strip()


def parse_package_names(text: str) -> tuple[str, ...]:
    """``standin,dask-ml``: package names whose versions a run records besides the fixed list."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    for name in names:
        if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", name):
            raise ValueError(f"{name!r} is not a package name")
    return names


def parse_name(text: str) -> str:
    """A baseline name or run id: at most 200 characters (run ids are 36), shown cut short when longer."""
    value = text.strip()
    if len(value) > 200:
        raise Shortened(f"{value[:12]!r}... is {len(value)} characters long; names and run ids have at most 200")
    return value


def parse_label(text: str) -> str:
    """A run label: printable text on one line, not blank, at most 200 characters."""
    value = text.strip()
    if not value:
        raise ValueError("a label cannot be blank; give some text or leave it out (default: the git branch)")
    if len(value) > 200 or any(not ch.isprintable() for ch in value):
        raise ValueError("a label is one line of printable text of at most 200 characters")
    return value


def parse_endpoint(text: str) -> str:
    """An S3 endpoint URL: http(s)://host[:port], with no credentials in it."""
    value = text.strip()
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError(f"{redact_url(value)!r} is not a URL like http://127.0.0.1:5555") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{redact_url(value)!r} is not a URL like http://127.0.0.1:5555")
    if parts.username or parts.password:
        raise ValueError("put credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, not in the endpoint URL")
    if parts.query or parts.fragment:  # a presigned ?X-Amz-Signature=... is a credential: never echoed
        raise ValueError(f"{redact_url(value)!r} has a query; an S3 endpoint is http(s)://host[:port] alone")
    del port
    return value


def parse_data(text: str) -> str:
    """A data location: a directory, or ``s3://bucket/prefix`` with a valid bucket name."""
    value = text.strip()
    if not value:
        raise ValueError("give a directory or s3://bucket/prefix")
    if value.startswith("s3://"):
        bucket = value.removeprefix("s3://").split("/", 1)[0]
        if "@" in bucket:  # s3://key:secret@bucket: never echoed
            raise ValueError(
                "put S3 credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, not in --data"
            )
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise ValueError(f"{bucket!r} is not an S3 bucket name (3-63 of a-z, 0-9, '.', '-')")
        return value
    if "://" in value and not value.startswith("file://"):
        raise ValueError(f"{value.split('://', 1)[0]}:// is not supported; use a local directory or s3://bucket/prefix")
    return value


def parse_cluster(text: str) -> str:
    """A ``--cluster`` value one of the backends matches; a scheduler address needs a valid host and port."""
    value = text.strip()
    if "://" in value:
        try:
            parts = urlsplit(value)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a scheduler address like tcp://host:8786 ({exc})") from None
        if not parts.hostname or (port is None and parts.scheme in ("tcp", "tls")):
            raise ValueError(f"{value!r} is not a scheduler address like tcp://host:8786")
    return value


#: Endings of a bare path taken as a SQLite file (``--db results/bench.db``).
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _known_dialect(url: str) -> str:
    """``url`` if SQLAlchemy can parse it and knows its dialect, and a SQLite one names a file
    (checked here, before any cluster); the URL is shown with its password masked."""
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = sa.engine.make_url(url)
    except (ArgumentError, ValueError):
        shown = redact_text(url)
        raise Shortened(f"{shown!r} is not a database URL like postgresql://user@host:5432/db",
                        f"{shown!r} is not a database URL") from None  # fmt: skip
    try:
        parsed.get_dialect()
    except (ArgumentError, NoSuchModuleError, ModuleNotFoundError):
        scheme = url.split("://", 1)[0]
        raise ValueError(f"{scheme!r} is not a database SQLAlchemy knows (sqlite, postgresql, ...)") from None
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_url(url, parsed.host, parsed.database or "", parsed.query.get("mode"))
    return url


def _check_sqlite_url(url: str, host: str | None, database: str, mode: Any) -> None:
    """A SQLite URL names a file: not a host (two slashes), not an in-memory database (lost at exit)."""
    if host:
        raise Shortened(f"{url!r} names a host, not a file; a SQLite file takes three slashes: sqlite:///{host}",
                        f"{url!r} names no file; use three slashes: sqlite:///{host}")  # fmt: skip
    if database in ("", ":memory:") or database.startswith("file::memory:") or mode == "memory":
        raise Shortened(*(f"{start} loses every result when the session ends; give a file: {DEFAULT_DB}"
                          for start in (f"{url} is in memory and", "an in-memory store")))  # fmt: skip


def parse_db(text: str) -> str:
    """A database URL as given, or a bare ``*.db`` path as ``sqlite:///<absolute path>``.

    A directory or other bare text is refused with the URL to type instead, so a mistyped
    ``--db`` never becomes a store in an unexpected place, and never fails mid-session.
    """
    value = text.strip()
    if "://" in value:
        return _known_dialect(value)
    path = Path(value).expanduser()
    example = f"sqlite:///{(path / 'daskbench.db') if path.is_dir() else path.with_suffix('.db')}"
    if path.is_dir():
        raise ValueError(f"{value!r} is a directory; name a file in it: {example}")
    scheme, colon, rest = value.partition(":")
    if colon and scheme.split("+")[0].lower() in ("sqlite", "postgresql", "postgres"):
        if "@" in value:  # user:password@host without the //: nothing after the scheme is shown
            raise Shortened(f"'{scheme}:...' lacks the // of a URL; write {scheme}://user@host/db")
        meant = f"sqlite:///{rest}" if scheme.lower().startswith("sqlite") else f"{scheme}://{rest.lstrip('/')}"
        raise Shortened(f"{value!r} lacks the // of a URL; did you mean {meant}?")
    if path.suffix.lower() in _SQLITE_SUFFIXES:
        return f"sqlite:///{path.resolve()}"
    raise ValueError(f"{value!r} is neither a database URL nor a .db file path")


def _split(text: str) -> list[str]:
    items = [item.strip() for item in str(text).split(",")]
    if not items or any(not item for item in items):
        raise ValueError(f"{text!r} is not a comma-separated list")
    return items


def _positive_int(item: str, what: str) -> int:
    try:
        value = int(item)
    except ValueError:
        raise ValueError(f"{item!r} is not a whole number >= 1") from None
    if value < 1:
        raise ValueError(f"{what} {item!r} must be >= 1")
    return value


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
           "YAML file of keyword arguments for the coiled or module:ClassName cluster",
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
)  # fmt: skip
OPTIONS_BY_NAME = {option.name: option for option in OPTIONS}


def shown_message(text: str) -> str:
    """A message as daskbench shows it on a terminal, whatever user input it echoes: secrets hidden
    (`redact_text`, the one redaction rule) and control characters escaped (`terminal_safe`)."""
    return terminal_safe(redact_text(str(text)))


def masked_sweep(sweep: ConfigSweep | None) -> ConfigSweep:
    """The ``--config`` sweep as it may be shown, stored and put in test ids: a credential-looking
    key's values as ``***`` or ``***1``, ``***2``... (`redact.masked_choices`)."""
    return tuple((key, masked_choices(key, values)) for key, values in sweep or ())


def unmasked(sweep: ConfigSweep | None, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """A spec's ``(key, value)`` pairs as masked by `masked_sweep`, with each masked value replaced by
    the value it stands for: what the cluster is started with, never stored or shown."""
    real = {(key, shown): value for key, values in sweep or () for shown, value in
            zip(masked_choices(key, values), values, strict=True)}  # fmt: skip
    return tuple((key, real.get((key, shown), shown)) for key, shown in pairs)


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
