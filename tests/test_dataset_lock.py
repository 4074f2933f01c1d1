"""Processes preparing the same dataset at once: one writes, the others wait and reuse it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import fsspec

from daskbench.workloads import datasets

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
