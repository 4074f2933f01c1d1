"""`daskbench calibrate`: detection and false-alarm rates from sessions with planted slowdowns."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from daskbench.ab.calibrate import CALIBRATE_GROUP, CALIBRATE_ROUND, format_power, group_runs, power_table
from daskbench.model import Case, ClusterSpec, Measurement
from daskbench.store import Store
from tests.conftest import make_run

ARMS = {"base": 1.0, "aa": 1.0, "x1.05": 1.05, "x1.50": 1.50}


def _fill(store: Store, sessions: int, noise: float) -> None:
    """Sessions whose arms run at exactly their factor x a per-session drift, +-``noise`` within a session."""
    rng = random.Random(7)
    spec = ClusterSpec("local", 1, 1, 2**30, 1.1)
    for number in range(sessions):
        run = make_run(started_at=f"2026-11-01T00:{number:02d}:00+00:00", ended_at="2026-11-01T01:00:00+00:00",
                       tags={CALIBRATE_GROUP: "g", CALIBRATE_ROUND: str(number)})  # fmt: skip
        store.add_run(run)
        drift = rng.uniform(0.8, 1.25)  # sessions differ a lot; arms within one do not
        for arm, factor in ARMS.items():
            case = Case("calibration", {"arm": arm, "factor": factor}, spec)
            store.add_case(case)
            runtime = drift * factor * (1 + rng.uniform(-noise, noise))
            store.add_measurement(Measurement.of(run_id=run.run_id, fingerprint=case.fingerprint, repeat=0,
                                                 outcome="passed", runtime_s=runtime))  # fmt: skip


def test_planted_slowdowns_are_found_and_an_aa_pair_is_not(store: Store) -> None:
    """With 1% noise inside sessions and 25% between them, 1.50x is always detected at 5 rounds,
    the A/A pair never, and 1.05x (under the floor) never counts as regressed."""
    _fill(store, 20, noise=0.01)
    (row,) = power_table(store, "g", rounds=5, trials=200)
    assert row.sessions == 20 and row.false_alarms == 0.0
    assert row.detection[1.50] == 1.0 and row.detection[1.05] == 0.0
    assert row.smallest_detected == 1.50
    table = format_power([row], 5, 1.10)
    assert "false alarms" in table and "1.50x" in table and "5-round" in table


def test_too_few_sessions_give_no_rate(store: Store) -> None:
    """Rates need at least as many sessions as rounds; with fewer the table says '-'."""
    _fill(store, 3, noise=0.01)
    (row,) = power_table(store, "g", rounds=5, trials=50)
    assert row.false_alarms is None and row.detection == {}


def test_calibrate_runs_real_sessions_and_tags_them(tmp_path: Path) -> None:
    """Two real sessions on a LocalCluster: every arm measured in each, runs tagged, a table printed."""
    db = f"sqlite:///{tmp_path / 'cal.db'}"
    command = [sys.executable, "-m", "daskbench", "calibrate", "--sessions", "2", "--rounds", "2", "--group", "cal",
               "--db", db, "--", "--workers", "1", "--saturation", "inf"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "calibrate: session 2/2" in done.stderr and "cores; dask" in done.stdout
    store = Store(db)
    runs = group_runs(store, "cal")
    assert [run.tags[CALIBRATE_ROUND] for run in runs] == ["0", "1"]
    arms = {store.cases()[m.fingerprint].params["arm"] for m in store.measurements([runs[0].run_id]) if m.ok}
    assert arms == {"base", "aa", "x1.05", "x1.10", "x1.20", "x1.50"}
