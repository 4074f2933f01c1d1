"""measure/release-matrix: one tiny bundled case on the oldest dask/distributed release daskbench measures, one in
the middle and the newest, each in the environment `daskbench.envs` builds for it (the release's era of
libraries, the known incompatibilities pinned), so a change that breaks old releases is caught.

    measure/release-matrix                      # 2023.1.0 (daskbench's floor), the middle release, the newest
    measure/release-matrix 2023.6.0 2024.4.1    # these releases instead
    measure/release-matrix -- -k transpose_mean # another case (pytest arguments after --)

Environments are cached as `daskbench env` caches them (``$DASKBENCH_ENV_CACHE``, default
~/.cache/daskbench/envs) and the installer's own cache (uv's, pip's) is kept, so a second run builds nothing;
uv compiles the bytecode (this machine sets PYTHONDONTWRITEBYTECODE, which would make every restarted
worker compile dask again). The case runs with ``--task-memory --evidence`` on 2 workers, and each release's
measurement is read back from the store: passed, and which metrics the release could not give. Prints what
it ran and how long each part took; exits 1 when a release fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from daskbench import envs
from daskbench.envs import known
from daskbench.errors import DaskbenchError
from daskbench.metrics.collectors import NOT_AVAILABLE
from daskbench.store import Store

ROOT = Path(__file__).resolve().parents[1]
CASE = ["-k", "join_big and p2p"]
SUITE = ["--size", "tiny", "--workers", "2", "--saturation", "1.1", "--task-memory", "--evidence"]
SHOWN = ("numpy", "pandas", "pyarrow", "xarray", "bokeh", "dask-expr")
#: Seconds one release's session may take.
TIMEOUT_S = 1800


def say(line: str) -> None:
    """Print ``line`` within 120 columns (continuations indented)."""
    import textwrap

    print("\n".join(textwrap.wrap(line, 120, subsequent_indent="    ", break_on_hyphens=False)) or "")


def releases(asked: list[str]) -> list[str]:
    """The releases asked, else the floor, the middle of those dask and distributed both have, the newest."""
    if asked:
        return asked
    from packaging.version import Version

    index = envs.Index()
    both = set(envs.available_versions("dask", index)) & set(envs.available_versions("distributed", index))
    oldest = known.floor_of("dask")
    listed = sorted((v for v in both if Version(v) >= Version(oldest)), key=Version)
    return [listed[0], listed[len(listed) // 2], listed[-1]]


def environment(release: str) -> tuple[Path, float, bool]:
    """The interpreter of the release's environment, the seconds it took, and whether it was reused."""
    spec = envs.spec_from_pins({"dask": release, "distributed": release}, source=f"dask {release}")
    said: list[str] = []
    started = time.monotonic()
    python = envs.build(spec, envs.BuildOptions(), say=said.append)
    return python, time.monotonic() - started, any(line.startswith("env: reusing") for line in said)


def measure(python: Path, db: str, data: Path, pytest_args: list[str]) -> tuple[int, float, str]:
    """The exit code and seconds of the case run in ``python``, and its output's last line."""
    command = [str(python), "-m", "pytest", "benchmarks", "-m", "benchmark", "-p", "no:cacheprovider", "-q", *SUITE,
               "--db", db, "--data", str(data), *(pytest_args or CASE)]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - started, f"stopped after {TIMEOUT_S} s"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, time.monotonic() - started, lines[-1] if lines else ""


def machine() -> str:
    """``2026-11-26T12:01Z · 2 cores · AMD EPYC ... · load 3.1`` (others' jobs count: the load says so)."""
    from datetime import UTC, datetime

    from daskbench.provenance import host

    facts = host()
    load = os.getloadavg()[0]
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%MZ} · {facts['cores']} cores · {facts['cpu_model']} · load {load:.1f}"


def read_back(db: str) -> list[str]:
    """Each measurement of the store's one run: case, outcome, runtime, what was not available."""
    store = Store(db, create=False)
    runs = store.runs()
    found = []
    for m in store.measurements([runs[0].run_id]) if runs else []:
        missing = sorted((m.extra.get(NOT_AVAILABLE) or {}).keys())
        gone = f"; not available: {', '.join(missing)}" if missing else ""
        runtime = f"{m.runtime_s:.2f} s" if m.runtime_s is not None else "-"
        evidence = ", ".join(sorted((m.extra.get("evidence") or {}).keys())) or "none"
        extras = (
            f"task_cpu_s {m.metrics.get('task_cpu_s', '-')}, task_peak_bytes {m.metrics.get('task_peak_bytes', '-')}"
        )
        found.append(f"{m.outcome} in {runtime} ({extras}; evidence: {evidence}){gone}")
    return found


def main(argv: list[str]) -> int:
    at = argv.index("--") if "--" in argv else len(argv)
    asked, pytest_args = argv[:at], argv[at + 1 :]
    if any(arg.startswith("-") for arg in asked):  # an option before `--` is no release: say how it is called
        print(
            __doc__ if {"-h", "--help"} & set(asked) else "usage: measure/release-matrix [RELEASE ...] [-- PYTEST ARGS]"
        )
        return 0 if {"-h", "--help"} & set(asked) else 2
    started = time.monotonic()
    chosen = releases(asked)
    say(f"measure/release-matrix: {machine()}")
    say(f"measure/release-matrix: dask/distributed {', '.join(chosen)} on python {sys.version.split()[0]}; case: "
          f"{' '.join(pytest_args or CASE)} {' '.join(SUITE)}")  # fmt: skip
    failed = []
    with tempfile.TemporaryDirectory(prefix="release-matrix-") as scratch:
        for release in chosen:
            try:
                python, built, reused = environment(release)
            except DaskbenchError as error:
                say(f"{release}: no environment: {error}")
                failed.append(release)
                continue
            versions = envs.installed_versions(python, SHOWN)
            libs = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
            say(f"{release}: environment {'reused' if reused else 'built'} in {built:.0f} s: {libs}")
            db = f"sqlite:///{scratch}/{release}.db"
            code, seconds, last = measure(python, db, Path(scratch) / "data", pytest_args)
            rows = read_back(db)
            say(f"{release}: pytest exit {code} in {seconds:.0f} s ({last})")
            for row in rows:
                say(f"{release}:   {row}")
            if code != 0 or not rows or any(not row.startswith("passed") for row in rows):
                failed.append(release)
    minutes = (time.monotonic() - started) / 60
    verdict = f"FAILED on {', '.join(failed)}" if failed else "all passed"
    say(f"measure/release-matrix: {verdict} ({len(chosen)} releases, {minutes:.1f} min; {machine()})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
