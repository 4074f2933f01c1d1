"""What a verdict costs, measured here: ``measure/verdict-cost`` (issue 33's figures; outside .ci/run).

Two parts, each printed with the date, the machine, the versions and the CPU probe:

1. **A plain session** (``--plain``): ``pytest -m benchmark`` on N trivial cases
   (``da.ones(1000, chunks=100).sum()``, one local worker): wall time per measurement, the compute in it,
   and where the rest went (restart, warm-up, collectors), read back from the store.
2. **The bundled suite as a pull request** (``--suite``): a throw-away git project holding daskbench's
   bundled benchmarks (base), and a head whose ``tree_sum_std`` case at ``sat=inf`` on one worker is 1.20x
   slower (a sleep of a fifth of that case's runtime, measured on base first, after its compute);
   ``daskbench pr base head --budget MINUTES -- --size tiny``. Prints what pr printed (the verdict table,
   the rounds' cost, the budget used), then checks: the planted case regressed, no other case regressed,
   and how many stayed undecided. With ``--shards N``: the same pull request as a sharded check, the N shards
   (``daskbench pr base head --shard K/N --budget MINUTES``) run one after another here, each in a store of its
   own as N runners would, each exported, then ``daskbench merge`` of the N files onto pull request 1 of a loopback
   GitHub (`testing.github_server`): each shard's wall time (with N runners the check takes the longest one), the
   merged verdicts checked as above, and the one comment and status the merge wrote, as GitHub received them.
   ``--max-rounds N``: the most rounds of one case (``pr``'s own default without it). ``--only-shard K`` (with
   ``--shards N``): shard K alone, judged with the whole suite's false alarms, not merged (one runner's share, for
   a suite too long to run every shard here). ``--size SIZE``: the suite at another size (default ``tiny``).

Run from the checkout's top folder: ``measure/verdict-cost [--plain] [--suite] [--cases 100] [--budget 20]
[--shards 4 [--only-shard 1]] [--max-rounds 60] [--size tiny] [--keep]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from daskbench.lockstep.sessions import session_command
from daskbench.verdicts import Verdict

TOP = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DASKBENCH = [PYTHON, "-m", "daskbench"]
TRIVIAL = """
import dask.array as da
import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.parametrize("i", range({cases}))
def test_trivial(measure, i):
    assert measure(lambda: da.ones(1000, chunks=100).sum(), name="trivial", params={{"i": i}}) == 1000
"""
#: The cluster both sessions measure on: one local worker, saturation inf.
ONE_WORKER = ("--workers", "1", "--saturation", "inf")
#: The planted case: its test, the sweep id it is planted in, and the slowdown.
PLANTED_TEST, PLANTED_ID, PLANTED = "test_tree_sum_std", "sat=inf-workers=1", 1.20
PLANT = '''

def _slept(value, seconds):
    import time

    time.sleep(seconds)
    return value


def planted(target, request):
    """Head's planted slowdown: {seconds:.4f} s of sleep after the compute, in one case of the sweep only."""
    if "{where}" not in request.node.name:
        return target
    import dask

    return lambda: dask.delayed(_slept)(target(), {seconds:.4f})
'''
PYPROJECT = """[build-system]
requires = ["flit_core>=3.4"]
build-backend = "flit_core.buildapi"

[project]
name = "suiteab"
version = "0.1"
description = "daskbench's bundled benchmarks, as a pull request would have them"
"""


def header() -> None:
    import dask
    import distributed

    from daskbench.metrics.probe import probe_seconds

    probe = statistics.median(probe_seconds() for _ in range(5))
    sha = subprocess.run(["git", "-C", str(TOP), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    load = os.getloadavg()[0]
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} · {os.cpu_count()} cores ({cpu}) · load {load:.1f}")
    print(
        f"# python {platform.python_version()} · dask {dask.__version__} · distributed {distributed.__version__} · "
        f"daskbench {sha.stdout.strip() or '?'} · CPU probe {probe * 1000:.1f} ms"
    )


def plain(cases: int, work: Path) -> None:
    """A plain session of ``cases`` trivial measurements: its wall time and where it went."""
    (work / "test_trivial.py").write_text(TRIVIAL.format(cases=cases))
    db = f"sqlite:///{work / 'plain.db'}"
    began = time.monotonic()
    done = subprocess.run(
        session_command(PYTHON, db, "verdict-cost", ["test_trivial.py", *ONE_WORKER]),
        cwd=work,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - began
    if done.returncode != 0:
        sys.exit(f"measure/verdict-cost: the plain session failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    from daskbench.store import Store

    store = Store(db)
    run = store.latest_run()
    ms = store.measurements([run.run_id])
    phases = {
        name: statistics.mean(m.phases.get(name, 0.0) for m in ms)
        for name in ("restart", "warmup", "collectors", "compute", "cluster_start")
    }
    stamps = sorted(m.recorded_at for m in ms)
    first, last = (time.mktime(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) for t in (stamps[0], stamps[-1]))
    steady = (last - first) / max(len(ms) - 1, 1)  # seconds a measurement, first to last (start-up left out)
    print(
        f"plain session: {len(ms)} trivial measurements in {wall:.0f} s ({wall / len(ms):.2f} s each, start-up "
        f"included; cluster start {phases['cluster_start']:.1f} s)"
    )
    print(
        f"  a measurement, first to last: {steady:.2f} s, of which compute {phases['compute']:.3f} s; beyond its "
        f"compute {steady - phases['compute']:.2f} s (target <= 1 s)"
    )
    print(
        f"  phases (mean): restart {phases['restart']:.3f} s, warm-up {phases['warmup']:.3f} s, collectors "
        f"{phases['collectors']:.3f} s, compute {phases['compute']:.3f} s"
    )


def git(repo: Path, *args: str) -> str:
    author = ["-c", "user.name=verdict-cost", "-c", "user.email=ci@daskbench.invalid", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", "-C", str(repo), *author, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def planted_seconds(repo: Path, work: Path, size: str) -> float:
    """A fifth of the planted case's runtime on base at ``size``: median of 3 measurements."""
    db = f"sqlite:///{work / 'probe.db'}"
    subprocess.run(
        session_command(
            PYTHON,
            db,
            "verdict-cost",
            ["--size", size, "--repeat", "3", *ONE_WORKER, f"benchmarks/test_arrays.py::{PLANTED_TEST}"],
        ),
        cwd=repo,
        check=True,
        capture_output=True,
    )
    from daskbench.store import Store

    store = Store(db)
    runtimes = [m.runtime_s for m in store.measurements([store.latest_run().run_id]) if m.runtime_s]
    return (PLANTED - 1.0) * statistics.median(runtimes)


def project(work: Path, size: str) -> Path:
    """The throw-away project: base = the bundled benchmarks, head = one case planted 1.20x slower."""
    repo = work / "project"
    shutil.copytree(TOP / "benchmarks", repo / "benchmarks")
    (repo / "suiteab.py").write_text('"""daskbench\'s bundled benchmarks as a project."""\n')
    (repo / "pyproject.toml").write_text(PYPROJECT)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base: the bundled benchmarks")
    seconds = planted_seconds(repo, work, size)
    arrays = repo / "benchmarks" / "test_arrays.py"
    text = arrays.read_text()
    old = f"def {PLANTED_TEST}(measure, size):"
    assert old in text, f"measure/verdict-cost: {old!r} is no longer in benchmarks/test_arrays.py"
    text = text.replace(old, f"def {PLANTED_TEST}(measure, size, request):")
    text = text.replace(
        "measure(lambda: arrays.tree_sum_std(size),", "measure(planted(lambda: arrays.tree_sum_std(size), request),"
    )
    arrays.write_text(text + PLANT.format(seconds=seconds, where=PLANTED_ID))
    git(repo, "checkout", "-q", "-b", "head")
    git(repo, "commit", "-q", "-am", f"head: {PLANTED_TEST}[{PLANTED_ID}] {PLANTED:.2f}x slower")
    print(f"suite A/B: planted {seconds:.3f} s after {PLANTED_TEST}[{PLANTED_ID}]'s compute on head ({PLANTED:.2f}x)")
    return repo


def sharded(budget: float, shards: int, work: Path, rounds: list[str], size: str, only: int | None = None) -> int:
    """The pull request as ``shards`` shards, one after another (each its own store, as its own runner would
    have), exported and merged; each shard's wall time and the merged verdicts. ``only``: that shard alone, its
    own verdicts (judged with the whole suite's family, as merge would), no merge."""
    repo = project(work, size)
    walls = []
    for number in [only] if only else range(1, shards + 1):
        db = f"sqlite:///{work / f'shard-{number}.db'}"
        began = time.monotonic()
        done = subprocess.run([*DASKBENCH, "pr", "main", "head", "--repo", str(repo), "--shard", f"{number}/{shards}",
                               "--budget", f"{budget:g}m", *rounds, "--db", db, "--no-report", "--", "--size", size],
                              capture_output=True, text=True)  # fmt: skip
        walls.append((time.monotonic() - began) / 60)
        said = [line for line in done.stderr.splitlines() if line.startswith(("pr: ", "ab: part", "ab: 1", "ab: 2"))]
        print(f"shard {number}/{shards}: exit {done.returncode}, {walls[-1]:.1f} min", *said, sep="\n  ")
        if done.returncode not in (0, 1, 3):
            print(done.stderr[-3000:])
            return 2
        subprocess.run([*DASKBENCH, "export", "--db", db, "-o", str(work / "shards" / f"shard-{number}.jsonl")],
                       check=True, capture_output=True)  # fmt: skip
    if only:
        return _judged(_shard_verdicts(work, only), budget, walls[0], one_shard=True)
    merged_db = f"sqlite:///{work / 'merged.db'}"
    merged = _merged_on_github(repo, work, merged_db)
    print("\n".join(line for line in merged.stderr.splitlines() if line.startswith("merge: ")))
    shown = ", ".join(f"{wall:.1f}" for wall in walls)
    print(f"shards: wall minutes {shown}; with {shards} runners the check takes the longest, {max(walls):.1f} min "
          f"(one after another here: {sum(walls):.1f} min); merge exit {merged.returncode}")  # fmt: skip
    return _judged(_group_verdicts(merged_db), budget, sum(walls))


def _merged_on_github(repo: Path, work: Path, db: str) -> subprocess.CompletedProcess[str]:
    """``daskbench merge`` of the shards' files onto pull request 1 of a loopback GitHub; prints the comment and
    the head's status as the stand-in received them."""
    from testing.github_server import FakeGitHub, serve

    fake = FakeGitHub()
    fake.add_pull(1, "suite A/B: tree_sum_std 1.20x slower")
    server = serve(fake)
    environ = {**os.environ, "GITHUB_TOKEN": "verdict-cost-loopback-token",
               "DASKBENCH_GITHUB_API": f"http://127.0.0.1:{server.server_port}"}  # fmt: skip
    try:
        command = [*DASKBENCH, "merge", str(work / "shards"), "--repo", str(repo), "--db", db, "--github", "suite/ab",
                   "--pr", "1"]  # fmt: skip
        merged = subprocess.run(command, capture_output=True, text=True, env=environ)
    finally:
        server.shutdown()
    comments, statuses = fake.comments.get(1, []), [s for found in fake.statuses.values() for s in found]
    print(f"merge exit {merged.returncode}; loopback GitHub: {len(comments)} comment body(ies) on pull request 1, "
          f"statuses {[(s.get('state'), s.get('description')) for s in statuses]}")  # fmt: skip
    print(comments[-1] if comments else merged.stdout)
    return merged


def suite(budget: float, work: Path, rounds: list[str], size: str) -> int:
    repo = project(work, size)
    db = f"sqlite:///{work / 'suite.db'}"
    began = time.monotonic()
    done = subprocess.run(
        [
            *DASKBENCH,
            "pr",
            "main",
            "head",
            "--repo",
            str(repo),
            "--budget",
            f"{budget:g}m",
            *rounds,
            "--db",
            db,
            "--report",
            str(work / "report.html"),
            "--",
            "--size",
            size,
        ],
        capture_output=True,
        text=True,
    )
    minutes = (time.monotonic() - began) / 60
    print(done.stdout)
    print("\n".join(line for line in done.stderr.splitlines() if line.startswith(("pr: ", "ab: part", "budget"))))
    if done.returncode not in (0, 1, 3):
        print(done.stderr[-3000:])
        return 2
    return _judged(_group_verdicts(db), budget, minutes)


def _judged(judged: Iterable[Verdict], budget: float, minutes: float, one_shard: bool = False) -> int:
    """The planted case regressed, no other case regressed, and how many stayed undecided: printed; 0 when so
    (one shard alone: 0 when no case regressed)."""
    verdicts = _runtime_verdicts(judged)
    planted = [v for v in verdicts if v["planted"]]
    others = [v for v in verdicts if v not in planted]
    wrong = [v["test"] for v in others if v["verdict"] in ("regressed", "newly-failing")]
    undecided = [v["test"] for v in verdicts if v["verdict"] == "inconclusive"]
    print(
        f"suite A/B: {len(verdicts)} cases in {minutes:.1f} min (budget {budget:g} min); planted case: "
        f"{planted[0]['verdict'] if planted else 'not measured'}; other cases regressed: {len(wrong)}; "
        f"undecided: {len(undecided)}"
    )
    for name in wrong:
        print(f"  regressed although not planted: {name}")
    if one_shard:
        return 0 if not wrong and (not planted or planted[0]["verdict"] == "regressed") else 1
    return 0 if planted and planted[0]["verdict"] == "regressed" and not wrong else 1


def _shard_verdicts(work: Path, number: int) -> tuple[Verdict, ...]:
    """Shard ``number``'s verdicts alone, judged as ``daskbench merge`` judges a shard (`merge.judge`: with the whole
    suite's false alarms counted together), from its store and the export file it wrote."""
    from daskbench.shards import merge
    from daskbench.store import Store

    source = work / "shards" / f"shard-{number}.jsonl"
    (group,) = merge.shard_groups(source.read_text().splitlines(), str(source))
    return merge.judge(Store(f"sqlite:///{work / f'shard-{number}.db'}"), {number: group}).verdicts


def _group_verdicts(db: str) -> list[Verdict]:
    """Every lockstep group's verdicts in ``db`` (shards merged into one store: each judged with the whole suite's
    family of false alarms, as ``daskbench merge`` judges them)."""
    from daskbench.judge import suite
    from daskbench.judge.compare import compare_group
    from daskbench.store import Store

    store = Store(db)
    groups = sorted({run.tags["ab_group"] for run in store.runs() if run.tags.get("ab_group")})
    family = suite.family_size(len(store.cases()), suite.metrics_judged()) if len(groups) > 1 else 1
    return [verdict for group in groups for verdict in compare_group(store, group, family=family).verdicts]


def _runtime_verdicts(verdicts: Iterable[Verdict]) -> list[dict[str, object]]:
    """The runtime verdicts: each case's label, verdict and whether it is the planted one."""
    import math

    from daskbench.judge.format import case_label

    found = []
    for v in verdicts:
        if v.metric != "runtime_s":
            continue
        saturation = float(v.cluster.get("worker_saturation") or 0)
        planted = v.workload == "tree_sum_std" and math.isinf(saturation) and v.cluster.get("n_workers") == 1
        found.append({"test": case_label(v.workload, v.params, v.cluster), "verdict": v.verdict, "planted": planted})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(prog="measure/verdict-cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", action="store_true", help="only the plain session")
    parser.add_argument("--suite", action="store_true", help="only the suite A/B")
    parser.add_argument("--cases", type=int, default=100, help="trivial cases of the plain session (default 100)")
    parser.add_argument("--budget", type=float, default=20.0, help="minutes for the suite A/B (default 20)")
    parser.add_argument("--shards", type=int, default=0, help="the suite A/B as N shards, each with the budget")
    parser.add_argument("--max-rounds", type=int, help="the most rounds of one case (default: pr's)")
    parser.add_argument("--keep", action="store_true", help="keep the stores (for measure/suite-alarms), say where")
    parser.add_argument("--size", default="tiny", help="the suite's size (default tiny)")
    parser.add_argument("--only-shard", type=int, metavar="K", help="with --shards N: shard K alone, not merged")
    args = parser.parse_args()
    both = not args.plain and not args.suite
    header()
    work = Path(tempfile.mkdtemp(prefix="verdict-cost-"))
    try:
        if args.plain or both:
            plain(args.cases, work)
        rounds = ["--max-rounds", str(args.max_rounds)] if args.max_rounds else []
        if args.shards:
            return sharded(args.budget, args.shards, work, rounds, args.size, args.only_shard)
        return suite(args.budget, work, rounds, args.size) if args.suite or both else 0
    finally:
        if args.keep:
            print(f"measure/verdict-cost: the stores are kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
