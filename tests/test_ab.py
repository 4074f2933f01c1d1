"""Interleaved A/B: per-round statistics with planted answers, and `daskbench ab` end to end on real clusters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daskbench.cli import main
from daskbench.errors import DaskbenchError
from daskbench.judge.compare import compare_group, group_rounds
from daskbench.judge.sequential import rounds_decision
from daskbench.lockstep.sessions import balanced_order, parse_env
from daskbench.store import Store

#: The compute phase sleeps 0.4 s x $DASKBENCH_TEST_SLOWDOWN in a task: a slowdown planted on one side.
BENCH_FILE = """
import os
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _work():
    time.sleep(0.4 * float(os.environ.get("DASKBENCH_TEST_SLOWDOWN", "1")))
    return 1


def test_sleepy(measure):
    assert measure(dask.delayed(_work)(), name="sleepy", params={}) == 1
"""
SESSION = ["--", "--workers", "1", "--saturation", "inf"]


def test_rounds_decision_finds_a_planted_slowdown_that_every_round_shows() -> None:
    """Five rounds each 1.20x slower (+-1%) are regressed, with the per-round ratios in the note."""
    a = [1.00, 1.30, 0.80, 1.10, 0.95]  # drift between rounds, which pairing cancels
    b = [x * f for x, f in zip(a, (1.20, 1.21, 1.19, 1.20, 1.22), strict=True)]
    decision = rounds_decision(a, b, 1.10)
    assert decision.verdict == "regressed" and decision.ratio == pytest.approx(1.204, abs=0.002)
    assert decision.ci_low is not None and decision.ci_low > 1.15  # a sequential interval: every look holds at once
    assert "per-round ratios 1.200, 1.210, 1.190, 1.200, 1.220" in decision.note


def test_rounds_decision_calls_a_real_but_small_change_unchanged_and_says_why() -> None:
    """A steady 1.03x over five rounds is real (interval above 1) but under the 1.10 floor."""
    a = [1.0, 1.3, 0.8, 1.1, 0.95]
    b = [x * f for x, f in zip(a, (1.03, 1.031, 1.029, 1.03, 1.032), strict=True)]
    decision = rounds_decision(a, b, 1.10)
    assert decision.verdict == "unchanged" and "smaller than the floor" in decision.note


def test_rounds_decision_with_noisy_rounds_is_inconclusive() -> None:
    """Ratios 0.9-1.3 over three rounds cannot settle a 1.10 floor either way."""
    decision = rounds_decision([1.0, 1.0, 1.0], [0.9, 1.3, 1.1], 1.10)
    assert decision.verdict == "inconclusive" and decision.ci_low is not None and decision.ci_low < 1.0


def test_rounds_decision_with_one_round_has_no_interval() -> None:
    """One round gives a point ratio only, never regressed."""
    decision = rounds_decision([1.0], [1.5], 1.10)
    assert decision.verdict == "inconclusive" and decision.ci_low is None and "1 round" in decision.note


def test_sessions_alternate_in_balanced_order() -> None:
    """ABBA: even rounds run A first, odd rounds B first; resuming starts at the given round."""
    assert balanced_order(3) == [(0, "A"), (0, "B"), (1, "B"), (1, "A"), (2, "A"), (2, "B")]
    assert balanced_order(3, start=2) == [(2, "A"), (2, "B")]


def test_side_environment_must_be_key_value() -> None:
    """A malformed --b-env item is one clear error naming the flag and an example."""
    assert parse_env(["X=1", "DASK_A__B=inf"], "--b-env") == {"X": "1", "DASK_A__B": "inf"}
    with pytest.raises(DaskbenchError, match=r"--b-env 'oops': expected KEY=VALUE"):
        parse_env(["oops"], "--b-env")


def _ab(folder: Path, db: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "daskbench", "ab", "--db", db, *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})  # fmt: skip


@pytest.fixture(scope="module")
def bench_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ab")
    (folder / "test_bench.py").write_text(BENCH_FILE)
    return folder


def test_ab_sessions_find_a_slowdown_planted_on_side_b(bench_folder: Path, quiet_machine: None) -> None:
    """Sessions mode, three interleaved rounds with B 2x slower: exit 1, runtime regressed, runs tagged by
    group/side/round. Measured time decides: on a quiet machine (`quiet_machine`). (1.5x, three sessions a side
    left the interval within the floor once beside the rest of the tests: exit 3, undecided, 2026-11-29.)"""
    db = f"sqlite:///{bench_folder / 'slow.db'}"
    done = _ab(bench_folder, db, "--mode", "sessions", "--rounds", "3", "--group", "slow", "--b-env",
               "DASKBENCH_TEST_SLOWDOWN=2", "--format", "json", *SESSION)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ab: round 3/3" in done.stderr and "left" in done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    (runtime,) = [v for v in verdicts if v["metric"] == "runtime_s"]
    assert runtime["verdict"] == "regressed" and 1.6 < runtime["ratio"] < 2.3
    assert "per-round ratios" in runtime["note"]
    listing = json.loads(subprocess.run([sys.executable, "-m", "daskbench", "runs", "--db", db, "--format", "json"],
                                        capture_output=True, text=True, check=True).stdout)["runs"]  # fmt: skip
    assert sorted((r["ab_round"], r["ab_side"]) for r in listing) == [(str(n), s) for n in range(3) for s in "AB"]
    assert sorted(r["label"] for r in listing) == ["slow-A1", "slow-A2", "slow-A3", "slow-B1", "slow-B2", "slow-B3"]
    assert {r["ab_group"] for r in listing} == {"slow"}
    assert all(r["tags"]["ab_env_keys"] == ("DASKBENCH_TEST_SLOWDOWN" if r["ab_side"] == "B" else "") for r in listing)


def test_ctrl_c_keeps_the_finished_session_rounds_judgeable(
    bench_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGINT after the first complete round: exit 130, a hint how to judge, and compare --group judges round 1."""
    db = f"sqlite:///{bench_folder / 'stop.db'}"
    command = [sys.executable, "-m", "daskbench", "ab", "--db", db, "--mode", "sessions", "--rounds", "5",
               "--group", "stop", *SESSION]  # fmt: skip
    child = subprocess.Popen(command, cwd=bench_folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (Path(db[10:]).exists() and group_rounds(Store(db), "stop")):
        time.sleep(1)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=180)
    assert child.returncode == 130 and "daskbench compare --group stop" in err
    rounds = group_rounds(Store(db), "stop")
    assert 1 <= len(rounds) < 5
    assert compare_group(Store(db), "stop").verdicts
    assert main(["compare", "--group", "stop", "--db", db]) in (0, 1)
    assert "interleaved rounds" in capsys.readouterr().out
