"""One case against the peers: ``daskbench pr``, ``asv continuous`` and pytest-benchmark's compare, measured here.

A throw-away git project, ``standin``, whose ``work()`` computes a dask graph of 8 tasks, each a pure-Python loop
(about 0.2 s in all); a pull request's head makes the loops ``EFFECT`` times longer (1.00: an unchanged head that
only edits a comment). The same project holds each tool's benchmark of that one function:

- daskbench: ``benchmarks/test_standin.py`` (``measure(standin.graph())`` on daskbench's local cluster, one worker),
  run as ``daskbench pr BASE HEAD --floor 1.05 -- --workers 1 --saturation inf`` (each side's environment built
  from its commit, the report written);
- asv: ``asv_bench/benchmarks.py`` (``time_work``), ``asv continuous --factor 1.05 BASE HEAD`` (virtualenv
  environments of the same dask and distributed, the project built at each commit);
- pytest-benchmark: ``pb/test_pb.py`` (``benchmark(standin.work)``) in a virtualenv of the same dask, distributed
  and pytest-benchmark: BASE checked out and ``pip install --no-deps .``, run with ``--benchmark-save``; then HEAD
  checked out and installed, run with ``--benchmark-compare --benchmark-compare-fail=median:5%``.

Every trial makes new commits (a pull request is new code: no tool finds its sides already built), and the tools
take turns in a rotating order. Before the trials each tool runs once on an unchanged head, not counted (their
caches warm: asv's environment, daskbench's packages, pytest-benchmark's virtualenv; daskbench's at most 3 rounds).
The true effect is the planted one (the same loop, ``EFFECT`` times as many turns); as a check, ``work()`` of base
and head timed alternately in this process on dask's synchronous scheduler (one thread, as daskbench's worker runs
it), 15 times each, is printed beside it ("timed apart": the machine's own drift shows there).

For each tool and effect: wall time of each trial (median), and what it said (regressed, unchanged,
undecided; daskbench's interval, and whether it holds the true effect).

Run from the checkout's top folder: ``measure/peers [--trials 3] [--effects 1.00,1.06,1.21]
[--tools daskbench,asv,pytest-benchmark] [--keep]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from measure.verdict_cost import git, header

DASKBENCH = [sys.executable, "-m", "daskbench"]
FLOOR = 1.05
TOOLS = ("daskbench", "asv", "pytest-benchmark")
LOOPS = 1_200_000

STANDIN = '''"""A stand-in project: work() computes 8 tasks of pure-Python loops."""

import dask

FACTOR = {factor}  # {note}
LOOPS = int({loops} * FACTOR)


def _burn(seed, loops):
    total = seed
    for i in range(loops):
        total = (total + i * i) % 1_000_003
    return total


def graph():
    parts = [dask.delayed(_burn)(seed, LOOPS // 8) for seed in range(8)]
    return dask.delayed(sum)(parts)


def work():
    return graph().compute()
'''
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "standin"
version = "1.0"
dependencies = ["dask", "distributed"]

[tool.setuptools]
packages = ["standin"]

[tool.pytest.ini_options]
testpaths = ["benchmarks"]
addopts = ["-m", "not benchmark"]
markers = ["benchmark: a daskbench benchmark"]
"""
DASKBENCH_BENCHMARK = """import pytest
import standin

pytestmark = pytest.mark.benchmark


def test_standin(measure):
    measure(standin.graph(), name="standin", params={})
"""
ASV_CONF = """{{
    "version": 1,
    "project": "standin",
    "project_url": "https://example.invalid/standin",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "virtualenv",
    "pythons": ["{python}"],
    "matrix": {{"req": {{"dask": ["{dask}"], "distributed": ["{distributed}"]}}}},
    "build_command": ["python -m pip wheel --no-deps -w {{build_cache_dir}} {{build_dir}}"],
    "benchmark_dir": "asv_bench",
    "env_dir": "{asv}/env",
    "results_dir": "{asv}/results",
    "html_dir": "{asv}/html"
}}
"""
ASV_BENCHMARK = """import standin


def time_work():
    standin.work()
"""
PB_BENCHMARK = """import standin


def test_work(benchmark):
    benchmark(standin.work)
"""
PB_INI = "[pytest]\npythonpath = ..\n"


@dataclass(frozen=True)
class Said:
    """One tool's answer on one pull request."""

    tool: str
    effect: float
    seconds: float
    verdict: str  # regressed, unchanged, improved (asv), undecided (daskbench), failed
    detail: str = ""
    holds: bool | None = None  # daskbench: whether its interval holds the true effect


def write_project(repo: Path, asv: Path) -> None:
    import dask
    import distributed

    (repo / "standin").mkdir(parents=True)
    (repo / "benchmarks").mkdir()
    (repo / "asv_bench").mkdir()
    (repo / "pb").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "benchmarks" / "test_standin.py").write_text(DASKBENCH_BENCHMARK)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    conf = ASV_CONF.format(python=version, dask=dask.__version__, distributed=distributed.__version__, asv=asv)
    (repo / "asv.conf.json").write_text(conf)
    (repo / "asv_bench" / "__init__.py").write_text("")
    (repo / "asv_bench" / "benchmarks.py").write_text(ASV_BENCHMARK)
    (repo / "pb" / "test_pb.py").write_text(PB_BENCHMARK)
    (repo / "pb" / "pytest.ini").write_text(PB_INI)
    (repo / ".gitignore").write_text("results/\n.benchmarks/\n")
    set_factor(repo, 1.0, "first commit")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "standin")


def set_factor(repo: Path, factor: float, note: str) -> None:
    (repo / "standin" / "__init__.py").write_text(STANDIN.format(factor=factor, note=note, loops=LOOPS))


def pull_request(repo: Path, name: str, effect: float) -> tuple[str, str]:
    """A new base commit on main and a head branch ``name`` from it whose loops are ``effect`` times longer."""
    git(repo, "checkout", "-q", "main")
    set_factor(repo, 1.0, f"base of {name}")
    git(repo, "commit", "-q", "-am", f"base of {name}")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", name)
    set_factor(repo, effect, f"head of {name}")
    git(repo, "commit", "-q", "-am", f"{name}: {effect}x")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return base, head


def true_effect(repo: Path, base: str, head: str, times: int = 15) -> float:
    """The head's work over the base's, timed apart: each side's module loaded from its commit, alternately."""
    sides = {}
    for name, commit in (("base", base), ("head", head)):
        source = git(repo, "show", f"{commit}:standin/__init__.py")
        module: dict[str, object] = {}
        exec(compile(source, f"standin@{name}", "exec"), module)
        sides[name] = module["work"]
    seconds: dict[str, list[float]] = {"base": [], "head": []}
    import dask

    with dask.config.set(scheduler="sync"):
        for i in range(times):
            for name in ("base", "head") if i % 2 == 0 else ("head", "base"):
                began = time.perf_counter()
                sides[name]()  # type: ignore[operator]
                seconds[name].append(time.perf_counter() - began)
    return statistics.median(seconds["head"]) / statistics.median(seconds["base"])


def run(command: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float, str]:
    began = time.monotonic()
    ran = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n# exit {ran.returncode}, {seconds:.1f} s\n{ran.stdout}{ran.stderr}\n")
    return ran.returncode, seconds, ran.stdout + ran.stderr


def daskbench_pr(
    repo: Path, base: str, head: str, work: Path, log: Path, warm: bool = False
) -> tuple[str, float, str, tuple[float, float]]:
    markdown = work / "pr.md"
    command = [*DASKBENCH, "pr", base, head, "--floor", str(FLOOR), "--db", f"sqlite:///{work / 'daskbench.db'}"]
    command += [
        "--cache-dir",
        str(work / "envs"),
        "--markdown",
        str(markdown),
        *(["--max-rounds", "3"] if warm else []),
    ]
    command += ["--", "--workers", "1", "--saturation", "inf"]
    code, seconds, _ = run(command, repo, dict(os.environ), log)
    verdict = {0: "unchanged", 1: "regressed", 3: "undecided"}.get(code, f"failed (exit {code})")
    text = markdown.read_text() if markdown.exists() else ""
    row = next((line for line in text.splitlines() if "runtime" in line and "standin" in line), "")
    interval = re.search(r"([0-9.]+) \(([0-9.]+)-([0-9.]+)\) \| (\d+)", row)
    if not interval:
        return verdict, seconds, row[:80], (0.0, 0.0)
    ratio, low, high, rounds = interval.groups()
    return verdict, seconds, f"{ratio} ({low}-{high}), {rounds} rounds", (float(low), float(high))


def asv(env: dict[str, str]) -> str:
    """The asv the shell half installed into ``$PEERS_TOOLS``."""
    return str(Path(env["PEERS_TOOLS"]) / "bin" / "asv")


def asv_continuous(repo: Path, base: str, head: str, env: dict[str, str], log: Path) -> tuple[str, float, str]:
    command = [asv(env), "continuous", "--factor", str(FLOOR), "--machine", "peers", base, head]
    code, seconds, output = run(command, repo, env, log)
    if code not in (0, 1) or "time_work" not in output:
        return f"failed (exit {code})", seconds, ""
    timed: dict[str, str] = {}
    commit = ""
    for line in output.splitlines():
        seen = re.search(r"For standin commit ([0-9a-f]+)", line)
        commit = seen.group(1) if seen else commit
        value = re.search(r"benchmarks\.time_work\s+([0-9.]+)(?:±[0-9.]+)?(ms|s)\s*$", line)
        if value:
            timed[commit] = f"{value.group(1)}{value.group(2)}"
    said = f"head {timed.get(head[:8], '?')}, base {timed.get(base[:8], '?')}"
    if "PERFORMANCE DECREASED" in output:
        return "regressed", seconds, said
    return ("improved" if "PERFORMANCE INCREASED" in output else "unchanged"), seconds, said


def pb_python(tools: Path, log: Path) -> Path:
    """A virtualenv for pytest-benchmark with this one's dask, distributed and pytest-benchmark (made once)."""
    import dask
    import distributed
    import pytest_benchmark

    python = tools / "pb" / "bin" / "python"
    if not python.exists():
        subprocess.run(["python3", "-m", "venv", str(tools / "pb")], check=True)
        wanted = [f"dask=={dask.__version__}", f"distributed=={distributed.__version__}", "pytest"]
        wanted.append(f"pytest-benchmark=={pytest_benchmark.__version__}")
        run([str(python), "-m", "pip", "install", "-q", *wanted], tools, dict(os.environ), log)
    return python


def pytest_benchmark(
    repo: Path, base: str, head: str, work: Path, env: dict[str, str], log: Path
) -> tuple[str, float, str]:
    python = str(pb_python(Path(env["PEERS_TOOLS"]), log))
    storage = f"file://{work / 'pb-storage' / base[:12]}"
    common = [python, "-m", "pytest", "-c", "pb/pytest.ini", "-p", "no:cacheprovider", "-q"]
    common += ["--benchmark-storage", storage, "pb/test_pb.py"]
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "."]
    total, codes = 0.0, []
    for commit, flags in (
        (base, ["--benchmark-save=base"]),
        (head, ["--benchmark-compare", "--benchmark-compare-fail=median:5%"]),
    ):
        git(repo, "checkout", "-q", commit)
        for command in (install, [*common, *flags]):
            code, seconds, _ = run(command, repo, env, log)
            total += seconds
            codes.append(code)
    git(repo, "checkout", "-q", "main")
    if codes[:3] != [0, 0, 0] or codes[3] not in (0, 1):
        return f"failed (exit {codes})", total, ""
    return ("regressed" if codes[3] == 1 else "unchanged"), total, ""


def one(
    tool: str,
    repo: Path,
    base: str,
    head: str,
    effect: float,
    truth: float,
    work: Path,
    env: dict[str, str],
    warm: bool = False,
) -> Said:
    log = work / f"{tool}.log"
    if tool == "daskbench":
        verdict, seconds, detail, (low, high) = daskbench_pr(repo, base, head, work, log, warm)
        holds = (low <= truth <= high) if high else None
        return Said(tool, effect, seconds, verdict, detail, holds)
    if tool == "asv":
        verdict, seconds, detail = asv_continuous(repo, base, head, env, log)
    else:
        verdict, seconds, detail = pytest_benchmark(repo, base, head, work, env, log)
    return Said(tool, effect, seconds, verdict, detail)


def asv_machine(env: dict[str, str], repo: Path, log: Path) -> None:
    run([asv(env), "machine", "--machine", "peers", "--yes"], repo, env, log)


def summary(said: Sequence[Said], effects: Sequence[float], apart: dict[float, list[float]]) -> None:
    print("\n| effect (timed apart, median) | tool | wall s, median (each) | called regressed | what it said |")
    print("|---|---|---|---|---|")
    for effect in effects:
        timed = statistics.median(apart[effect])
        for tool in TOOLS:
            mine = [s for s in said if s.tool == tool and s.effect == effect]
            if not mine:
                continue
            walls = ", ".join(f"{s.seconds:.0f}" for s in mine)
            called = sum(s.verdict == "regressed" for s in mine)
            details = "; ".join(f"{s.verdict} {s.detail}".strip() for s in mine)
            holds = [s.holds for s in mine if s.holds is not None]
            held = f" (interval holds the truth {sum(holds)} of {len(holds)})" if holds else ""
            median = statistics.median(s.seconds for s in mine)
            print(
                f"| {effect:.2f} ({timed:.3f}) | {tool} | {median:.0f} ({walls}) | {called} of {len(mine)}{held} "
                f"| {details} |"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="measure/peers", description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--effects", default="1.00,1.06,1.21")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (its logs)")
    args = parser.parse_args(argv)
    effects = [float(e) for e in args.effects.split(",")]
    tools = [t for t in args.tools.split(",") if t]
    header()
    work = Path(tempfile.mkdtemp(prefix="peers-"))
    env = {**os.environ, "HOME": str(work / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    (work / "home").mkdir()
    print(f"# work folder {work}; asv {_version(env)}; floor/factor {FLOOR}; {args.trials} trials; tools {tools}")
    repo = work / "standin"
    write_project(repo, work / "asv")
    asv_machine(env, repo, work / "asv.log")
    said: list[Said] = []
    timed_apart: dict[float, list[float]] = {e: [] for e in effects}
    try:
        base, head = pull_request(repo, "warm-up", 1.0)
        for tool in tools:
            first = one(tool, repo, base, head, 1.0, 1.0, work, env, warm=True)
            print(f"warm-up {tool}: {first.seconds:.0f} s, {first.verdict} {first.detail}", flush=True)
        for trial in range(args.trials):
            for k, effect in enumerate(effects):
                base, head = pull_request(repo, f"t{trial}-e{k}", effect)
                apart = true_effect(repo, base, head)
                timed_apart[effect].append(apart)
                turn = (trial + k) % len(tools)
                for tool in tools[turn:] + tools[:turn]:
                    s = one(tool, repo, base, head, effect, effect, work, env)  # the truth: planted by construction
                    said.append(s)
                    print(
                        f"trial {trial + 1} effect {effect:.2f} (timed apart {apart:.3f}) {tool}: {s.seconds:.0f} s, "
                        f"{s.verdict} {s.detail}{'' if s.holds is None else ', holds' if s.holds else ', MISSES'}",
                        flush=True,
                    )
        summary(said, effects, timed_apart)
    finally:
        if args.keep:
            print(f"# kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _version(env: dict[str, str]) -> str:
    return subprocess.run([asv(env), "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
