"""A bisection on a loaded machine: ``measure/bisect-under-load`` (issue 33's figure; outside .ci/run).

Eight stand-in releases (``standin`` 1.0 to 1.7, wheels written into a local folder index), whose
``work()`` sleeps 0.2 s and ten times that from 1.5 on (the sixth); a benchmark measuring it on one local
worker; a busy loop per core loading the machine the whole time. ``daskbench bisect --good standin==1.0
--bad standin==1.7 --inherit`` must decide every step and name 1.5. Prints date, machine, versions, the
CPU probe before the load, each step as bisect prints it, and the total time (target: 5 min).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure.verdict_cost import header
from testing.standin import STANDIN_BENCH, standin_wheel

VERSIONS = [f"1.{minor}" for minor in range(8)]


def busy() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(prog="measure/bisect-under-load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--factor", type=float, default=10.0, help="the slowdown from 1.5 on (default 10)")
    parser.add_argument("--no-load", action="store_true", help="without the busy loops")
    args = parser.parse_args()
    header()
    work = Path(tempfile.mkdtemp(prefix="bisect-under-load-"))
    wheels = work / "wheels"
    wheels.mkdir()
    for version in VERSIONS:
        standin_wheel(wheels, version, round(0.2 * (args.factor if version >= "1.5" else 1.0), 3))
    (work / "test_bench.py").write_text(STANDIN_BENCH)
    loaders = (
        [] if args.no_load else [multiprocessing.Process(target=busy, daemon=True) for _ in range(os.cpu_count() or 1)]
    )
    for loader in loaders:
        loader.start()
    print(f"bisect-load: {len(loaders)} busy loops; standin 1.5 sleeps {args.factor:g}x longer", flush=True)
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "daskbench", "bisect", "--inherit", "--find-links", str(wheels), "--no-index",
             "--cache-dir", str(work / "cache"), "--db", f"sqlite:///{work / 'bisect.db'}", "--group", "load",
             "--good", "standin==1.0", "--bad", "standin==1.7", "--", "--workers", "1", "--saturation", "inf"],
            cwd=work, capture_output=True, text=True,
        )  # fmt: skip
    finally:
        for loader in loaders:
            loader.kill()
    minutes = (time.monotonic() - began) / 60
    print(done.stdout)
    print("\n".join(line for line in done.stderr.splitlines() if line.startswith("bisect: ")))
    steps = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    named = "first bad release: standin 1.5" in done.stdout
    print(f"bisect-load: {len(steps)} steps, every one decided: {done.returncode == 1}; culprit named 1.5: {named}; "
          f"{minutes:.1f} min in all (target 5)")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return 0 if named else 1


if __name__ == "__main__":
    sys.exit(main())
