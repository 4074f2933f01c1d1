"""Prepared inputs: written once per (workload, size, seed), content-addressed, verified.

A dataset lives in ``<root>/<workload>-<size>-<seed>-<hash>/`` where the hash covers
the generator's parameters, so changing a size table or a file format writes a new
dataset instead of silently reusing an old one. ``_manifest.json`` is written last and
lists every file with its byte size; a dataset without one, or whose files are missing
or of another size (an interrupted or damaged preparation), is deleted and written
again. Everything goes through fsspec, so the same code fills a local directory or S3.

Preparation holds a lock per dataset (`dataset_lock`: an exclusive ``flock`` on a file in
the temporary directory, keyed by the dataset; on S3 also an exclusively created lock
object beside the dataset, for other machines), and re-checks
for a complete copy once it holds it, so two processes preparing the same dataset never
delete each other's files: the second waits and reuses what the first wrote.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fsspec
from fsspec import AbstractFileSystem

from daskbench.workloads.base import Inputs
from daskbench.workloads.registry import WORKLOADS

MANIFEST = "_manifest.json"

#: Workload name -> how its inputs are made, for every registered workload that reads prepared data.
GENERATORS: dict[str, Inputs] = {name: w.inputs for name, w in WORKLOADS.items() if w.inputs is not None}


@dataclass(frozen=True)
class Prepared:
    """A dataset ready to read: where it is, its files and whether it was reused."""

    url: str  # the dataset directory, local path or s3://...
    storage_options: dict[str, Any]
    files: dict[str, int]  # path relative to ``url`` -> bytes
    reused: bool
    seconds: float = 0.0  # spent writing (0 when reused)
    name: str = field(default="", compare=False)

    @property
    def input_bytes(self) -> int:
        return sum(self.files.values())

    def bytes_under(self, *folders: str) -> int:
        """Total bytes of the files in these top-level folders (e.g. one side of a join)."""
        return sum(n for path, n in self.files.items() if path.split("/", 1)[0] in folders)


def dataset_name(workload: str, size: str, seed: int) -> str:
    """``<workload>-<size>-<seed>-<10 hex digits of the generator parameters>``."""
    params = _generator(workload).params(size)
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    return f"{workload}-{size}-{seed}-{digest}"


def prepare(
    root: str, workload: str, size: str, seed: int = 0, storage_options: dict[str, Any] | None = None
) -> Prepared:
    """The dataset under ``root``, written now unless a complete copy is already there."""
    storage_options = dict(storage_options or {})
    fs, base = fsspec.core.url_to_fs(root, **storage_options)
    name = dataset_name(workload, size, seed)
    path, url = f"{base.rstrip('/')}/{name}", f"{root.rstrip('/')}/{name}"
    files = verified_files(fs, path)
    if files is not None:
        return Prepared(url, storage_options, files, reused=True, name=name)
    with dataset_lock(fs, path, url):
        files = verified_files(fs, path)  # another process may have finished it while we waited
        if files is not None:
            return Prepared(url, storage_options, files, reused=True, name=name)
        start = time.perf_counter()
        files = _write(fs, path, workload, size, seed)
    return Prepared(url, storage_options, files, reused=False, seconds=time.perf_counter() - start, name=name)


#: A lock object older than this (a preparer that died) is taken over.
STALE_LOCK_SECONDS = 3600.0


@contextmanager
def dataset_lock(fs: AbstractFileSystem, path: str, url: str) -> Iterator[None]:
    """Hold the one writer's lock of the dataset at ``path`` (blocks while another process has it).

    On this machine the lock is a file in the temporary directory keyed by the dataset's URL
    (or absolute path), so the processes of one machine queue without touching the data root.
    On a remote store (S3) other machines may prepare the same dataset too, so the holder
    also creates ``<dataset>.lock`` beside it with an exclusive create (S3's conditional
    write, If-None-Match): a second machine waits until the dataset is complete or the lock
    is gone (or older than `STALE_LOCK_SECONDS`: its writer died), and then re-checks.
    """
    key = url if not _is_local(fs) else os.path.abspath(path)
    folder = os.path.join(tempfile.gettempdir(), "daskbench-locks")
    os.makedirs(folder, exist_ok=True)
    lock_path = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:20] + ".lock")
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if _is_local(fs):
                yield
            else:
                with _object_lock(fs, path):
                    yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _object_lock(fs: AbstractFileSystem, path: str, poll: float = 1.0) -> Iterator[None]:
    """``<path>.lock`` created exclusively on the remote store while held; waits (see `dataset_lock`)."""
    lock = f"{path}.lock"
    while not _create_exclusive(fs, lock):
        fs.invalidate_cache()
        if verified_files(fs, path) is not None:  # the other machine finished it: the caller reuses it
            yield
            return
        if _age_seconds(fs, lock) > STALE_LOCK_SECONDS:
            with contextlib.suppress(FileNotFoundError):
                fs.rm(lock)
            continue
        time.sleep(poll)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            fs.rm(lock)


def _create_exclusive(fs: AbstractFileSystem, lock: str) -> bool:
    """Create ``lock`` unless it exists (S3 If-None-Match); whether this call created it."""
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}
    try:
        with fs.open(lock, "xb") as handle:
            handle.write(json.dumps(holder).encode())
    except FileExistsError:
        return False
    return True


def _age_seconds(fs: AbstractFileSystem, lock: str) -> float:
    """How long ago the lock object was written (0 if it just vanished)."""
    try:
        modified = fs.modified(lock)
    except (FileNotFoundError, NotImplementedError):
        return 0.0
    return max(0.0, time.time() - modified.timestamp())


def _is_local(fs: AbstractFileSystem) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


def verified_files(fs: AbstractFileSystem, path: str) -> dict[str, int] | None:
    """The manifest's files if every one is present with its recorded size, else None."""
    try:
        with fs.open(f"{path}/{MANIFEST}", "r") as handle:
            recorded = {str(k): int(v) for k, v in json.load(handle)["files"].items()}
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return recorded if _listing(fs, path) == recorded else None


def _write(fs: AbstractFileSystem, path: str, workload: str, size: str, seed: int) -> dict[str, int]:
    if fs.exists(path):
        fs.rm(path, recursive=True)
    fs.makedirs(path, exist_ok=True)
    generator = _generator(workload)
    generator.write(fs, path, size, seed)
    files = _listing(fs, path)
    manifest = {"workload": workload, "size": size, "seed": seed, "params": generator.params(size), "files": files}
    with fs.open(f"{path}/{MANIFEST}", "w") as handle:  # last: its presence means complete
        json.dump(manifest, handle, indent=1, sort_keys=True)
    return files


def _listing(fs: AbstractFileSystem, path: str) -> dict[str, int]:
    """Relative path -> bytes of every file under ``path`` but the manifest."""
    fs.invalidate_cache(path)
    found = fs.find(path, detail=True)
    prefix = fs._strip_protocol(path).rstrip("/") + "/"
    files = {name[len(prefix) :]: int(info["size"]) for name, info in found.items() if info["type"] == "file"}
    files.pop(MANIFEST, None)
    return dict(sorted(files.items()))


def _generator(workload: str) -> Inputs:
    try:
        return GENERATORS[workload]
    except KeyError:
        raise ValueError(f"workload {workload!r} has no prepared inputs; known: {', '.join(GENERATORS)}") from None
