"""Ctrl-C and SIGTERM stop everything a run of the harness's tests started: a pytest plugin (tests/conftest.py
loads it through ``pytest_plugins``; tests/test_stopping.py loads it into a small run of its own).

What went wrong without it (issue 32), under ``pytest -n auto --dist loadfile``:

- SIGTERM to the main pytest killed it at once; its pytest-xdist workers, and the benchmark sessions, clusters
  and CPU burners their tests had started, ran on, orphaned;
- SIGINT to the workers alone (or to the main process, which then stopped them): each worker ended its session
  as interrupted and pytest-xdist *replaced* it ("replacing crashed worker"), so tests kept starting;
- a test's ``subprocess.run`` kills its child with SIGKILL when interrupted, so the child's own children (a
  benchmark session's dask workers, ``daskbench ab``'s two sessions, started in sessions of their own) are left.

So every pytest process of a run (the main one, each worker, or the only one without ``-n``) treats SIGINT and
SIGTERM alike, as Ctrl-C: the first is a KeyboardInterrupt (pytest tears down, fixtures stop their servers) and
is passed on as SIGINT to the workers, later ones are not (the teardown is not cut). Each process notes, at the
signal, every process below it; after its session it ends those still alive (SIGTERM, then SIGKILL after a few
seconds). The main process also ends every process that carries its run's mark (`MARK`, an environment
variable every process started under it inherits): a server started through a detaching launcher (``pg_ctl``)
is found that way. An interrupted worker stops the whole run instead of being replaced. Nothing happens to a
run that is not interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from typing import Any

import psutil
import pytest

#: The ids of the test runs a process was started under, ``:``-separated (a run inside a run adds its own).
MARK = "HARNESS_TEST_RUN"
#: Seconds the processes left after a session get between SIGTERM and SIGKILL.
GRACE_SECONDS = 5.0


class Stopper:
    """One pytest process's part: the signal handlers, what was running below it at the signal, the ending."""

    def __init__(self, run_id: str, main: bool) -> None:
        self.run_id, self.main = run_id, main
        self.signalled = 0
        #: pid -> create time of every process below this one when a signal came (they may be orphans by the end).
        self.seen: dict[int, float] = {}

    def install(self) -> None:
        """SIGINT and SIGTERM to `interrupt` (only the main thread may set handlers: elsewhere, nothing changes)."""
        with contextlib.suppress(ValueError):
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.interrupt(signal.Signals(signum).name)

    def interrupt(self, why: str) -> None:
        """Note what runs below; pass SIGINT on to the workers (the main process); a KeyboardInterrupt the first
        time only, so a second signal (the terminal's and the main process's both reach a worker) cannot cut the
        teardown of the first."""
        self.signalled += 1
        self.seen.update(below(os.getpid()))
        if self.signalled > 1:
            return
        if self.main:
            for child in psutil.Process().children():
                with contextlib.suppress(psutil.Error):
                    child.send_signal(signal.SIGINT)
        raise KeyboardInterrupt(why)

    def end_leftovers(self) -> list[str]:
        """After an interrupted session: end every process noted at the signal, below this one now, or (the main
        process) marked with this run; SIGTERM, then SIGKILL those alive after `GRACE_SECONDS`. Their command
        lines, for the log."""
        if not self.signalled:
            return []
        found = {**self.seen, **below(os.getpid())}
        if self.main:
            found.update(marked(self.run_id))
        alive = [process for pid, started in found.items() if (process := same_process(pid, started)) is not None]
        said = [describe(process) for process in alive]
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, still = psutil.wait_procs(alive, timeout=GRACE_SECONDS)
        for process in still:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(still, timeout=GRACE_SECONDS)
        return said


def below(pid: int) -> dict[int, float]:
    """Every process below ``pid`` (children, theirs, ...): pid -> create time."""
    found: dict[int, float] = {}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                found[child.pid] = child.create_time()
    return found


def marked(run_id: str) -> dict[int, float]:
    """Every process (but this one) whose environment names ``run_id`` in `MARK`: pid -> create time."""
    found: dict[int, float] = {}
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.pid != os.getpid() and run_id in process.environ().get(MARK, "").split(":"):
                found[process.pid] = process.create_time()
    return found


def same_process(pid: int, started: float) -> psutil.Process | None:
    """The process ``pid`` if it is the one that started at ``started`` and is not a zombie; else None."""
    try:
        process = psutil.Process(pid)
        return (
            process if abs(process.create_time() - started) < 1 and process.status() != psutil.STATUS_ZOMBIE else None
        )
    except psutil.Error:
        return None


def describe(process: psutil.Process) -> str:
    try:
        return f"{process.pid} {' '.join(process.cmdline())[:100]}"
    except psutil.Error:
        return str(process.pid)


STOPPER_KEY = pytest.StashKey[Stopper]()


def pytest_configure(config: pytest.Config) -> None:
    """The main process (or the only one) names the run in `MARK`; a worker has it from the main process."""
    main = not hasattr(config, "workerinput")
    if main:
        run_id = uuid.uuid4().hex[:12]
        os.environ[MARK] = ":".join(filter(None, [os.environ.get(MARK, ""), run_id]))
    else:
        run_id = os.environ.get(MARK, "").rsplit(":", 1)[-1]
    stopper = Stopper(run_id, main)
    stopper.install()
    config.stash[STOPPER_KEY] = stopper


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The handlers again before each test: a benchmark session run in this process (pytester) sets its own."""
    stopper = item.config.stash.get(STOPPER_KEY, None)
    if stopper is not None:
        stopper.install()


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # pytest-xdist's hook: absent without the test tools
def pytest_testnodedown(node: Any, error: object) -> None:
    """A worker interrupted on its own (a signal to it alone) stops the run: pytest-xdist would start another."""
    output = getattr(node, "workeroutput", None) or {}
    if error == "keyboard-interrupt" or output.get("exitstatus") == pytest.ExitCode.INTERRUPTED:
        stopper = node.config.stash.get(STOPPER_KEY, None)
        if stopper is not None and not stopper.signalled:
            stopper.interrupt(f"worker {getattr(getattr(node, 'gateway', None), 'id', node)} was interrupted")


def pytest_unconfigure(config: pytest.Config) -> None:
    stopper = config.stash.get(STOPPER_KEY, None)
    if stopper is None:
        return
    ended = stopper.end_leftovers()
    if ended:
        print(f"interrupted: ended {len(ended)} processes the tests had left, e.g. {ended[0]}"[:120], file=sys.stderr)
