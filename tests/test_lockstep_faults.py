"""Lockstep `daskbench ab` under faults, made for real (issue 35).

A side that cannot start (not a python, a dask that does not import, a session that fails at once) is one
daskbench line naming the side, the cause in the session's own words and its log, and leaves no run row; a
side's session SIGKILLed mid-comparison, Ctrl-C of ``ab`` and ``ab`` itself SIGKILLed each leave what was
measured stored and judgeable, every run in a status that says what happened, and no process of either
side behind. The control channel is tested with scripted sides (real processes on the real socket, no
cluster): what a side says that is not the protocol is one line, never a traceback or a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from daskbench.errors import DaskbenchError
from daskbench.judge.sequential import Question
from daskbench.lockstep import turns
from daskbench.lockstep.engine import Lockstep
from daskbench.lockstep.sessions import Side, session_command
from daskbench.store import Store, runstatus
from tests.helpers import LOCKSTEP_SESSION, daskbench_cli, wait_for

# -- a side that cannot start --------------------------------------------------------------------


def _errors(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    assert not [line for line in stderr.splitlines() if line.startswith(("  A|", "  B|"))], stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _no_runs(db: Path) -> bool:
    return not db.exists() or Store(f"sqlite:///{db}", create=False).runs() == []


def test_a_side_whose_interpreter_is_not_python_is_refused_before_any_session_and_nothing_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--b-python /bin/true`` (it runs, exits 0 and says nothing): one line naming side B and what it is not,
    before any session starts, so no run row of side A either."""
    db = tmp_path / "ab.db"
    done = daskbench_cli("ab", "--db", str(db), "--b-python", "/bin/true", *LOCKSTEP_SESSION, capsys=capsys)
    assert done.returncode == 2
    (line,) = _errors(done.stderr)
    assert line.startswith("error: side B: --b-python /bin/true is not a python that can run daskbench"), line
    assert _no_runs(db)


def test_a_side_whose_dask_does_not_import_is_one_line_naming_the_import_before_any_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Side B's variables put a broken ``dask`` first on its path: one line naming side B, dask and the
    import's own error with the fix, not a page of that side's pytest output; nothing stored."""
    broken = tmp_path / "broken" / "dask"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this dask was broken on purpose')\n")
    db = tmp_path / "ab.db"
    done = daskbench_cli("ab", "--db", str(db), "--b-env", f"PYTHONPATH={broken.parent}", *LOCKSTEP_SESSION,
                         capsys=capsys)  # fmt: skip
    assert done.returncode == 2
    (line,) = _errors(done.stderr)
    assert line.startswith(f"error: side B: --b-python {sys.executable} cannot import dask (ImportError: this dask")
    assert line.endswith("install it there: " + f"{sys.executable} -m pip install dask")
    assert _no_runs(db)


def _refused(folder: Path, db: Path, b_env: str) -> list[str]:
    """``daskbench ab`` in ``folder`` with side B's variable ``b_env``, expected to end at once with exit 2:
    its error lines."""
    done = subprocess.run(
        [sys.executable, "-m", "daskbench", "ab", "--db", str(db), "--b-env", b_env, *LOCKSTEP_SESSION],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    return _errors(done.stderr)


def test_a_side_whose_session_fails_at_start_is_one_line_with_its_words_and_log_and_no_run_row(
    bench_folder: Path,
) -> None:
    """Side B's session refuses a bad setting (pytest's usage error, exit 4) while A's waits for the plan:
    one line, first, naming side B, pytest's own ERROR line and B's log; A is stopped before it measured,
    so neither side left a run row."""
    db = bench_folder / "fails-at-start.db"
    (line,) = _refused(bench_folder, db, "DASKBENCH_TIMEOUT=soon")
    assert "side B's session ended before it could measure (pytest exit 4: ERROR:" in line, line
    assert "DASKBENCH_TIMEOUT" in line and "its log: " in line and line.endswith("B.log")
    assert _no_runs(db)


def test_ab_where_there_is_no_benchmark_says_where_to_run_it(tmp_path: Path) -> None:
    """A folder with no benchmark (pytest exit 5 on a side): one line saying to run it where the benchmarks
    are or to name them after --, not only pytest's exit code."""
    db = tmp_path / "none.db"
    (line,) = _refused(tmp_path, db, "DASKBENCH_TEST_SLOWDOWN=1.5")
    assert "session found no benchmark to measure (pytest exit 5)" in line and "name them after --" in line, line


# -- a side killed, ab interrupted, ab killed ------------------------------------------------------------


def _ab(folder: Path, db: Path, group: str) -> subprocess.Popen[str]:
    """``daskbench ab`` of 20 exact rounds on the lockstep suite, in the background."""
    command = [sys.executable, "-m", "daskbench", "ab", "--db", str(db), "--format", "json", "--group", group,
               "--rounds", "20", *LOCKSTEP_SESSION]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stored(db: Path) -> int:
    try:
        return len(Store(f"sqlite:///{db}", create=False).measurements()) if db.exists() else 0
    except Exception:  # the store is being created by the sessions
        return 0


def _sides(ab: subprocess.Popen[str]) -> dict[str, psutil.Process]:
    """Each side's pytest session (a child of ``ab`` whose environment names its side)."""
    found = {}
    for child in psutil.Process(ab.pid).children():
        try:
            side = child.environ().get("DASKBENCH_AB_SIDE")
        except psutil.Error:
            continue
        if side:
            found[side] = child
    return found


def _descendants(ab: subprocess.Popen[str]) -> list[psutil.Process]:
    return psutil.Process(ab.pid).children(recursive=True)


def _gone(processes: list[psutil.Process]) -> Callable[[], bool]:
    return lambda: not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _statuses(db: Path, group: str) -> dict[str, str]:
    store = Store(f"sqlite:///{db}", create=False)
    runs = [run for run in store.runs() if run.tags.get("ab_group") == group]
    found = runstatus.statuses(store, runs)
    return {run.tags["ab_side"]: found[run.run_id] for run in runs}


def test_a_side_killed_mid_comparison_is_one_line_and_what_was_measured_stays_judgeable(
    bench_folder: Path,
) -> None:
    """SIGKILL of side B's session after a few rounds: ``ab`` ends with exit 2 and one line naming side B,
    the signal and its log (it used to exit 0 in silence: writing to the dead side was taken for a closed
    stdout); A's session ends on its own (its run finished, B's crashed), no process of either side is left
    (B's cluster included), both sides' measurements stay stored, and compare --group says in one line why
    the group is not judged (a crashed run never is)."""
    db = bench_folder / "killed-side.db"
    ab = _ab(bench_folder, db, "killed")
    wait_for(lambda: _stored(db) >= 6, "six measurements stored", within=300)
    everything = _descendants(ab)
    _sides(ab)["B"].send_signal(signal.SIGKILL)
    _, err = ab.communicate(timeout=300)
    assert ab.returncode == 2, err[-3000:]
    (line,) = _errors(err)
    assert "side B's session ended (killed by SIGKILL" in line and "its log: " in line, line
    wait_for(_gone(everything), "no process of either side left", within=60)
    assert _statuses(db, "killed") == {"A": runstatus.FINISHED, "B": runstatus.CRASHED}
    store = Store(f"sqlite:///{db}", create=False)
    kept = {run.tags["ab_side"]: len(store.measurements([run.run_id])) for run in store.runs()}
    assert kept["A"] >= 3 and kept["B"] >= 3, kept
    judged = daskbench_cli("compare", "--group", "killed", "--db", str(db))  # a crashed run is not judged
    assert judged.returncode == 2 and judged.stderr.count("\n") == 1 and "no complete round" in judged.stderr


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_of_ab_stops_both_sides_and_both_runs_read_interrupted(bench_folder: Path, sent: int) -> None:
    """SIGINT to ``ab`` (Ctrl-C), or SIGTERM (a cancelled CI job, ``kill PID``): exit 130 with the hint, both
    sessions stopped as pytest stops on Ctrl-C, so both runs read ``interrupted`` (never running, never
    crashed), what was measured stays, no process left."""
    group = f"stop{int(sent)}"
    db = bench_folder / f"{group}.db"
    ab = _ab(bench_folder, db, group)
    wait_for(lambda: _stored(db) >= 4, "four measurements stored", within=300)
    everything = _descendants(ab)
    ab.send_signal(sent)
    _, err = ab.communicate(timeout=300)
    assert ab.returncode == 130 and f"daskbench compare --group {group}" in err, err[-3000:]
    assert "Traceback" not in err
    wait_for(_gone(everything), "no process of either side left", within=60)
    assert _statuses(db, group) == {"A": runstatus.INTERRUPTED, "B": runstatus.INTERRUPTED}
    assert _stored(db) >= 4


def test_ab_itself_killed_leaves_no_session_running_and_no_run_reading_running(bench_folder: Path) -> None:
    """SIGKILL of ``ab`` (the controller: nobody left to give turns): both sessions see the control channel
    close, measure nothing more and end on their own within a minute, their clusters closed; both runs read
    ``interrupted`` (stopped: never ``running``, nor ``finished`` as if they had run to their end), and what was
    measured stays."""
    db = bench_folder / "killed-ab.db"
    ab = _ab(bench_folder, db, "orphans")
    wait_for(lambda: _stored(db) >= 4, "four measurements stored", within=300)
    everything = _descendants(ab)
    ab.send_signal(signal.SIGKILL)
    ab.communicate(timeout=60)
    wait_for(_gone(everything), "both sessions ended after ab was killed", within=120)
    statuses = _statuses(db, "orphans")
    assert statuses == {"A": runstatus.INTERRUPTED, "B": runstatus.INTERRUPTED}, statuses
    stored = _stored(db)
    time.sleep(2)
    assert _stored(db) == stored >= 4


# -- the control channel: scripted sides on the real socket ---------------------------------------------

#: A side's script: connect to the controller's socket, say each line of SAY in turn (JSON, or raw text),
#: reading the controller's answer after each line that asks for one (its plan, a ready), then stay connected
#: STAY seconds and leave.
SIDE = """
import os, socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["DASKBENCH_AB_CONTROL"])
stream = sock.makefile("rw", encoding="utf-8", buffering=1)
for line in {say!r}:
    stream.write(line + "\\n")
    stream.flush()
    if line.startswith(('{{"side"', '{{"ready"')):
        stream.readline()
time.sleep({stay})
"""


def _hello(side: str, *keys: str) -> str:
    return json.dumps({"side": side, "plan": list(keys)})


def _lockstep(tmp_path: Path, scripts: dict[str, list[str]], stay: float = 30.0) -> tuple[Lockstep, list[str]]:
    said: list[str] = []
    lockstep = Lockstep(
        {name: Side(name) for name in "AB"},
        command=lambda side: [sys.executable, "-c", SIDE.format(say=scripts[side.name], stay=stay)],
        environment=lambda side: dict(os.environ),
        question=Question(1.1, 5),
        max_seconds=60.0,
        log_dir=tmp_path,
        say=said.append,
    )
    return lockstep, said


def _one_line_within(lockstep: Lockstep, seconds: float) -> str:
    started = time.monotonic()
    with pytest.raises(DaskbenchError) as raised:
        lockstep.run()
    took = time.monotonic() - started
    ended = {name: child.returncode for name, child in lockstep.children.items()}
    logs = {path.name: path.read_text(errors="replace")[-500:] for path in sorted(lockstep.log_dir.glob("*.log"))}
    assert took < seconds, f"{took:.0f} s; the sides ended {ended}; their logs: {logs}"  # seen once in CI: 60 s
    assert "\n" not in str(raised.value)
    assert not [c for c in lockstep.children.values() if c.poll() is None], "a scripted side was left running"
    return str(raised.value)


def test_a_side_that_says_what_is_not_the_protocol_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """A side whose first line is not JSON (something else on the socket): one line naming it, at once; both
    sides stopped."""
    lockstep, _ = _lockstep(tmp_path, {"A": [_hello("A", "k")], "B": ["<html>not the protocol</html>"]})
    line = _one_line_within(lockstep, 20)
    assert "not daskbench's protocol" in line and "<html>" in line, line


def test_two_sides_that_both_say_they_are_a_are_one_line_at_once_not_a_ten_minute_wait(tmp_path: Path) -> None:
    """Both connections say ``side A``: one line at once (the comparison cannot tell them apart), not a wait
    of CONNECT_SECONDS for a side B that never comes."""
    lockstep, _ = _lockstep(tmp_path, {"A": [_hello("A", "k")], "B": [_hello("A", "k")]})
    line = _one_line_within(lockstep, 20)
    assert "side 'A'" in line and "twice" in line, line


@pytest.mark.parametrize("value", ["NaN", "-1.0", "Infinity", '"fast"'])
def test_a_side_that_reports_a_runtime_that_is_no_time_ends_that_case_unjudged(tmp_path: Path, value: str) -> None:
    """A turn's ``done`` with a runtime that is not a finite time (NaN, negative, infinite, text) is never
    judged: the case ends as not measured, said in one line, and the comparison moves on."""
    done = f'{{"done": "k", "round": 0, "value": {value}, "outcome": "passed"}}'
    ready = json.dumps({"ready": "k", "round": 0})
    scripts = {name: [_hello(name, "k"), ready, done] for name in "AB"}
    lockstep, said = _lockstep(tmp_path, scripts, stay=0.5)
    (result,) = lockstep.run()
    assert result.failed and result.a == [] and "measured no runtime_s" in result.stopped, said


def test_a_part_that_ended_well_leaves_no_logs_or_socket_behind_and_one_that_failed_keeps_the_logs_it_names(
    tmp_path: Path,
) -> None:
    """The sessions' logs and the control socket matter only to an error line that names them: a part that ran
    to its end removes them and their folder (nightlies left thousands of folders in the temp dir); a part that
    ended in an error keeps the logs its line points to."""
    ready = json.dumps({"ready": "k", "round": 0})
    done = '{"done": "k", "round": 0, "value": NaN, "outcome": "passed"}'
    well, _ = _lockstep(tmp_path / "well", {name: [_hello(name, "k"), ready, done] for name in "AB"}, stay=0.5)
    well.log_dir.mkdir()
    well.run()
    assert not well.log_dir.exists()
    failed, _ = _lockstep(tmp_path / "failed", {"A": [_hello("A", "k")], "B": ["<html>not the protocol</html>"]})
    failed.log_dir.mkdir()
    line = _one_line_within(failed, 20)
    assert {"A.log", "B.log"} <= {path.name for path in failed.log_dir.iterdir()}, line


def test_a_session_whose_controller_went_away_measures_nothing_more_without_an_error() -> None:
    """``ab`` killed: the session's next write meets a closed socket (BrokenPipeError before); every turn from
    then on is "no", so its remaining tests end quietly instead of erroring one by one."""
    import socket

    from daskbench.lockstep.turns import Turns

    ours, theirs = socket.socketpair()
    theirs.close()
    turns = Turns("A", ours.makefile("rw", encoding="utf-8", buffering=1))
    assert turns.wait("bench.py::test_x[]#0", 0) == 0
    assert turns.wait("bench.py::test_x[]#0", 1) == 0 and turns.gone
    ours.close()


@contextlib.contextmanager
def _at_first_turn(bench_folder: Path, db: Path, ignore_sigint: bool = False) -> Iterator[subprocess.Popen[str]]:
    """A real lockstep session of side A into ``db``, and a stand-in controller on the real socket that agrees on
    its plan; yields the session once it says ``ready`` (its cluster up, waiting for its first turn).
    ``ignore_sigint``: started as a shell's background job starts one, SIGINT ignored."""
    import socket

    path = db.with_suffix(".sock")
    env = {**os.environ, **turns.session_env(db.stem, 0, Question(1.1, 5)), turns.ENV_CONTROL: str(path),
           turns.ENV_SIDE: "A"}  # fmt: skip
    command = session_command(
        sys.executable, f"sqlite:///{db}", f"{db.stem}-A1", ["--repeat", "1", *LOCKSTEP_SESSION[1:]]
    )
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        session = subprocess.Popen(command, cwd=bench_folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=env, text=True, start_new_session=True, preexec_fn=ignore)  # fmt: skip
        server.settimeout(120)
        conn, _ = server.accept()
        with conn, conn.makefile("rw", encoding="utf-8", buffering=1) as stream:
            plan = json.loads(stream.readline())["plan"]
            stream.write(json.dumps({"plan": plan}) + "\n")
            assert "ready" in json.loads(stream.readline())
            yield session


def test_a_session_started_with_sigint_ignored_still_stops_on_sigint_and_reads_interrupted(
    bench_folder: Path, tmp_path: Path
) -> None:
    """A shell script's ``daskbench ab ... &`` starts it with SIGINT ignored, and its sessions inherit that; the
    comparison stops its sessions with SIGINT. A real lockstep session started so (as a background job's is), sent
    SIGINT at its first turn, ends within seconds and its run reads ``interrupted``, instead of running on until
    the SIGKILL 60 s later."""
    db = tmp_path / "ignored.db"
    with _at_first_turn(bench_folder, db, ignore_sigint=True) as session:
        started = time.monotonic()
        os.killpg(session.pid, signal.SIGINT)
        output, _ = session.communicate(timeout=60)
        took = time.monotonic() - started
    assert took < 20, f"{took:.0f} s after SIGINT: {output[-2000:]}"
    store = Store(f"sqlite:///{db}", create=False)
    (run,) = store.runs()
    assert runstatus.statuses(store, [run]) == {run.run_id: runstatus.INTERRUPTED}, output[-2000:]


def test_a_session_whose_controller_goes_away_mid_comparison_reads_interrupted(
    bench_folder: Path, tmp_path: Path
) -> None:
    """A real lockstep session, its controller (a stand-in on the real socket) gone after the plan and the first
    ``ready``: the session sees the channel close, measures nothing more and ends on its own, and its run reads
    ``interrupted`` (it was stopped), not ``finished`` with nothing measured (issue 45, item 5)."""
    db = tmp_path / "gone.db"
    with _at_first_turn(bench_folder, db) as session:
        pass
    output, _ = session.communicate(timeout=120)
    assert "Traceback" not in output, output[-3000:]
    store = Store(f"sqlite:///{db}", create=False)
    (run,) = store.runs()
    assert runstatus.statuses(store, [run]) == {run.run_id: runstatus.INTERRUPTED}, output[-2000:]
    assert store.measurements([run.run_id]) == []
