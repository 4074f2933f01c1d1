"""Infrastructure failures are the cluster's, never the workload's (issue 20, class 2), on real parts:
a real `dask scheduler` killed by SIGKILL mid-session, a real worker process killed mid-task."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import dask
import psutil
import pytest

from daskbench.clusters import local, open_cluster
from daskbench.judge.compare import compare_runs
from daskbench.model import ClusterSpec, Measurement
from daskbench.store import Store, runstatus
from tests.helpers import add_results, add_run, daskbench_cli, make_case, run_pytest, scheduler_and_worker, wait_for

#: distributed's lost-worker-timeout in the restart test: a SpecCluster's check comes this long after a removal.
LOST_WORKER_TIMEOUT = 2.0
#: How long the measurement the lost scheduler cuts short would take: the session must end long before.
CUT_SECONDS = 120
#: ``first`` measures, ``cut`` is cut short by the lost scheduler (killed while it sleeps, or by the
#: test itself just before it measures), ``after`` must never run. A task writes its worker's pid to its
#: marker (whole, by a rename) as it starts; the kill writes the time it was sent to ``$MARK.killed``.
LOST_BENCH = f"""
import os
import signal
import socket
import time
from pathlib import Path

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _sleep(marker, seconds):
    Path(marker + ".part").write_text(str(os.getpid()))
    os.replace(marker + ".part", marker)
    time.sleep(seconds)
    return seconds


def _refused(address):
    host, port = address.removeprefix("tcp://").rsplit(":", 1)
    with socket.socket() as probe:
        return probe.connect_ex((host, int(port))) != 0


def test_first(measure):
    assert measure(dask.delayed(_sleep)(os.environ["MARK"] + ".first", 0.1), name="first") == 0.1


def test_cut(measure):
    if os.environ.get("KILL_BEFORE"):  # lost between measurements: the scheduler is gone before this one starts
        Path(os.environ["MARK"] + ".killed").write_text(str(time.time()))
        os.kill(int(os.environ["KILL_BEFORE"]), signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not _refused(os.environ["SCHEDULER"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    measure(dask.delayed(_sleep)(os.environ["MARK"], {CUT_SECONDS}), name="cut")


def test_last(measure):
    measure(dask.delayed(_sleep)(os.environ["MARK"] + ".after", 0.1), name="after")
"""

#: One task that sleeps 2 s; the first run of it writes its worker's pid to $MARK (whole, by a rename) as it
#: starts (the test kills that worker).
WORKER_BENCH = """
import os
import time
from pathlib import Path

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _work(marker):
    if marker and not Path(marker).exists():
        Path(marker + ".part").write_text(str(os.getpid()))
        os.replace(marker + ".part", marker)
    time.sleep(2)
    return 1


def test_sleepy(measure):
    assert measure(dask.delayed(_work)(os.environ.get("MARK", "")), name="sleepy") == 1
"""


def kill_when_written(marker: Path, pid: int | None = None) -> threading.Thread:
    """A thread that SIGKILLs ``pid`` (else the pid written in ``marker``) once ``marker`` exists, written by a
    task as it starts: the kill lands inside the task. The time it was sent goes to ``marker.killed``."""

    def watch() -> None:
        wait_for(marker.exists, f"a task wrote {marker.name}")
        marker.with_name(marker.name + ".killed").write_text(str(time.time()))
        os.kill(pid or int(marker.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("when", ["mid-measurement", "before the last measurement"])
def test_a_scheduler_killed_stops_the_session_with_one_line_and_a_cluster_lost_run(tmp_path: Path, when: str) -> None:
    """SIGKILL of the `dask scheduler` while a measurement runs (or just before the last one): that
    measurement is stored as ``cluster-lost`` (not ``failed``), the one before it stays ``passed``, the
    test after it never runs, the session ends at once (long before the cut task's `CUT_SECONDS` would) with
    exit 2 and one line naming the scheduler's address and what to do, no traceback; the run reads
    ``cluster-lost``."""
    (tmp_path / "test_bench.py").write_text(LOST_BENCH)
    db, marker = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "cut.mark"
    with scheduler_and_worker(tmp_path) as (address, scheduler):
        env, selected = {"MARK": str(marker), "SCHEDULER": address}, ["-k", "not test_last"]  # cut is the last
        if when == "mid-measurement":
            kill_when_written(marker, scheduler.pid)
            selected = []  # a test after the cut one: pytest stops before it
        else:
            env["KILL_BEFORE"] = str(scheduler.pid)
        result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                            "--saturation", "1.1", "--repeat", "1", "--db", db, *selected, env=env)  # fmt: skip
        after_kill = time.time() - float(marker.with_name("cut.mark.killed").read_text())
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.INTERRUPTED, out[-4000:]
    assert after_kill < CUT_SECONDS, f"the session waited {after_kill:.0f} s after the kill: {out[-3000:]}"
    assert "Traceback" not in out and "AttributeError" not in out, out[-4000:]
    said = [line for line in out.splitlines() if f"daskbench: lost the scheduler at {address};" in line]
    assert len(said) == 1 and "recorded as cluster-lost" in said[0] and "dask scheduler" in said[0], out[-4000:]
    assert any(line.startswith("daskbench: cut ") and " cluster-lost " in line for line in out.splitlines())
    assert "daskbench: after" not in out and not (tmp_path / "cut.mark.after").exists()
    store = Store(db)
    outcomes = {store.cases([m.fingerprint])[m.fingerprint].workload: m.outcome for m in store.measurements()}
    assert outcomes == {"first": "passed", "cut": "cluster-lost"}
    (run,) = store.runs()
    assert runstatus.statuses(store, [run]) == {run.run_id: runstatus.CLUSTER_LOST}


def test_a_cluster_lost_measurement_is_never_judged(store: Store) -> None:
    """Against a baseline that passed, a candidate whose case lost its cluster is one ``inconclusive``
    row saying so (never a slowdown or newly-failing); a repeat lost beside passed ones is set aside
    and the rest judged; the comparison's notes count what was not judged."""
    case, other = make_case("shuffle", size="small"), make_case("wordcount", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    for run, outcome in ((base, "passed"), (cand, "cluster-lost")):
        add_results(store, run, case, 10.0, outcome=outcome)
    add_results(store, base, other, 10.0)
    add_results(store, cand, other, 10.0, noise=(0.0, 0.01))
    store.add_measurement(Measurement(cand.run_id, other.fingerprint, 2, "cluster-lost", "lost the scheduler"))
    comparison = compare_runs(store, baseline=base.run_id)
    assert not comparison.regressions
    (lost,) = [v for v in comparison.verdicts if v.workload == "shuffle"]
    assert lost.verdict == "inconclusive" and "cluster-lost x3 in 3 of 3 repeats" in lost.note
    assert {v.verdict for v in comparison.verdicts if v.workload == "wordcount"} <= {"unchanged", "inconclusive"}
    assert any("not judged: 4 candidate measurements (cluster-lost x4)" in note for note in comparison.notes)


def test_a_worker_killed_mid_task_is_worker_lost_and_kept_out_of_verdicts(tmp_path: Path) -> None:
    """SIGKILL of the worker process running the task (not for memory): its nanny restarts it, the task
    re-runs and the result comes, but the measurement is ``worker-lost`` (progress line, stored row,
    ``show``), its runtime kept, one restart counted; ``compare`` sets it aside (inconclusive, exit 0)
    and judges it as the workload's failure only with --include-worker-loss (newly-failing, exit 1)."""
    (tmp_path / "test_bench.py").write_text(WORKER_BENCH)
    db, marker = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "worker.mark"
    session = ["-m", "benchmark", "-p", "no:benchmark", "--cluster", "local", "--workers", "1",
               "--threads-per-worker", "1", "--memory-per-worker", "1GiB", "--saturation", "1.1", "--repeat", "1",
               "--db", db]  # fmt: skip
    base = run_pytest(tmp_path, *session, "--label", "base")
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    kill_when_written(marker)
    cand = run_pytest(tmp_path, *session, "--label", "cand", env={"MARK": str(marker)})
    out = cand.stdout + cand.stderr
    assert "Traceback" not in out, out[-4000:]
    assert any(line.startswith("daskbench: sleepy ") and " worker-lost " in line for line in out.splitlines()), out
    measured = {m.run_id: m for m in Store(db).measurements()}
    (lost,) = [m for m in measured.values() if m.outcome == "worker-lost"]
    assert lost.worker_restarts == 1 and lost.runtime_s is not None and lost.runtime_s >= 2.0
    assert "not for memory" in lost.message
    shown = daskbench_cli("show", lost.run_id[:8], "--db", db)
    assert "worker-lost" in shown.stdout, shown.stdout + shown.stderr
    base_id = next(run_id for run_id in measured if run_id != lost.run_id)
    judged = daskbench_cli("compare", "--db", db, "--baseline", base_id, "--candidate", lost.run_id)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "inconclusive" in judged.stdout and "--include-worker-loss" in judged.stdout
    asked = daskbench_cli("compare", "--db", db, "--baseline", base_id, "--candidate", lost.run_id,
                          "--include-worker-loss")  # fmt: skip
    assert asked.returncode == 1 and "newly-failing" in asked.stdout, asked.stdout + asked.stderr


@pytest.mark.parametrize(("backend", "target"), [("local", ""), ("class", "distributed:LocalCluster")])
def test_restarts_in_a_row_keep_the_workers_of_a_cluster_the_harness_started(backend: str, target: str) -> None:
    """A SpecCluster closes a worker for good when it is still gone ``lost-worker-timeout`` after a
    removal; with a restart before every measurement, an earlier restart's check lands inside a later
    restart. Here that timeout is 2 s and the worker restarts back to back for 5 s: it is still there once
    the last restart's check has come (a timer of the same delay on the cluster's loop, started after the
    cluster saw that restart, has fired: the loop runs timers in deadline order)."""
    kwargs = {"dashboard_address": ":0", "threads_per_worker": 1} if backend == "class" else {}
    with dask.config.set({"distributed.deploy.lost-worker-timeout": f"{LOST_WORKER_TIMEOUT}s"}):
        opened = open_cluster(ClusterSpec(backend, 1, 1, 2**30, 1.1, target=target), kwargs)
        try:
            started = time.monotonic()
            while time.monotonic() - started < 5:
                opened.client.restart(wait_for_workers=False)
                opened.client.wait_for_workers(1, timeout=20)
            now = set(opened.client.scheduler_info()["workers"])
            wait_for(lambda: set(opened.cluster.scheduler_info["workers"]) == now, "the cluster saw the restart")
            loop, checked = opened.cluster.loop.asyncio_loop, threading.Event()
            loop.call_soon_threadsafe(loop.call_later, LOST_WORKER_TIMEOUT, checked.set)
            wait_for(checked.is_set, "the last restart's check")
            assert len(opened.client.scheduler_info()["workers"]) == 1 and len(opened.cluster.workers) == 1
        finally:
            opened.close()


# -- a scheduler out of reach for a while (a partition), workers of another dask -----------------------------------

#: One task of 2 s measured twice; the first run of it writes its worker's pid to $MARK (whole, by a rename) as
#: it starts: the scheduler is stopped then (SIGSTOP: it neither answers nor closes a connection) and continued
#: `PARTITION_S` later.
PARTITION_BENCH = WORKER_BENCH
PARTITION_S = 30.0


def stop_while_written(marker: Path, pid: int, seconds: float) -> threading.Thread:
    """A thread that SIGSTOPs ``pid`` once ``marker`` exists and SIGCONTs it ``seconds`` later: a partition."""

    def partition() -> None:
        wait_for(marker.exists, f"a task wrote {marker.name}")
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=partition, daemon=True)
    thread.start()
    return thread


def test_a_scheduler_out_of_reach_for_30_s_mid_measurement_is_not_measured_as_a_slowdown(tmp_path: Path) -> None:
    """The `dask scheduler` stopped for 30 s while a task of 2 s runs (a partition: no connection closes, nothing
    fails), then continued. That measurement was stored as passed, 30.2 s: a 15x slowdown `compare` would judge.
    Now it is stored as ``cluster-lost`` (never judged) with the silence named in one summary line; the session
    goes on (the scheduler answers again): the next repeat passes at its own 2 s, exit 0, the run finished."""
    (tmp_path / "test_bench.py").write_text(PARTITION_BENCH)
    db, marker = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "task.mark"
    with scheduler_and_worker(tmp_path) as (address, scheduler):
        partition = stop_while_written(marker, scheduler.pid, PARTITION_S)
        result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                            "--saturation", "1.1", "--repeat", "2", "--db", db, env={"MARK": str(marker)})  # fmt: skip
        partition.join(timeout=60)
    out = result.stdout + result.stderr
    assert result.returncode == 0 and "Traceback" not in out, out[-4000:]
    said = " ".join(out.split())  # summary lines wrap at 120 columns
    assert said.count(f"the scheduler at {address} did not answer for") == 1, out[-3000:]
    assert "stored as cluster-lost, the session went on" in said
    store = Store(db)
    cut, after = store.measurements()
    assert (cut.outcome, after.outcome) == ("cluster-lost", "passed") and after.runtime_s < 10
    assert "did not answer for 3" in cut.message or "did not answer for 2" in cut.message, cut.message
    (run,) = store.runs()
    assert runstatus.statuses(store, [run]) == {run.run_id: runstatus.FINISHED}


def test_a_scheduler_that_takes_connections_but_never_answers_is_one_line_at_the_start(tmp_path: Path) -> None:
    """The scheduler stopped before the session connects (a partition at the start: its port still takes the
    connection, nothing answers). The session waited with no end (distributed's client waits for an answer past its
    own timeout: over 300 s here). Now one line naming the address and what to check, within 10 s of asking; no
    traceback, no run row."""
    (tmp_path / "test_bench.py").write_text(WORKER_BENCH)
    db = tmp_path / "r.db"
    with scheduler_and_worker(tmp_path) as (address, scheduler):
        os.kill(scheduler.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                                "--saturation", "1.1", "--repeat", "1", "--db", f"sqlite:///{db}")  # fmt: skip
            seconds = time.monotonic() - started
        finally:
            os.kill(scheduler.pid, signal.SIGCONT)
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR and "Traceback" not in out, out[-3000:]
    said = [line for line in out.splitlines() if f"the scheduler at {address} takes connections but did not" in line]
    assert len(said) == 1 and "check that it runs and answers" in " ".join(out.split()), out[-3000:]
    assert seconds < 60, seconds
    assert not db.exists() or Store(f"sqlite:///{db}").runs() == []


#: Run by the worker's interpreter (``sitecustomize``): distributed reports this dask as 2023.1.0, as a worker
#: environment of an older release would.
OLD_DASK = """
import distributed.versions as versions

_real = versions._version_cached
versions._version_cached = lambda name: "2023.1.0" if name == "dask" else _real(name)
"""


@pytest.mark.filterwarnings("ignore::distributed.versions.VersionMismatchWarning")  # the mismatch is the point
def test_workers_of_another_dask_than_the_client_are_said_in_one_line_before_measuring_and_recorded(
    tmp_path: Path,
) -> None:
    """A `dask worker` whose dask is another release than the client's (a real one's version, faked: a second
    environment takes minutes): distributed's own check only warns, in a table pytest prints after the session.
    Now one daskbench line says it as the cluster opens, before the first measurement (naming the versions, where
    each runs, and the fix), the summary repeats it, and the run is tagged ``cluster_versions``."""
    (tmp_path / "test_bench.py").write_text(WORKER_BENCH)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "sitecustomize.py").write_text(OLD_DASK)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    with scheduler_and_worker(tmp_path, worker_path=str(tmp_path / "old")) as (address, _):
        result = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--cluster", address,
                            "--saturation", "1.1", "--repeat", "1", "--db", db)  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    lines = out.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith(f"daskbench: the cluster at {address} runs other")]
    measured = next(i for i, line in enumerate(lines) if line.startswith("daskbench: sleepy "))
    assert len(said) == 2 and said[0] < measured < said[1], out[-3000:]
    assert all(len(line) <= 120 for line in lines[said[0] : said[0] + 3])
    versions = f"dask 2023.1.0 on 1 worker, {dask.__version__} here"
    assert versions in " ".join(out.split()), out[-3000:]
    (run,) = Store(db).runs()
    assert run.tags["cluster_versions"] == versions


class _StuckCluster:
    """A cluster whose close runs out of time (a worker that no longer answers), its one worker a real process
    with a child of its own."""

    def __init__(self, pid: int) -> None:
        self.workers = {"w": types.SimpleNamespace(pid=pid)}
        self.asked: float | None = None

    def close(self, timeout: float | None = None) -> None:
        self.asked = timeout
        raise TimeoutError("the cluster did not close in time")


class _Client:
    status = "running"

    def close(self) -> None:
        pass


def test_a_local_cluster_that_cannot_close_in_time_has_its_worker_processes_killed_not_waited_for_forever() -> None:
    """A bisection's session stayed in ``Cluster.close`` for over an hour after its controller was stopped: the
    close is given a time limit, and then the worker processes the cluster started, and theirs, are killed."""
    grandchild = "import time; time.sleep(120)"
    worker = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; "
                               f"subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(120)"])  # fmt: skip
    wait_for(lambda: bool(psutil.Process(worker.pid).children()), "the worker's own child started", within=30)
    (child,) = psutil.Process(worker.pid).children()
    cluster = _StuckCluster(worker.pid)
    local.close(_Client(), cluster, timeout=0.5)  # type: ignore[arg-type]
    assert cluster.asked == 0.5
    assert worker.wait(timeout=10) == -signal.SIGKILL
    wait_for(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, "its child killed", within=10)
