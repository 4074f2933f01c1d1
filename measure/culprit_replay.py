"""The proof on real history: two nights whose dask and distributed straddle a regression users reported, and the
nightly going from the regression to the first bad commit by itself (``measure/culprit-replay``; not part of .ci/run).

``--issue 11693`` (the default): ``benchmarks/history/test_resample_11693.py`` got about 15x slower from dask 2024.7.1
to 2024.8.0 (one chunk per hourly bin instead of two). ``--issue 11735``: ``benchmarks/history/test_take_11735.py``
built its graph about 6x slower from dask 2024.11.2 to 2024.12.0. Each night's environment is a venv holding this daskbench, the era's numpy, pandas and
xarray, and dask and distributed **installed from git** at that release's tag commit (from local mirrors, as a
nightly installs them from their main branches), so the runs record the commits. Night 1 (2024.7.1) runs three
times: the baseline. Night 2 (2024.8.0) is ``ci/nightly`` itself, unattended, against a loopback GitHub stand-in:
the suite, compare, the side-by-side confirmation, the alert (one issue), then ``daskbench culprit``: which package
(dask moved alone), then dask's commits, each step built from the mirror. Prints the date, the machine and the
versions first, the nightly's output as it goes, then the comment the culprit wrote and the time it all took.

Run from the checkout's top folder: ``measure/culprit-replay [--issue 11693|11735] [--dask-repo PATH]
[--distributed-repo PATH] [--work DIR] [--size small] [--budget 60] [--dry-run]``. Expected: 20-40 minutes on a quiet 2-core machine (two
venvs built, four benchmark sessions, a confirmation and six or seven bisection steps of a 15x change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testing.github_server import FakeGitHub, serve

TOP = Path(__file__).resolve().parent.parent
#: Per regression replayed: the good night's release, the bad night's, and the benchmark file.
REPLAYS = {
    "11693": ("2024.7.1", "2024.8.0", "benchmarks/history/test_resample_11693.py"),
    "11735": ("2024.11.2", "2024.12.0", "benchmarks/history/test_take_11735.py"),
}
#: The same on both nights, so they differ in dask and distributed alone (what measure/history-bisect pins).
ERA = ("numpy==2.0.2", "pandas==2.2.3", "xarray==2024.10.0")
#: Where this machine keeps mirrors of dask's and distributed's repositories (else they are cloned from GitHub).
MIRRORS = {"dask": Path("/work/.mirror/dask+dask/repo"), "distributed": Path("/work/.mirror/dask+distributed/repo")}
SESSION = ["--workers", "1", "--saturation", "inf"]


def header(good: str, bad: str) -> None:
    """The date, the machine, and the versions of what runs this."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    sha = _run(["git", "-C", str(TOP), "rev-parse", "--short", "HEAD"]).strip()
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} · {os.cpu_count()} cores ({cpu}) · "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"# python {platform.python_version()} · daskbench {sha} · dask/distributed {good} (good) .. {bad} (bad) "
          "from git", flush=True)  # fmt: skip
    print(f"# both nights: {' '.join(ERA)}", flush=True)


def _run(command: list[str], **kwargs: object) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True, **kwargs).stdout  # type: ignore[call-overload]


def repository(name: str, given: str | None, work: Path) -> Path:
    """The repository of ``name``: given, this machine's mirror, or a mirror cloned from GitHub into ``work``."""
    if given:
        return Path(given).absolute()
    if MIRRORS[name].is_dir():
        return MIRRORS[name]
    clone = work / "sources" / f"{name}.git"
    if not clone.is_dir():
        _run(["git", "clone", "--quiet", "--mirror", f"https://github.com/dask/{name}", str(clone)])
    return clone


def tag_commit(repo: Path, tag: str) -> str:
    return _run(["git", "-C", str(repo), "rev-parse", f"refs/tags/{tag}^{{commit}}"]).strip()


def night_env(folder: Path, release: str, repos: dict[str, Path]) -> Path:
    """A venv of one night: daskbench, the era's libraries and the release's dependencies from the index, then dask
    and distributed from git at the release's tag commit (``--no-deps``: what the record says is what runs)."""
    python = folder / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(folder)])
    uv = [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(python)]
    _run([*uv, "-e", str(TOP), *ERA, f"dask[array,dataframe]=={release}", f"distributed=={release}"])
    sources = [f"{name} @ git+{repo.as_uri()}@{tag_commit(repo, release)}" for name, repo in repos.items()]
    _run([*uv, "--no-deps", "--reinstall-package", "dask", "--reinstall-package", "distributed", *sources])
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issue", choices=sorted(REPLAYS), default="11693", help="the regression to replay")
    parser.add_argument("--dask-repo"), parser.add_argument("--distributed-repo")
    parser.add_argument("--work", help="scratch folder (default: a new temporary one)")
    parser.add_argument("--size", default="small"), parser.add_argument("--budget", default="60")
    parser.add_argument("--dry-run", action="store_true", help="check the repositories and say the plan only")
    args = parser.parse_args()
    good, bad, benchmark = REPLAYS[args.issue]
    header(good, bad)
    work = Path(args.work or tempfile.mkdtemp(prefix="culprit-replay-")).absolute()
    repos = {"dask": repository("dask", args.dask_repo, work), "distributed": repository("distributed",
             args.distributed_repo, work)}  # fmt: skip
    for name, repo in repos.items():
        count = _run(["git", "-C", str(repo), "rev-list", "--first-parent", "--count", f"{good}..{bad}"]).strip()
        print(f"# {name}: {repo}, {count} first-parent commits {good}..{bad}", flush=True)
    if args.dry_run:
        print(f"# dry run: would build two venvs in {work}, run night 1 three times and ci/nightly once")
        return 0
    return replay(work, repos, (good, bad), [benchmark, *SESSION], (args.size, args.budget))


def replay(
    work: Path, repos: dict[str, Path], nights: tuple[str, str], bench: list[str], asked: tuple[str, str]
) -> int:
    """The good night three times (the baseline), then ``ci/nightly`` on the bad night, unattended."""
    (size, budget), began = asked, time.monotonic()
    good, bad = (night_env(work / f"night-{n}", release, repos) for n, release in enumerate(nights, 1))
    print(f"# venvs built in {(time.monotonic() - began) / 60:.1f} min", flush=True)
    db, daskbench = f"sqlite:///{work / 'replay.db'}", str(TOP / ".venv" / "bin" / "daskbench")
    session = [*bench, "--size", size, "--repeat", "3", "--db", db, "-p", "no:cacheprovider"]
    runs = []
    for number in (1, 2, 3):  # the baseline: three runs of the good night
        subprocess.run([str(good), "-m", "pytest", "-m", "benchmark", "--label", f"replay-good-{number}", *session],
                       cwd=TOP, check=True)  # fmt: skip
        runs.append(json.loads(_run([daskbench, "runs", "--limit", "1", "--format", "json", "--db", db]))["runs"][0])
    subprocess.run([daskbench, "baseline", "set", "main", *(run["run_id"] for run in runs), "--db", db], check=True)
    fake = FakeGitHub(log=work / "calls.jsonl")
    server = serve(fake)
    nightly = time.monotonic()
    environ = {**os.environ, "DASKBENCH_DB": db, "DASKBENCH_PYTHON": str(bad), "DASKBENCH_BASELINE": "main",
               "DASKBENCH_SIZE": size, "DASKBENCH_LABEL": "replay-night-2", "DASKBENCH_ALERT_REPO": "replay/dask",
               "GITHUB_TOKEN": "replay-loopback-token", "DASKBENCH_GITHUB_API": f"http://127.0.0.1:{server.server_port}",
               "DASKBENCH_MIRRORS": str(work / "mirrors"), "DASKBENCH_CULPRIT_BUDGET": budget,
               "DASKBENCH_CONFIRM_ARGS": f"--cache-dir {work / 'envs'}", "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
               "DASKBENCH_REPORT": str(work / "report.html")}  # fmt: skip
    status = subprocess.run([str(TOP / "ci" / "nightly"), *bench], env=environ, cwd=TOP).returncode
    server.shutdown()
    comments = [body for bodies in fake.comments.values() for body in bodies]
    print(f"\n# ci/nightly exited {status} after {(time.monotonic() - nightly) / 60:.1f} min (all: "
          f"{(time.monotonic() - began) / 60:.1f} min); issues opened {len(fake.issues)}, comments {len(comments)}")  # fmt: skip
    for body in comments:
        print(f"\n{body}")
    return 0 if comments and "First bad commit: dask" in comments[-1] else 1


if __name__ == "__main__":
    sys.exit(main())
