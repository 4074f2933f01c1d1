"""The value parsers of the options: each takes the text of a flag, env var or pyproject key and
returns the value, or raises `ValueError` (a `Shortened` one in several forms) saying what is accepted.

The ``--db`` URL is checked here too (SQLAlchemy knows its dialect; a SQLite one names a file), before
any cluster starts; the ``--config`` sweep has its own module, `dask_config`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from daskbench import catalog
from daskbench.redact import redact_text, redact_url
from daskbench.workloads.base import SIZES

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

DEFAULT_DB = "sqlite:///results/daskbench.db"

#: --memory-per-worker above this is refused (it would make costs meaningless).
MAX_MEMORY_PER_WORKER = 16 * 2**40
#: --memory-per-worker below this is refused: an idle Dask worker process takes ~150-200 MiB, so with
#: less it is restarted for ever and the cluster never starts (the session would wait out its start limit).
MIN_MEMORY_PER_WORKER = 256 * 2**20
#: --timeout below this cannot measure anything.
MIN_TIMEOUT = 1.0

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_saturation_list(text: str) -> tuple[float, ...]:
    """``"1.0,1.1,inf"`` -> (1.0, 1.1, inf); each value a number > 0 or ``inf``."""
    values = []
    for item in comma_list(text):
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
    return tuple(dict.fromkeys(_positive_int(item, "worker count") for item in comma_list(text)))


#: The most shards a suite is split into (GitHub Actions runs at most 256 jobs of a matrix).
MAX_SHARDS = 256
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def shard_numbers(text: str) -> tuple[int, int]:
    """``K/N``: shard K of N, as (K, N), 1 <= K <= N <= `MAX_SHARDS`."""
    found = _SHARD.match(text)
    number, count = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if not found or not 1 <= number <= count <= MAX_SHARDS:
        raise ValueError(f"{text!r:.40}: give K/N, shard K of N (1 <= K <= N <= {MAX_SHARDS})")
    return number, count


def parse_positive_int(text: str) -> int:
    return _positive_int(text.strip(), "value")


def parse_floors(text: str) -> dict[str, float]:
    """``"runtime=1.1,memory=15%,wordcount:runtime=1.3"`` or ``"1.2"`` -> floors keyed by metric
    name, or by ``workload:metric`` for one workload's cases (which wins over the plain one)."""
    floors: dict[str, float] = {}
    for item in comma_list(text):
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
    return tuple(dict.fromkeys(_positive_int(item, "threads per worker") for item in comma_list(text)))


def parse_memory_list(text: str) -> tuple[int | None, ...]:
    """``"2GiB,4GiB"`` -> bytes each, at least `MIN_MEMORY_PER_WORKER`; ``auto`` (None) splits this machine's memory."""
    items = comma_list(text)
    values = [parse_bytes(item) for item in items]
    for item, value in zip(items, values, strict=True):
        if value is not None and value < MIN_MEMORY_PER_WORKER:
            least = f"{item!r} is less than {MIN_MEMORY_PER_WORKER // 2**20} MiB, too little for a Dask worker to start"
            raise Shortened(f"{least} (it takes ~200 MiB idle); give e.g. 2GiB or auto", f"{least}; give e.g. 2GiB")
    return tuple(dict.fromkeys(values))


class Shortened(ValueError):
    """A bad value's message in several forms, the most informative first: the error line shows
    the first that fits in `WIDTH` columns after where the value came from."""

    def __init__(self, *forms: str) -> None:
        super().__init__(forms[0])
        self.forms = forms


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


#: Fixtures daskbench declares itself (and pytest's ``request``): no client fixture may take their names.
OWN_FIXTURES = frozenset({"measure", "size", "data_location", "benchmark", "request"})


def parse_fixture_names(text: str) -> tuple[str, ...]:
    """``small_client,client``: the client fixtures of a suite written for another harness (Python names,
    none of daskbench's own fixtures)."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a fixture name (a Python name, as the tests' parameter is spelt)")
        if name in OWN_FIXTURES or name.startswith("daskbench_"):
            raise ValueError(f"{name!r} is a fixture daskbench declares itself; name only the suite's client fixtures")
    return names


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
        raise Shortened(
            f"{shown!r} is not a database URL like postgresql://user@host:5432/db", f"{shown!r} is not a database URL"
        ) from None
    try:
        parsed.get_dialect()
    except (ArgumentError, NoSuchModuleError, ModuleNotFoundError):
        scheme = url.split("://", 1)[0]
        raise ValueError(f"{scheme!r} is not a database SQLAlchemy knows (sqlite, postgresql, ...)") from None
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_url(url, parsed)
    return url


def _check_sqlite_url(url: str, parsed: URL) -> None:
    """A SQLite URL names a file: not a host (two slashes), not an in-memory database (lost at exit)."""
    from daskbench.store import sqlite_file  # here: the store and SQLAlchemy load only for --db

    host = parsed.host
    if host:
        raise Shortened(
            f"{url!r} names a host, not a file; a SQLite file takes three slashes: sqlite:///{host}",
            f"{url!r} names no file; use three slashes: sqlite:///{host}",
        )
    if sqlite_file(parsed) is None:
        raise Shortened(
            *(
                f"{start} loses every result when the session ends; give a file: {DEFAULT_DB}"
                for start in (f"{url} is in memory and", "an in-memory store")
            )
        )


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


def comma_list(text: str) -> list[str]:
    """``"a, b"`` -> ["a", "b"]; an empty item (``"a,,b"``, ``""``) is an error."""
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
