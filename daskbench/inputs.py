"""Where workload inputs live, checked before any cluster starts, and their preparation.

``--data`` is a local directory (created if missing) or ``s3://bucket/prefix`` on AWS or
any S3-compatible store (``--s3-endpoint``). `resolve_data_location` turns it into a
`DataLocation` or raises a one-line `DaskbenchError` that names the location and the
fix. Credentials come from the usual places (environment, ``~/.aws``, instance
roles) and never enter ``storage_options``, messages or the results store: only the
endpoint travels with the task graph, so workers reach the same store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from daskbench.errors import DaskbenchError
from daskbench.redact import redact_text, redact_url
from daskbench.text import one_line
from daskbench.workloads import datasets
from daskbench.workloads.datasets import Prepared

__all__ = ["DataLocation", "Prepared", "input_params", "prepare", "resolve_data_location"]


@dataclass(frozen=True)
class DataLocation:
    root: str  # absolute local path or s3://bucket/prefix (no trailing slash)
    kind: Literal["local", "s3"]
    storage_options: dict[str, Any]  # for fsspec/dask readers; {} for local


def resolve_data_location(data: str, s3_endpoint: str | None) -> DataLocation:
    """Parse and check ``data``; raises `DaskbenchError` when it cannot be used."""
    text = data.strip()
    if text.startswith("s3://"):
        return _s3_location(text, s3_endpoint)
    if "://" in text and not text.startswith("file://"):
        scheme = text.split("://", 1)[0]
        raise DaskbenchError(
            f"--data {text}: {scheme}:// is not supported; use a local directory or s3://bucket/prefix"
        )
    return _local_location(text.removeprefix("file://"))


def prepare(location: DataLocation, workload: str, size: str, seed: int = 0) -> Prepared:
    """The workload's inputs at ``location``, written unless a complete copy is there."""
    try:
        return datasets.prepare(location.root, workload, size, seed, location.storage_options)
    except Exception as exc:
        if not _is_storage_error(exc):
            raise
        reason = one_line(exc, limit=200)
        raise DaskbenchError(
            f"could not write {workload} inputs to {location.root} ({reason}); check free space and write access"
        ) from None


def input_params(location: DataLocation, prepared: Prepared, *folders: str) -> dict[str, Any]:
    """The ``input`` and ``input_bytes`` params of a case (bytes of ``folders``, or all)."""
    nbytes = prepared.bytes_under(*folders) if folders else prepared.input_bytes
    return {"input": location.kind, "input_bytes": nbytes}


# -- local --------------------------------------------------------------------------------


def _local_location(text: str) -> DataLocation:
    path = os.path.abspath(os.path.expanduser(text or "."))
    if os.path.exists(path) and not os.path.isdir(path):
        raise DaskbenchError(f"--data {path} is a file, not a directory; pass a directory (it is created if missing)")
    if not os.path.exists(path):
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise DaskbenchError(
                f"--data {path} cannot be created ({exc.strerror}); pass a directory you can write"
            ) from None
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise DaskbenchError(
            f"--data {path} is not readable and writable by this user; fix its permissions or pass another directory"
        )
    return DataLocation(root=path.rstrip("/") or "/", kind="local", storage_options={})


# -- S3 -----------------------------------------------------------------------------------


def _s3_location(text: str, endpoint: str | None) -> DataLocation:
    bucket, _, prefix = text.removeprefix("s3://").strip("/").partition("/")
    if not bucket:
        raise DaskbenchError(f"--data {text} names no bucket; use s3://bucket/prefix")
    root = f"s3://{bucket}/{prefix}".rstrip("/")
    options: dict[str, Any] = {"endpoint_url": endpoint} if endpoint else {}
    _check_bucket(bucket, root, options)
    return DataLocation(root=root, kind="s3", storage_options=options)


def _check_bucket(bucket: str, root: str, options: dict[str, Any]) -> None:
    """HEAD the bucket once, with short timeouts, and translate what goes wrong."""
    import botocore.exceptions as boto
    import s3fs

    fs = s3fs.S3FileSystem(
        **options,
        skip_instance_cache=True,
        config_kwargs={"connect_timeout": 5, "read_timeout": 10, "retries": {"max_attempts": 2}},
    )
    where = f" at {redact_url(options['endpoint_url'])}" if options else ""
    try:
        fs.call_s3("head_bucket", Bucket=bucket)
    except boto.NoCredentialsError:
        raise DaskbenchError(
            f"--data {root}: no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
        ) from None
    except (boto.EndpointConnectionError, boto.ConnectTimeoutError, boto.ReadTimeoutError):
        raise DaskbenchError(
            f"--data {root}: cannot reach the S3 endpoint{where}; check --s3-endpoint / DASKBENCH_S3_ENDPOINT"
        ) from None
    except FileNotFoundError:
        raise DaskbenchError(
            f"--data {root}: bucket {bucket!r} does not exist{where}; create it or fix the name"
        ) from None
    except PermissionError:
        raise DaskbenchError(
            f"--data {root}: access to bucket {bucket!r} denied{where}; check the credentials' permissions"
        ) from None
    except (OSError, boto.BotoCoreError) as exc:  # botocore's own (a bad endpoint): one line, never a traceback
        raise DaskbenchError(
            f"--data {root}: cannot use bucket {bucket!r}{where} ({redact_text(one_line(exc, limit=200))})"
        ) from None


def _is_storage_error(exc: Exception) -> bool:
    if isinstance(exc, OSError):
        return True
    try:
        import botocore.exceptions as boto
    except ImportError:  # pragma: no cover - s3fs brings botocore
        return False
    return isinstance(exc, boto.BotoCoreError | boto.ClientError)
