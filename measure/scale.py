"""A synthetic history shaped like a real export, and the timings of daskbench's commands over it (measure/scale).

``generate``: from a real seed export (one run of a tiny ``pytest -m benchmark``), an export of RUNS nightly runs
x CASES cases: each case a seed case with its cluster spec (workers, saturation) and, past twelve variants, a
``copy`` parameter changed; each measurement the seed measurement of its case with every metric jittered 3%
(log-normal) and its times dated that night; one planted 1.3x step in the runtime and cost of the first case
over the last `STEP_RUNS` runs (what ``compare --history`` must find). Written line by line: any size fits.

``measure``: each command as a user runs it (``.venv/bin/daskbench``, start-up included) on a store the
export was imported into: wall seconds, CPU seconds (user + system of the process and its children) and the
largest resident memory, one row per size, backend and command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

#: The jitter of every metric (log-normal sd), as run-to-run noise of a quiet machine.
JITTER = 0.03
#: The planted step: this factor on the first case's time metrics over the last `STEP_RUNS` runs.
STEP, STEP_RUNS = 1.3, 3
#: The metrics the step multiplies (the time and what follows from it).
STEPPED = ("runtime_s", "runtime_norm_s", "cost_usd", "rightsized_cost_usd")
#: Cluster variants of a seed case: workers x saturation (12), then the ``copy`` parameter counts on.
WORKERS, SATURATIONS = (1, 2, 4), ("1.1", "1.0", "inf", "1.5")
FIRST_NIGHT = datetime(2027, 1, 1, 2, 0, tzinfo=UTC)


# -- generate ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """What the seed export holds: its one run, its cases and one measurement (and task peaks) per case."""

    run: dict[str, Any]
    events: list[dict[str, Any]]
    cases: list[dict[str, Any]]
    measurements: dict[str, dict[str, Any]]
    task_peaks: dict[str, list[dict[str, Any]]]


def read_seed(path: Path) -> Seed:
    runs, events, cases, measurements, peaks = [], [], [], {}, {}
    with path.open(encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            record = json.loads(line)
            kind, row = record["kind"], record["row"]
            if kind == "run":
                runs.append(row)
            elif kind == "event":
                events.append(row)
            elif kind == "case":
                cases.append(row)
            elif kind == "measurement" and row["repeat"] == 0:
                measurements.setdefault(row["fingerprint"], row)
            elif kind == "task_peak" and row["repeat"] == 0:
                peaks.setdefault(row["fingerprint"], []).append(row)
    if len(runs) != 1 or not cases:
        raise SystemExit(f"{path}: a seed export holds one run and its cases (found {len(runs)} runs)")
    return Seed(runs[0], events, [c for c in cases if c["fingerprint"] in measurements], measurements, peaks)


def fingerprint(workload: str, params: dict[str, Any], cluster: dict[str, Any]) -> str:
    """A case's fingerprint, as `daskbench.model.Case` computes it."""
    from daskbench.model import Case, ClusterSpec

    return Case(workload, params, ClusterSpec.from_dict(cluster)).fingerprint


def synthetic_cases(seed: Seed, count: int) -> list[tuple[dict[str, Any], str]]:
    """``count`` case rows made from the seed's, each with the fingerprint of the seed case it copies."""
    made = []
    for k in range(count):
        template = seed.cases[k % len(seed.cases)]
        variant = k // len(seed.cases)
        params = json.loads(template["params"])
        cluster = json.loads(template["cluster"])
        cluster["n_workers"] = WORKERS[variant % len(WORKERS)]
        cluster["worker_saturation"] = SATURATIONS[(variant // len(WORKERS)) % len(SATURATIONS)]
        copy = variant // (len(WORKERS) * len(SATURATIONS))
        if copy:
            params["copy"] = copy
        fp = fingerprint(template["workload"], params, cluster)
        row = {**template, "fingerprint": fp, "params": _dumps(params), "cluster": _dumps(cluster)}
        made.append((row, template["fingerprint"]))
    return made


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _jittered(metrics: dict[str, float], rng: random.Random, factor: float) -> dict[str, float]:
    out = {}
    for name, value in metrics.items():
        scaled = value * math.exp(rng.gauss(0.0, JITTER)) * (factor if name in STEPPED else 1.0)
        out[name] = float(round(scaled)) if float(value).is_integer() and abs(value) >= 1 else scaled
    return out


def generate(seed_path: Path, out: TextIO, runs: int, cases: int, rng_seed: int = 36) -> None:
    """Write the export of ``runs`` x ``cases`` to ``out``, line by line."""
    seed = read_seed(seed_path)
    rng = random.Random(rng_seed)
    made = synthetic_cases(seed, cases)
    nights = [FIRST_NIGHT + timedelta(days=n) for n in range(runs)]
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in nights]

    def line(kind: str, row: dict[str, Any]) -> None:
        out.write(json.dumps({"kind": kind, "row": row}, sort_keys=True) + "\n")

    header = {"format": "daskbench-export", "version": 2, "exported_at": _iso(datetime.now(UTC)), "since": None}
    out.write(json.dumps(header, sort_keys=True) + "\n")
    for run_id, night in zip(ids, nights, strict=True):
        ended = _iso(night + timedelta(minutes=40))
        line("run", {**seed.run, "run_id": run_id, "label": "nightly", "started_at": _iso(night), "ended_at": ended})
    for run_id, night in zip(ids, nights, strict=True):
        for event in seed.events:
            at = _iso(night if event["status"] == "running" else night + timedelta(minutes=40))
            line("event", {**event, "run_id": run_id, "at": at})
    for row, _ in made:
        line("case", {**row, "first_seen_at": _iso(nights[0])})
    for n, (run_id, night) in enumerate(zip(ids, nights, strict=True)):
        for k, (row, template) in enumerate(made):
            base = seed.measurements[template]
            factor = STEP if k == 0 and n >= runs - STEP_RUNS else 1.0
            at = _iso(night + timedelta(seconds=5 * k))
            metrics = _jittered(base["metrics"], rng, factor)
            line("measurement", {**base, "run_id": run_id, "fingerprint": row["fingerprint"], "recorded_at": at,
                                 "metrics": metrics})  # fmt: skip
    for run_id in ids:
        for row, template in made:
            for peak in seed.task_peaks.get(template, []):
                line("task_peak", {**peak, "run_id": run_id, "fingerprint": row["fingerprint"]})


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds")


# -- measure ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timed:
    """One command's cost: wall seconds, CPU seconds (its process tree) and largest resident memory."""

    wall: float
    cpu: float
    max_rss_mib: float
    returncode: int
    output: str


def timed(command: Sequence[str], cwd: Path | None = None) -> Timed:
    """Run ``command``; its wall time, and CPU and peak memory from the kernel's accounting of the child."""
    began = time.perf_counter()
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        output = child.stdout.read() if child.stdout else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - began
    return Timed(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode, output)


def probe_ms() -> float:
    """The machine's speed now: daskbench's CPU probe (lower is faster), the median of five, in ms."""
    from daskbench.metrics.probe import probe_seconds

    return sorted(probe_seconds() for _ in range(5))[2] * 1e3


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


#: The commands timed on each store, as (name, arguments after ``daskbench``); ``{db}``, ``{out}`` filled in.
COMMANDS = (
    ("runs", ("runs", "--db", "{db}")),
    ("compare --history 20", ("compare", "--history", "20", "--db", "{db}")),
    ("report", ("report", "--db", "{db}", "-o", "{out}/report.html")),
    ("publish", ("publish", "--db", "{db}", "-o", "{out}/site")),
    ("export", ("export", "--db", "{db}", "-o", "{out}/export.jsonl")),
)
DASKBENCH = str(Path(sys.executable).parent / "daskbench")


@dataclass(frozen=True)
class Size:
    runs: int
    cases: int

    @classmethod
    def parse(cls, text: str) -> Size:
        runs, _, cases = text.partition("x")
        return cls(int(runs), int(cases))

    def __str__(self) -> str:
        return f"{self.runs}x{self.cases}"


def history_file(seed: Path, work: Path, size: Size) -> Path:
    """The synthetic export of this size in ``work`` (written once, then reused)."""
    path = work / f"history-{size}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".part")
        with partial.open("w", encoding="utf-8") as out:
            generate(seed, out, size.runs, size.cases)
        partial.rename(path)
    return path


@contextlib.contextmanager
def postgres_server(folder: Path) -> Iterator[str]:
    """A PostgreSQL server on loopback in ``folder`` (as the tests start one); yields its URL."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        raise SystemExit("no PostgreSQL server binaries; run ci/setup --test to install Debian's postgresql")
    bin_dir, data = found[-1].parent, folder / "pg"

    def as_postgres(command: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command

    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]),
                   check=True, capture_output=True)  # fmt: skip
    options = f"-p {port} -k {folder} -h 127.0.0.1"
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]
    subprocess.run(as_postgres(start), check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        subprocess.run(as_postgres(stop), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def fresh_database(server: str, name: str) -> str:
    """A new empty database on the server, its URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


def measure_store(db: str, history: Path, out: Path, commands: Sequence[str]) -> Iterator[tuple[str, Timed]]:
    """Import ``history`` into the empty store ``db``, then time each command on it."""
    out.mkdir(parents=True, exist_ok=True)
    yield "import", timed([DASKBENCH, "import", str(history), "--db", db])
    for name, arguments in COMMANDS:
        if name in commands:
            yield name, timed([DASKBENCH, *(a.format(db=db, out=out) for a in arguments)])


#: When the page first painted its content (headline and tables: they come before any chart), in ms.
PAINTED = """() => (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime || null"""
#: Every chart slot of a report holds a drawn Bokeh view, or (a long report's compact form) an SVG, with a size.
ALL_DRAWN = """() => document.body.dataset.charts === "all" && [...document.querySelectorAll(".chart")].every(el => {
  const root = el.querySelector("[data-root-id]");
  const shown = root ? root.firstElementChild : el.querySelector("svg.mini");
  return shown && shown.getBoundingClientRect().width > 0; })"""


def browser_times(report: Path) -> tuple[float, float, int]:
    """Open ``report`` from disk in headless Chromium, offline: seconds until its first paint (the headline and
    the verdict table; charts come after), until every chart is drawn, and how many console errors."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_context(offline=True, viewport={"width": 1440, "height": 900}).new_page()
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        began = time.perf_counter()
        page.goto(report.resolve().as_uri(), wait_until="domcontentloaded", timeout=600_000)
        page.wait_for_selector("#verdict-table", timeout=600_000)
        page.wait_for_function(PAINTED, timeout=600_000)
        usable = page.evaluate(PAINTED) / 1000  # the first paint, from the navigation's start
        page.wait_for_function(ALL_DRAWN, timeout=600_000, polling=100)
        drawn = time.perf_counter() - began
        browser.close()
    return usable, drawn, len(errors)


def header() -> str:
    """Date, machine, versions, load and the CPU probe, for the top of the table."""
    import platform
    import sqlite3

    import sqlalchemy

    import daskbench

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")  # fmt: skip
    versions = (f"daskbench {daskbench.__version__} · python {platform.python_version()} · "
                f"sqlalchemy {sqlalchemy.__version__} · sqlite {sqlite3.sqlite_version}")  # fmt: skip
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
    return f"# {when} · {os.cpu_count()} cores · {cpu} · {versions}\n# load {load()} · CPU probe {probe_ms():.1f} ms"


def measure(seed: Path, work: Path, sizes: Sequence[Size], backends: Sequence[str], commands: Sequence[str]) -> None:
    """Print one line per size, backend and command: wall and CPU seconds, peak memory, exit code, load."""
    print(header())
    print("# CPU: the command's own process tree (a PostgreSQL server's work is not in it); wall includes start-up")
    print(f"{'size':>9} {'backend':<10} {'command':<21} {'wall s':>8} {'cpu s':>8} {'MiB':>6} {'exit':>4}  load")
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(postgres_server(work / "postgres")) if "postgresql" in backends else ""
        for size in sizes:
            history = history_file(seed, work, size)
            for backend in backends:
                if backend == "sqlite":
                    path = work / f"store-{size}.db"
                    path.unlink(missing_ok=True)
                    db = f"sqlite:///{path}"
                else:
                    db = fresh_database(server, f"scale_{size}")
                out = work / f"out-{size}-{backend}"
                for name, cost in measure_store(db, history, out, commands):
                    print(f"{size!s:>9} {backend:<10} {name:<21} {cost.wall:8.1f} {cost.cpu:8.1f} "
                          f"{cost.max_rss_mib:6.0f} {cost.returncode:4d}  {load()}", flush=True)  # fmt: skip
                    if cost.returncode not in (0, 1):
                        print("  " + "\n  ".join(cost.output.strip().splitlines()[-3:]))
                if "browser" in commands and (out / "report.html").exists():
                    usable, drawn, errors = browser_times(out / "report.html")
                    print(f"{size!s:>9} {backend:<10} {'report: usable':<21} {usable:8.1f} {'-':>8} {'-':>6} {'-':>4}  "
                          f"{load()}\n{size!s:>9} {backend:<10} {'report: all charts':<21} {drawn:8.1f} {'-':>8} "
                          f"{'-':>6} {errors:4d}  (console errors in the exit column)", flush=True)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    gen = sub.add_parser("generate", help="write a synthetic export")
    gen.add_argument("seed", type=Path)
    gen.add_argument("out", type=Path)
    gen.add_argument("--runs", type=int, required=True)
    gen.add_argument("--cases", type=int, required=True)
    meas = sub.add_parser("measure", help="time daskbench's commands on synthetic histories")
    meas.add_argument("seed", type=Path, help="a seed export: one run of a tiny pytest -m benchmark")
    meas.add_argument("work", type=Path, help="folder for the histories, stores and outputs")
    meas.add_argument("--sizes", default="30x50,365x50,365x300", help="RUNSxCASES,... (default: %(default)s)")
    meas.add_argument("--backends", default="sqlite,postgresql", help="sqlite,postgresql (default: %(default)s)")
    meas.add_argument("--commands", default=",".join([*(name for name, _ in COMMANDS), "browser"]),
                      help="which commands after import, and browser: the report in Chromium (default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.action == "generate":
        with args.out.open("w", encoding="utf-8") as out:
            generate(args.seed, out, args.runs, args.cases)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the PostgreSQL server on the way out
    args.work.mkdir(parents=True, exist_ok=True)
    sizes = [Size.parse(text) for text in args.sizes.split(",")]
    measure(args.seed, args.work, sizes, args.backends.split(","), args.commands.split(","))


if __name__ == "__main__":
    main(sys.argv[1:])
