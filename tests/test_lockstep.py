"""Lockstep `daskbench ab` end to end on real local clusters: one session per side measuring in
turn, rounds until decided; a planted slowdown is regressed, an A/A group is clean, Ctrl-C keeps
the finished rounds, and the two sides can be two interpreters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from daskbench.ab.sessions import Side, check_sides_differ
from daskbench.ab.turns import case_key
from daskbench.errors import DaskbenchError
from daskbench.judge.compare import compare_group, group_rounds
from daskbench.store import Store

#: Two cases: ``sleepy`` sleeps 0.3 s x $DASKBENCH_TEST_SLOWDOWN (a slowdown planted on one side)
#: and ``steady`` does not, so one comparison has a changed and an unchanged case.
BENCH_FILE = """
import os
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _work(seconds):
    time.sleep(seconds)
    return 1


def test_sleepy(measure):
    seconds = 0.3 * float(os.environ.get("DASKBENCH_TEST_SLOWDOWN", "1"))
    assert measure(dask.delayed(_work)(seconds), name="sleepy", params={}) == 1


def test_steady(measure):
    assert measure(dask.delayed(_work)(0.3), name="steady", params={}) == 1
"""
SESSION = ["--", "--workers", "1", "--saturation", "inf"]


@pytest.fixture(scope="module")
def bench_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lockstep")
    (folder / "test_bench.py").write_text(BENCH_FILE)
    return folder


def _ab(folder: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "daskbench", "ab", "--db", db, "--format", "json", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


def _runtime_verdicts(stdout: str) -> dict[str, dict[str, object]]:
    found = json.loads(stdout)["verdicts"]
    return {str(v["workload"]): v for v in found if v["metric"] == "runtime_s"}


def test_case_keys_name_the_benchmark_its_params_and_its_place_in_the_sweep() -> None:
    assert case_key("test_a.py", "test_x", {"n": 2, "kind": "p2p"}, 1) == "test_a.py::test_x[kind='p2p',n=2]#1"


def _second_interpreter(folder: Path) -> Path:
    """A real second virtualenv (its own python and prefix) that sees this one's packages."""
    venv = folder / "venv-b"
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = sysconfig.get_paths()["purelib"]
    found = list((venv / "lib").glob("python3*/site-packages"))
    (found[0] / "daskbench-parent.pth").write_text(purelib + "\n" + str(Path(__file__).resolve().parents[1]) + "\n")
    return venv / "bin" / "python"


def test_lockstep_finds_the_planted_slowdown_and_leaves_the_untouched_case_unchanged(bench_folder: Path) -> None:
    """B, a second interpreter, runs the sleepy case 1.5x slower: regressed within a few rounds;
    steady: unchanged; one run per side, each tagged with its interpreter."""
    python_b = _second_interpreter(bench_folder)
    db = f"sqlite:///{bench_folder / 'slow.db'}"
    done = _ab(bench_folder, db, "--group", "slow", "--b-python", str(python_b),
               "--b-env", "DASKBENCH_TEST_SLOWDOWN=1.5", *SESSION)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ab: mode lockstep" in done.stderr and "decided after" in done.stderr
    verdicts = _runtime_verdicts(done.stdout)
    assert verdicts["sleepy"]["verdict"] == "regressed" and 1.3 < float(verdicts["sleepy"]["ratio"]) < 1.7
    assert verdicts["steady"]["verdict"] == "unchanged"
    assert "decided after" in str(verdicts["sleepy"]["note"])
    runs = Store(db).runs()
    assert {run.tags["ab_side"]: run.tags["ab_python"] for run in runs} == {"A": sys.executable, "B": str(python_b)}
    assert {run.tags["ab_mode"] for run in runs} == {"lockstep"}


def test_lockstep_a_a_group_with_exactly_n_rounds_is_clean_and_measures_each_case_n_times(bench_folder: Path) -> None:
    db = f"sqlite:///{bench_folder / 'aa.db'}"
    done = _ab(bench_folder, db, "--group", "aa", "--rounds", "4", *SESSION)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert {v["verdict"] for v in _runtime_verdicts(done.stdout).values()} <= {"unchanged", "inconclusive"}
    store = Store(db)
    counts = {run.tags["ab_side"]: len(store.measurements([run.run_id])) for run in store.runs()}
    assert counts == {"A": 8, "B": 8}
    assert "4 rounds, as asked" in done.stderr


def test_ctrl_c_in_lockstep_keeps_the_finished_rounds_judgeable(bench_folder: Path) -> None:
    """SIGINT once a few rounds are stored: exit 130, the hint, and compare --ab judges what was kept."""
    db = f"sqlite:///{bench_folder / 'stop.db'}"
    command = [sys.executable, "-m", "daskbench", "ab", "--db", db, "--group", "stop", "--rounds", "20", *SESSION]
    child = subprocess.Popen(command, cwd=bench_folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ})  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and _stored(db) < 6:
        time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=180)
    assert child.returncode == 130 and "daskbench compare --ab stop" in err
    store = Store(db)
    assert len(group_rounds(store, "stop")) == 1
    (runtime,) = [v for v in compare_group(store, "stop").verdicts if v.metric == "runtime_s"]
    assert len(runtime.baseline_values) >= 2 and "round" in runtime.note


def _stored(db: str) -> int:
    path = Path(db.removeprefix("sqlite:///"))
    if not path.exists():
        return 0
    try:
        return len(Store(db, create=False).measurements())
    except Exception:
        return 0


def test_sides_told_apart_only_by_a_variable_a_flag_overrides_are_refused() -> None:
    """--b-env DASKBENCH_SATURATION=inf with --saturation 1.1 after --: both sides would run 1.1."""
    sides = {"A": Side("A"), "B": Side("B", env={"DASKBENCH_SATURATION": "inf"})}
    with pytest.raises(DaskbenchError, match=r"--saturation after -- overrides it on both"):
        check_sides_differ(sides, ["-k", "array", "--saturation", "1.1"])
    check_sides_differ(sides, ["-k", "array"])  # the variable decides: fine
    check_sides_differ({"A": Side("A"), "B": Side("B")}, ["--saturation", "1.1"])  # an A/A check on purpose


TWINS = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_first(measure):
    measure(dask.delayed(sum)([1, 2]), name="same", params={})


def test_second(measure):
    measure(dask.delayed(sum)([1, 2]), name="same", params={})
"""


def test_a_case_a_side_cannot_measure_does_not_stall_the_comparison(tmp_path: Path) -> None:
    """The second test measures the first one's case (refused after its turn was given, before any
    measurement): the comparison moves on and ends, judging the first case."""
    (tmp_path / "test_twins.py").write_text(TWINS)
    db = f"sqlite:///{tmp_path / 'twins.db'}"
    done = _ab(tmp_path, db, "--group", "twins", "--rounds", "3", *SESSION)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "ended this case without a measurement" in done.stderr
    assert {v["workload"] for v in json.loads(done.stdout)["verdicts"]} == {"same"}
