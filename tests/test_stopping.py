"""Ctrl-C and SIGTERM stop a run of the harness's tests within seconds, leaving no process behind (issue 32):
a small ``pytest -n 2 --dist loadfile`` run in a temporary folder, with the plugin tests/conftest.py loads
(`tests.stopping`), whose two test files start what the real tests start (benchmark sessions with their local
clusters, one through ``subprocess.run`` and one in a session of its own, a scheduler and worker from a fixture,
a stray process nobody stops); signalled as a terminal or a CI runner does once every session measures, then
the process table is read (psutil)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parent.parent
#: Seconds the run may take to end after the signal (about 15 s here on 2 busy cores; generous for CI).
ENDS_WITHIN = 90.0

#: The benchmark every session runs: its one task says it started (a file named after the session), then sleeps.
BENCH = """
import os, time
from pathlib import Path
import dask
import pytest

pytestmark = pytest.mark.benchmark


def _stall(marker):
    Path(marker).touch()
    time.sleep(600)
    return 1


def test_stall(measure):
    measure(dask.delayed(_stall)(os.environ["READY"]), name="stall", params={})
"""
SESSION = """
import os, subprocess, sys
from pathlib import Path

HERE = Path(__file__).parent


def session(name):
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "benchmark", "bench_stall.py",
               "--workers", "1", "--saturation", "inf", "--db", str(HERE / f"{name}.db")]
    return command, {**os.environ, "READY": str(HERE / "ready" / name)}
"""
#: A test of a benchmark session through subprocess.run (as tests.helpers.run_pytest), beside a fixture's servers.
WITH_SERVERS = """
import subprocess, sys
import pytest
from session import session, HERE
from tests.helpers import free_port


@pytest.fixture
def scheduler():
    port = free_port()
    started = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port),
                                 "--dashboard-address", ":0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
               subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                                 "--dashboard-address", ":0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    yield port
    for process in started:
        process.terminate()
        process.wait()


def test_a_session_beside_servers(scheduler):
    command, env = session("run")
    subprocess.run(command, env=env, cwd=HERE, capture_output=True, timeout=900)
"""
#: A test of a session started in a session of its own (as daskbench ab starts its sides), and a stray sleeper.
DETACHED = """
import subprocess, sys
from session import session, HERE


def test_a_detached_session_and_a_stray():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    command, env = session("detached")
    child = subprocess.Popen(command, env=env, cwd=HERE, stdout=subprocess.DEVNULL, start_new_session=True)
    child.wait(timeout=900)
"""


def suite(folder: Path) -> None:
    (folder / "ready").mkdir()
    (folder / "conftest.py").write_text('pytest_plugins = ["tests.stopping"]\n')
    for name, text in {"bench_stall.py": BENCH, "session.py": SESSION, "test_servers.py": WITH_SERVERS,
                       "test_detached.py": DETACHED}.items():  # fmt: skip
        (folder / name).write_text(text)


def _as_a_terminal_starts_it() -> None:
    """A shell started in the background may ignore SIGINT; a terminal's foreground job does not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def watched(main: int) -> Iterator[dict[int, tuple[float, str]]]:
    """Every process seen below ``main`` while the block runs (polled): pid -> (create time, command line)."""
    seen: dict[int, tuple[float, str]] = {}
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            try:
                children = psutil.Process(main).children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                with suppress(psutil.Error):
                    seen.setdefault(child.pid, (child.create_time(), " ".join(child.cmdline())[:100]))
            time.sleep(0.1)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


def left_behind(seen: dict[int, tuple[float, str]], probe: str) -> list[str]:
    """The processes of the run still alive (not zombies): those seen, and any whose environment has ``probe``."""
    found = []
    for process in psutil.process_iter():
        try:
            known = process.pid in seen and abs(seen[process.pid][0] - process.create_time()) < 1
            if (known or process.environ().get("STOPPING_PROBE") == probe) and process.status() != "zombie":
                found.append(f"{process.pid} {' '.join(process.cmdline())[:100]}")
        except psutil.Error:
            continue
    return found


def signal_run(run: subprocess.Popen[str], target: str) -> None:
    """SIGINT to the process group (Ctrl-C), SIGTERM to the main pytest (a cancelled job), or SIGINT to the
    workers alone."""
    if target == "Ctrl-C":
        os.killpg(run.pid, signal.SIGINT)
    elif target == "SIGTERM":
        run.send_signal(signal.SIGTERM)
    else:
        for worker in psutil.Process(run.pid).children():
            worker.send_signal(signal.SIGINT)


@pytest.mark.parametrize("target", ["Ctrl-C", "SIGTERM", "SIGINT to the workers"])
def test_a_signal_ends_the_xdist_run_within_seconds_and_leaves_no_process(tmp_path: Path, target: str) -> None:
    """Once both benchmark sessions measure: the run ends within `ENDS_WITHIN` s as interrupted (exit 2), no
    worker replaced, and nothing it started is left: not the sessions, their clusters, the fixture's scheduler
    and worker, the stray sleeper."""
    suite(tmp_path)
    probe = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STOPPING_PROBE": probe}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile"]
    run = subprocess.Popen(command, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True, preexec_fn=_as_a_terminal_starts_it)  # fmt: skip
    try:
        with watched(run.pid) as seen:
            ready = tmp_path / "ready"
            wait_for(lambda: len(list(ready.iterdir())) == 2 or run.poll() is not None, "both sessions measuring")
            assert run.poll() is None, run.communicate()[0][-3000:]
            signal_run(run, target)
            signalled = time.monotonic()
            out, _ = run.communicate(timeout=ENDS_WITHIN)
            took = time.monotonic() - signalled
        assert run.returncode == pytest.ExitCode.INTERRUPTED and "replacing crashed worker" not in out, out[-3000:]
        assert len(seen) >= 8, seen  # two workers, two sessions and their clusters' processes, the servers, the stray
        deadline = time.monotonic() + 15  # a process killed just now may take a moment to leave the table
        while left_behind(seen, probe) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left_behind(seen, probe) == [], out[-2000:]
        print(f"{target}: ended {took:.1f} s after the signal")
    finally:
        for process in psutil.process_iter():
            try:
                if process.environ().get("STOPPING_PROBE") == probe:
                    process.kill()
            except psutil.Error:
                continue


def test_the_harness_conftest_loads_without_pytest_xdist() -> None:
    """README command 1 runs in a venv without the test tools: the stopping plugin's xdist hook is optional,
    so collecting with pytest-xdist absent is no INTERNALERROR ("unknown hook 'pytest_testnodedown'")."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "--collect-only", "-q",
         "tests/test_text.py"], cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "INTERNALERROR" not in done.stdout, done.stdout[-2000:]
