"""Bisect the regressions users reported: ``measure/history-bisect`` (issue 34 item 5; outside .ci/run).

For each benchmark of ``benchmarks/history/``, ``daskbench bisect`` between a good release and a bad one
around the regression it reproduces (wider than the two releases the issue names, so the binary search
has releases to search), on one local worker at saturation inf, in the default mode: each step's
environment is the good end's pins (numpy, pandas, xarray the same on every step) with that step's dask
and distributed. Prints each bisection as it goes (steps on stdout, progress on stderr), the release it
named, its time and the load average around it, then a summary table: issue, benchmark, good, bad,
release named (and the one expected), steps, rounds, minutes.

dask 2024.11.0 and the ``dask-expr==1.1.17`` it needs are yanked on PyPI: bisect lists no yanked release
and a resolver picks none for a step, so their wheels are fetched once into a folder (``pip download``)
and every bisection is given that folder (``--find-links``), where they are not yanked.

Run from the checkout's top folder: ``measure/history-bisect [--only 11735,12020] [--dry-run] [--db URL]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from measure.verdict_cost import header

TOP = Path(__file__).resolve().parent.parent
#: The console script, not ``python -m daskbench``: run from the checkout, that puts the checkout first on sys.path,
#: where a stale ``daskbench.egg-info`` (left by a setuptools build) would be read as daskbench's install record.
DASKBENCH = [str(Path(sys.executable).parent / "daskbench")]
#: Pinned at both ends, so every step differs from good in dask and distributed only (the report's era pins).
ERA_PINS = ("numpy==2.0.2", "pandas==2.2.3", "xarray==2024.10.0")
#: Releases yanked on PyPI, fetched into the --find-links folder: bisect lists no yanked release (dask 2024.11.0,
#: #11507's bad end) and a resolver picks none for a step (its dask-expr 1.1.17).
YANKED = ("dask==2024.11.0", "dask-expr==1.1.17")
WHEELS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "daskbench" / "history-wheels"
CULPRIT = re.compile(r"^first bad release: dask (\S+?),")
STEP = re.compile(r"^step \d+ .*?(\d+) rounds?\b")


@dataclass(frozen=True)
class Regression:
    """One reported regression: its issue, its benchmark file, the ends bisected, the release expected
    to be named, and the metric judged."""

    issue: int
    benchmark: str
    good: str
    bad: str
    expected: str
    metric: str = "runtime_s"

    def command(self, group: str, db: str) -> list[str]:
        """The ``daskbench bisect`` command of this regression."""
        ends = [f"--good={self.pins(self.good)}", f"--bad={self.pins(self.bad)}"]
        metric = [] if self.metric == "runtime_s" else ["--metric", self.metric]
        pytest_args = [f"benchmarks/history/{self.benchmark}", "--workers", "1", "--saturation", "inf"]
        return [
            *DASKBENCH,
            "bisect",
            *ends,
            *metric,
            "--find-links",
            str(WHEELS),
            "--group",
            group,
            "--db",
            db,
            "--",
            *pytest_args,
        ]

    @staticmethod
    def pins(release: str) -> str:
        return ",".join([f"dask=={release}", f"distributed=={release}", *ERA_PINS])


REGRESSIONS = (
    # dask-expr fusion re-running IO: only 2024.11.0 (fixed in 2024.11.1); 2024.8.0-2024.10.0 load once.
    Regression(11507, "test_fusion_11507.py", "2024.8.0", "2024.11.0", "2024.11.0"),
    # The Task-spec migration of 2024.12.0: slicing plus a boolean mask, judged on the client's peak memory.
    # Not above idle: a lockstep session builds the graph again each round in one process, which keeps part
    # of the last build's memory, so the rise above idle fell from 130 to 28 MiB in four repeats at 2024.12.0
    # (44 to 31 at 2024.11.2) while the peak stayed within 5%.
    Regression(
        12020, "test_bool_mask_12020.py", "2024.10.0", "2025.1.0", "2024.12.0", metric="client_peak_memory_bytes"
    ),
    # The same migration, integer-array indexing; from 2024.9.1 on (2024.8.0 had a slowdown of its own).
    Regression(11735, "test_take_11735.py", "2024.9.1", "2025.1.0", "2024.12.0"),
    # xarray's resample over a gap: 60x from 2024.8.0, 2.5x worse again from 2024.9.0. Its good end is
    # below daskbench's declared floor (dask>=2024.8) until issue 34 item 1 lowers it: until then it
    # cannot build and says so.
    Regression(11693, "test_resample_11693.py", "2024.6.0", "2024.12.0", "2024.8.0"),
)


@dataclass(frozen=True)
class Result:
    regression: Regression
    exit_code: int
    named: str
    steps: int
    rounds: int
    minutes: float

    def row(self) -> str:
        r = self.regression
        named = self.named + ("" if self.named == r.expected else f" (expected {r.expected})")
        return (
            f"| dask/dask#{r.issue} | {r.benchmark} | {r.good} | {r.bad} | {named} | {self.steps} | {self.rounds} "
            f"| {self.minutes:.1f} |"
        )


def fetch_yanked() -> None:
    """The yanked wheels in `WHEELS`, downloaded once (an exact pin may name a yanked release)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    for pin in YANKED:
        name, version = pin.split("==")
        if any(WHEELS.glob(f"{name.replace('-', '_')}-{version}-*.whl")):
            continue
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "--dest",
                str(WHEELS),
                pin,
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            sys.exit(f"measure/history-bisect: could not download {pin} into {WHEELS}: {done.stderr.strip()[-400:]}")


def bisect(regression: Regression, group: str, db: str) -> Result:
    """Run one bisection, its stdout shown as it comes; what it named, its steps, rounds and minutes."""
    command = regression.command(group, db)
    print(
        f"\n## dask/dask#{regression.issue}: {regression.benchmark}, {regression.good} .. {regression.bad}", flush=True
    )
    print("$ daskbench " + " ".join(command[1:]), flush=True)
    print(f"history-bisect: load average {load()} at the start", flush=True)
    began = time.monotonic()
    named, steps, rounds = "-", 0, 0
    with subprocess.Popen(command, cwd=TOP, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            step = STEP.match(line)
            if step:
                steps, rounds = steps + 1, rounds + int(step.group(1))
            culprit = CULPRIT.match(line)
            if culprit:
                named = culprit.group(1)
    minutes = (time.monotonic() - began) / 60
    if process.returncode != 1:
        named = {0: "none", 3: "undecided"}.get(process.returncode, f"could not run (exit {process.returncode})")
    print(
        f"history-bisect: dask/dask#{regression.issue}: {named} in {minutes:.1f} min, load average {load()}", flush=True
    )
    return Result(regression, process.returncode, named, steps, rounds, minutes)


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(prog="measure/history-bisect", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="issue numbers to bisect, e.g. 11735,12020 (default: all)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument(
        "--db",
        default=f"sqlite:///{TOP / 'results' / 'history-bisect.db'}",
        help="the store the bisections write (default results/history-bisect.db)",
    )
    args = parser.parse_args()
    wanted = {int(part) for part in args.only.split(",") if part.strip()}
    chosen = [r for r in REGRESSIONS if not wanted or r.issue in wanted]
    if wanted - {r.issue for r in REGRESSIONS}:
        sys.exit(
            f"measure/history-bisect: --only {args.only}: choose among {', '.join(str(r.issue) for r in REGRESSIONS)}"
        )
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    if args.dry_run:
        for regression in chosen:
            print("daskbench " + " ".join(regression.command(f"history-{regression.issue}-{stamp}", args.db)[1:]))
        return 0
    header()
    fetch_yanked()
    (TOP / "results").mkdir(exist_ok=True)
    results = [bisect(r, f"history-{r.issue}-{stamp}", args.db) for r in chosen]
    print("\n| issue | benchmark | good | bad | release named | steps | rounds | minutes |")
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        print(result.row())
    return 0 if all(result.named == result.regression.expected for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
