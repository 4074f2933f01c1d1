"""Processes preparing the same dataset at once: one writes, the others wait and reuse it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec

from daskbench.workloads import datasets

if TYPE_CHECKING:
    from tests.s3server import S3Bucket

pytest_plugins = ["tests.s3server"]  # fixtures: moto_endpoint, s3_credentials, s3_bucket

#: One preparer: waits for the common start time, prepares joins/tiny, prints whether it reused.
PREPARER = """
import sys, time
from daskbench.workloads import datasets
root, start = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
print("reused" if datasets.prepare(root, "joins", "tiny").reused else "wrote")
"""


def test_simultaneous_preparations_of_one_dataset_write_it_once(tmp_path: Path) -> None:
    """3 processes preparing one dataset at the same instant: exactly one writes, all succeed, the copy is complete."""
    start = time.time() + 2.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PREPARER, str(tmp_path), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [(p.communicate(timeout=120), p.returncode) for p in procs]
    assert [code for _, code in results] == [0, 0, 0], [err for (_, err), _ in results]
    assert sorted(out.strip() for (out, _), _ in results) == ["reused", "reused", "wrote"]
    path = tmp_path / datasets.dataset_name("joins", "tiny", 0)
    manifest = json.loads((path / datasets.MANIFEST).read_text())
    assert datasets.verified_files(fsspec.filesystem("file"), str(path)) == manifest["files"]


#: A preparer on "another machine": its own temporary directory (so no shared flock), S3 via moto.
S3_PREPARER = """
import sys, time
from daskbench.workloads import datasets
root, endpoint, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
found = datasets.prepare(root, "joins", "tiny", storage_options={"endpoint_url": endpoint})
print("reused" if found.reused else "wrote")
"""


def test_two_machines_preparing_one_s3_dataset_write_it_once(tmp_path: Path, s3_bucket: S3Bucket) -> None:
    """Two preparers that share no temporary directory (two machines) and one S3 bucket, at the
    same instant: the lock object beside the dataset makes one write and the other reuse it,
    and no lock is left behind."""
    start = time.time() + 2.0
    procs = []
    for machine in ("a", "b"):
        (tmp_path / machine).mkdir()
        env = {**os.environ, "TMPDIR": str(tmp_path / machine)}
        procs.append(subprocess.Popen([sys.executable, "-c", S3_PREPARER, f"{s3_bucket.url}/data", s3_bucket.endpoint,
                                       str(start)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))  # fmt: skip
    results = [(p.communicate(timeout=180), p.returncode) for p in procs]
    assert [code for _, code in results] == [0, 0], [err[-2000:] for (_, err), _ in results]
    assert sorted(out.strip() for (out, _), _ in results) == ["reused", "wrote"]
    fs = s3_bucket.filesystem()
    path = f"{s3_bucket.name}/data/{datasets.dataset_name('joins', 'tiny', 0)}"
    assert datasets.verified_files(fs, path) is not None
    assert not fs.exists(f"{path}.lock")
