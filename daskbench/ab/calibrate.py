"""What this setup can detect: false alarms and planted slowdowns, measured (``daskbench calibrate``).

`run_sessions` runs the bundled calibration benchmarks (`daskbench.ab.bench_calibration`) in N
sessions on the user's own cluster settings; each session measures, back to back, an A/A
pair at factor 1.0 and arms whose tasks burn 1.05x, 1.10x, 1.20x and 1.50x the CPU. Each
session is one round of an interleaved comparison of an arm against ``base``.

`power_table` then asks how `stats.rounds_decision` does with R rounds: it draws R of the
N sessions at random (without replacement, seeded) many times and counts how often each
arm comes out ``regressed`` (for the A/A arm: ``regressed`` or ``improved``, the false
alarms). Subsampling the sessions estimates the rates at R rounds from one set of N
sessions; it needs N well above R (4x or more) to be worth anything.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daskbench.ab.sessions import run_logged
from daskbench.errors import DaskbenchError
from daskbench.judge import sequential, stats
from daskbench.judge.format import case_label
from daskbench.model import Case, Measurement, Run
from daskbench.store import Store

BENCH_FILE = Path(__file__).parent / "bench_calibration.py"
CALIBRATE_GROUP, CALIBRATE_ROUND = "calibrate_group", "calibrate_round"
BASE_ARM, AA_ARM = "base", "aa"
SEED = 20_261_122
DETECTED = 0.90


@dataclass(frozen=True)
class PowerRow:
    """One cluster spec: false-alarm rate and detection rate per planted factor, at ``rounds`` rounds."""

    case: str
    sessions: int
    false_alarms: float | None
    detection: Mapping[float, float]

    @property
    def smallest_detected(self) -> float | None:
        """The smallest planted factor detected at least 90% of the time."""
        found = [factor for factor, rate in sorted(self.detection.items()) if rate >= DETECTED]
        return found[0] if found else None


def group_runs(store: Store, group: str) -> list[Run]:
    """The finished sessions of a calibration group, in round order."""
    runs = [run for run in store.runs() if run.tags.get(CALIBRATE_GROUP) == group and run.ended_at]
    return sorted(runs, key=lambda run: int(run.tags.get(CALIBRATE_ROUND, "0")))


def power_table(
    store: Store, group: str, rounds: int, *, floor: float | None = None, trials: int = 400
) -> list[PowerRow]:
    """Per cluster spec of the group: false alarms and detection rates of ``rounds``-round comparisons."""
    floor = floor or stats.default_floor("runtime_s")
    runs = group_runs(store, group)
    ms = store.measurements([run.run_id for run in runs])
    cases = store.cases({m.fingerprint for m in ms})
    series = _series(runs, ms, {fp: (json.dumps(c.cluster.identity(), sort_keys=True), c) for fp, c in cases.items()})
    rng = np.random.default_rng(SEED)
    rows = []
    for _, (case, arms) in sorted(series.items(), key=lambda item: item[0]):
        label = case_label("calibration", {}, case.cluster.identity())
        rates = {arm: _rate(arms[BASE_ARM], values, rounds, floor, trials, rng, arm == AA_ARM)
                 for arm, values in arms.items() if arm != BASE_ARM}  # fmt: skip
        factors = {_factor(arm): rate for arm, rate in rates.items() if arm != AA_ARM and rate is not None}
        rows.append(PowerRow(label, len(arms[BASE_ARM]), rates.get(AA_ARM), factors))
    return rows


def _series(
    runs: Sequence[Run], ms: Sequence[Measurement], spec_of: Mapping[str, tuple[str, Case]]
) -> dict[str, tuple[Case, dict[str, list[float | None]]]]:
    """Per cluster spec and arm, one median runtime per session (None where it did not pass)."""
    index = {run.run_id: i for i, run in enumerate(runs)}
    found: dict[str, tuple[Case, dict[str, list[float | None]]]] = {}
    per: dict[tuple[str, str, int], list[float]] = {}
    for m in ms:
        spec, case = spec_of[m.fingerprint]
        arm = str(case.params.get("arm"))
        found.setdefault(spec, (case, {}))[1].setdefault(arm, [None] * len(runs))
        if m.ok and m.runtime_s is not None:
            per.setdefault((spec, arm, index[m.run_id]), []).append(float(m.runtime_s))
    for (spec, arm, i), values in per.items():
        found[spec][1][arm][i] = stats.median(values)
    return found


def _rate(
    base: Sequence[float | None],
    arm: Sequence[float | None],
    rounds: int,
    floor: float,
    trials: int,
    rng: np.random.Generator,
    two_sided: bool,
) -> float | None:
    """Share of random ``rounds``-subsets of the sessions whose verdict is a change."""
    pairs = [(b, a) for b, a in zip(base, arm, strict=True) if b is not None and a is not None]
    if len(pairs) < rounds:
        return None
    hits = 0
    for _ in range(trials):
        chosen = [pairs[i] for i in rng.choice(len(pairs), size=rounds, replace=False)]
        verdict = sequential.rounds_decision([b for b, _ in chosen], [a for _, a in chosen], floor).verdict
        hits += verdict == "regressed" or (two_sided and verdict == "improved")
    return hits / trials


def _factor(arm: str) -> float:
    return float(arm.removeprefix("x"))


def format_power(rows: Sequence[PowerRow], rounds: int, floor: float) -> str:
    """The table ``daskbench calibrate`` prints."""
    factors = sorted({factor for row in rows for factor in row.detection})
    head = ["case", "sessions", "false alarms", *(f"{f:.2f}x" for f in factors), "detects 90% from"]
    body = [
        [row.case, str(row.sessions), _pct(row.false_alarms), *(_pct(row.detection.get(f)) for f in factors),
         f"{row.smallest_detected:.2f}x" if row.smallest_detected else "none of these"]
        for row in rows
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [head, *body]]
    note = f"runtime verdicts of {rounds}-round interleaved comparisons (floor {floor:.2f}), from random subsets"
    return "\n".join([*lines, note])


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def run_sessions(
    store: Store, db: str, group: str, sessions: int, pytest_args: Sequence[str], say: Callable[[str], None]
) -> int:
    """Run the calibration sessions still missing from ``group``; returns how many are stored."""
    done = len(group_runs(store, group))
    started = time.monotonic()
    log_dir = Path(tempfile.mkdtemp(prefix="daskbench-calibrate-"))
    for index, number in enumerate(range(done, sessions)):
        elapsed = time.monotonic() - started
        left = f", about {elapsed / index * (sessions - done - index):.0f} s left" if index else ""
        say(f"calibrate: session {number + 1}/{sessions} (elapsed {elapsed:.0f} s{left})")
        label = f"{group}-{number}"
        command = [sys.executable, "-m", "pytest", str(BENCH_FILE), "-m", "benchmark", "-p", "no:cacheprovider",
                   "-q", "--db", db, "--label", label, *pytest_args]  # fmt: skip
        log = log_dir / f"{label}.log"
        code = run_logged(command, os.environ, log)
        found = [run for run in store.runs() if run.label == label and not run.tags.get(CALIBRATE_GROUP)]
        if code not in (0, 1) or not found:
            raise DaskbenchError(f"calibration session {number + 1} could not run (pytest exit {code}); its log: {log}")
        store.tag_run(found[0].run_id, {CALIBRATE_GROUP: group, CALIBRATE_ROUND: str(number)})
    return len(group_runs(store, group))
