"""Bisect real dask commits: ``measure/dask-commit-bisect`` (issue 44; outside .ci/run).

``daskbench bisect --repo`` on a local clone of dask (``--dask PATH``; ``git clone https://github.com/dask/dask``
once) between two nearby refs, in the default mode (each step's environment built in full: its dask from the
commit's source tree, the distributed it matches, the good commit's era, and the pins below on every step), on
``benchmarks/history/test_resample_11693.py`` (60x slower from dask 2024.8.0), one local worker at saturation inf.
The default range, ``8dcf306e8`` (2024-07-31, after 2024.7.1) to ``98a43d8c9`` (2024-08-06, before 2024.8.0),
is four commits after the good one, the bad one included. Prints the header (date, machine, versions), the command, each step's environment (which
distributed it got) and its verdict, the commit named, the time and the load average around it.

Run from the checkout's top folder: ``measure/dask-commit-bisect --dask ~/src/dask [--distributed ~/src/distributed]
[--good REF] [--bad REF] [--dry-run] [--db URL]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from measure.verdict_cost import header

TOP = Path(__file__).resolve().parent.parent
#: The console script (see measure/history_bisect.py: not ``python -m daskbench`` from the checkout).
DASKBENCH = [str(Path(sys.executable).parent / "daskbench")]
#: The libraries of every step, as measure/history-bisect pins them: the steps differ in dask (and distributed).
PINS = ("numpy==2.0.2", "pandas==2.2.3", "xarray==2024.10.0")
CULPRIT = re.compile(r"^first bad commit: (\S+) (.*)$")
STEP = re.compile(r"^step \d+ .*?(\d+) rounds?\b")
PARTNER = re.compile(r"^bisect: ([0-9a-f]{12}): dask at that commit, (.*)$")


def command(args: argparse.Namespace, group: str) -> list[str]:
    """The ``daskbench bisect --repo`` command of this measurement."""
    other = ["--other-repo", args.distributed] if args.distributed else []
    pins = [part for pin in PINS for part in ("--pin", pin)]
    ends = ["--good", args.good, "--bad", args.bad]
    session = ["benchmarks/history/test_resample_11693.py", "--workers", "1", "--saturation", "inf"]
    return [*DASKBENCH, "bisect", "--repo", args.dask, *other, *ends, *pins, "--group", group, "--db", args.db,
            "--", *session]  # fmt: skip


def run(argv: list[str]) -> tuple[int, str, int, int, float, list[str]]:
    """Run the bisection, its output passed through; exit code, commit named, steps, rounds, minutes, partners."""
    began, named, steps, rounds, partners = time.monotonic(), "-", 0, 0, []
    with subprocess.Popen(argv, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            if step := STEP.match(line):
                steps, rounds = steps + 1, rounds + int(step.group(1))
            if culprit := CULPRIT.match(line):
                named = f"{culprit.group(1)[:12]} {culprit.group(2)}"
            if partner := PARTNER.match(line):
                partners.append(f"{partner.group(1)}: {partner.group(2)}")
    minutes = (time.monotonic() - began) / 60
    if process.returncode != 1:
        named = {0: "none", 3: "undecided", 130: "interrupted"}.get(
            process.returncode, f"could not run (exit {process.returncode})"
        )
    return process.returncode, named, steps, rounds, minutes, partners


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(prog="measure/dask-commit-bisect", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dask", required=True, help="a local clone of dask (with its tags)")
    parser.add_argument("--distributed", default="", help="a local clone of distributed: each step gets its commit")
    parser.add_argument("--good", default="8dcf306e8", help="the good ref (default 8dcf306e8, 2024-07-31)")
    parser.add_argument("--bad", default="98a43d8c9", help="the bad ref (default 98a43d8c9, 2024-08-06)")
    parser.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    parser.add_argument("--db", default=f"sqlite:///{TOP / 'results' / 'dask-commit-bisect.db'}",
                        help="the store the bisection writes (default results/dask-commit-bisect.db)")  # fmt: skip
    args = parser.parse_args()
    argv = command(args, f"dask-commits-{time.strftime('%Y%m%d-%H%M', time.gmtime())}")
    print("$ daskbench " + " ".join(argv[1:]), flush=True)
    if args.dry_run:
        return 0
    header()
    (TOP / "results").mkdir(exist_ok=True)
    print(f"dask-commit-bisect: load average {load()} at the start", flush=True)
    code, named, steps, rounds, minutes, partners = run(argv)
    print(f"\ndask-commit-bisect: {named}: {steps} steps, {rounds} rounds, {minutes:.1f} min, load average {load()}")
    for partner in partners:
        print(f"  step environment {partner}")
    return 0 if code in (0, 1) else code


if __name__ == "__main__":
    sys.exit(main())
