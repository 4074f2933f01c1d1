"""`daskbench calibrate`: per planted arm, how often lockstep comparisons call the change, in how
many rounds, and what effect they measure; from planted stores, and once for real."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daskbench.calibrate.run import CALIBRATE_GROUP, CALIBRATE_ROUND, comparison_groups, format_power, power_rows
from daskbench.model import Case, ClusterSpec, Measurement
from daskbench.store import Store
from tests.helpers import make_run

ARMS = {"aa": 1.0, "x1.05": 1.05, "x1.50": 1.50}


def _fill(store: Store, comparisons: int, noise: float, rounds: int = 6) -> None:
    """Lockstep comparisons whose side B runs each arm at exactly its factor, both sides drifting
    together from round to round (+-20%), with +-``noise`` on each measurement."""
    rng = random.Random(7)
    spec = ClusterSpec("local", 1, 1, 2**30, 1.1)
    cases = {arm: Case("calibration", {"arm": arm, "factor": f}, spec) for arm, f in ARMS.items()}
    for case in cases.values():
        store.add_case(case)
    for number in range(comparisons):
        tags = {"ab_group": f"g.{number}", "ab_round": "0", "ab_mode": "lockstep", "ab_max_rounds": "30",
                CALIBRATE_GROUP: "g", CALIBRATE_ROUND: str(number)}  # fmt: skip
        runs = {side: make_run(tags={**tags, "ab_side": side}) for side in "AB"}
        for run in runs.values():
            store.add_run(run)
        for arm, case in cases.items():
            for repeat in range(rounds):
                drift = rng.uniform(0.8, 1.2)
                for side, run in runs.items():
                    runtime = drift * (ARMS[arm] if side == "B" else 1.0) * (1 + rng.uniform(-noise, noise))
                    store.add_measurement(Measurement.of(run_id=run.run_id, fingerprint=case.fingerprint,
                                                         repeat=repeat, outcome="passed", runtime_s=runtime,
                                                         recorded_at=run.started_at))  # fmt: skip


def test_a_planted_slowdown_is_called_and_the_a_a_arm_is_not(store: Store) -> None:
    """With 1% noise and drift shared by both sides, 1.50x is called in every comparison at its
    own size, 1.05x is real but under the 1.10 floor (never regressed), and A/A never changes."""
    _fill(store, 10, noise=0.01)
    assert comparison_groups(store, "g") == [f"g.{n}" for n in range(10)]
    power = power_rows(store, "g")
    rows = {row.arm: row for row in power.rows}
    assert rows["aa"].called == 0.0 and rows["x1.50"].called == 1.0 and rows["x1.05"].called == 0.0
    assert rows["x1.50"].measured == pytest.approx(1.50, abs=0.01)
    assert rows["x1.50"].median_rounds == 6 and rows["aa"].comparisons == 10
    assert power.smallest_detected == 1.50
    assert power.aa_cv is not None and power.aa_cv < 0.02 and power.aa_rounds == 60
    table = format_power(power)
    assert "false alarms" in table and "1.50x" in table and "smallest change caught" in table
    assert max(len(line) for line in table.splitlines()) <= 120


def test_calibrate_runs_real_lockstep_comparisons_and_tags_them(tmp_path: Path) -> None:
    """One real comparison on two LocalClusters, three rounds an arm, two arms chosen with -k: each
    measured on both sides, runs tagged with the calibration group, a table printed with the machine
    and versions."""
    db = f"sqlite:///{tmp_path / 'cal.db'}"
    command = [sys.executable, "-m", "daskbench", "calibrate", "--comparisons", "1", "--max-rounds", "3",
               "--group", "cal", "--db", db, "--", "--workers", "1", "--saturation", "inf", "--size", "tiny",
               "-k", "aa or x1.50"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "calibrate: comparison 1/1" in done.stderr and "cores; dask" in done.stdout
    store = Store(db)
    assert comparison_groups(store, "cal") == ["cal.0"]
    runs = [run for run in store.runs() if run.tags.get(CALIBRATE_GROUP) == "cal"]
    # one pair of sessions, and a second when a change within 1.20x was repeated (3 rounds: a wide interval)
    assert sorted(run.label for run in runs) in (["cal.0-A", "cal.0-B"], ["cal.0-A", "cal.0-A2", "cal.0-B", "cal.0-B2"])
    runs = [run for run in runs if run.tags["ab_round"] == "0"]
    cases = store.cases()
    arms = {cases[m.fingerprint].params["arm"] for m in store.measurements([runs[0].run_id]) if m.ok}
    assert arms == {"aa", "x1.50"}


def test_a_change_repeated_in_fresh_sessions_is_called_once_and_its_minutes_count_both_parts(store: Store) -> None:
    """The 1.10x arm, measuring 1.12x (noise 1%), is regressed in part 1 within 1.20x of 1, so part 2 (fresh sessions, 40 s after
    the first part began) repeats it: called, in 12 rounds; its minutes are both parts' spans plus part 2's
    start-up (10 s from its runs' start to its first measurement), not the time between the parts."""
    rng = random.Random(3)
    spec = ClusterSpec("local", 1, 1, 2**30, 1.1)
    cases = {arm: Case("calibration", {"arm": arm, "factor": f}, spec) for arm, f in (("aa", 1.0), ("x1.10", 1.12))}
    for case in cases.values():
        store.add_case(case)
    start = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    for part, arms, began in ((0, ("aa", "x1.10"), 0.0), (1, ("x1.10",), 40.0)):
        tags = {"ab_group": "r.0", "ab_round": str(part), "ab_mode": "lockstep", "ab_max_rounds": "30",
                "ab_repeat_within": "1.2", CALIBRATE_GROUP: "r", CALIBRATE_ROUND: "0"}  # fmt: skip
        at = start + timedelta(seconds=began)
        runs = {side: make_run(tags={**tags, "ab_side": side}, started_at=at.isoformat()) for side in "AB"}
        for run in runs.values():
            store.add_run(run)
        offset = 10.0 if part else 0.0
        for index, arm in enumerate(arms):
            for repeat in range(6):
                for side, run in runs.items():
                    runtime = (cases[arm].params["factor"] if side == "B" else 1.0) * (1 + rng.uniform(-0.01, 0.01))
                    when = at + timedelta(seconds=offset + 12 * index + 2 * repeat + (side == "B"))
                    store.add_measurement(Measurement.of(run_id=run.run_id, fingerprint=cases[arm].fingerprint,
                                                         repeat=repeat, outcome="passed", runtime_s=runtime,
                                                         recorded_at=when.isoformat()))  # fmt: skip
    rows = {row.arm: row for row in power_rows(store, "r").rows}
    assert rows["x1.10"].called == 1.0 and rows["x1.10"].median_rounds == 12
    assert rows["aa"].called == 0.0 and rows["aa"].median_rounds == 6
    # part 1: 11 s of its own (12 s to 23 s); part 2: 10 s start-up + 11 s; plus a measurement (0 s here) each
    assert rows["x1.10"].median_minutes == pytest.approx((11 + 10 + 11) / 60)
