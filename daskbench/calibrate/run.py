"""What this setup can detect, measured on it: ``daskbench calibrate``.

`run_comparisons` runs N lockstep comparisons (`daskbench.lockstep.engine`) of the bundled
calibration benchmarks (`daskbench.calibrate.bench_calibration`) on the user's own cluster settings:
side A and side B are this environment, and side B's tasks burn each arm's planted factor
(1.05x, 1.10x, 1.20x, 1.50x the CPU; the ``aa`` arm plants nothing). Every arm of every
comparison adds rounds until its verdict is decided, exactly as ``daskbench ab`` does.

`power_rows` then counts, per arm, how often the comparisons called a change (for ``aa``:
regressed or improved, the false alarms; for a planted arm: regressed), the median rounds and
minutes each took, and the effect measured beside the one planted: a plant is diluted by the
fixed cost of scheduling and collecting, and the table shows by how much.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from daskbench.calibrate.arms import ARMS, SIDE_ENV
from daskbench.judge import stats
from daskbench.judge.compare import compare_group, group_rounds
from daskbench.judge.sequential import Question
from daskbench.lockstep import turns
from daskbench.lockstep.engine import Lockstep, Part, pytest_command
from daskbench.lockstep.parts import Spent, run_parts
from daskbench.lockstep.sessions import Side
from daskbench.model import Measurement, Run
from daskbench.store import Store
from daskbench.verdicts import Verdict

BENCH_FILE = Path(__file__).parent / "bench_calibration.py"
CALIBRATE_GROUP, CALIBRATE_ROUND = "calibrate_group", "calibrate_round"
AA_ARM = "aa"
#: A change counts as caught from this rate of detection on.
DETECTED = 0.90
#: The planted factors the table reports, beyond the A/A arm.
FACTORS = tuple(factor for arm, factor in ARMS if arm != AA_ARM)


@dataclass(frozen=True)
class ArmRow:
    """One arm over every comparison: how often a change was called, how long it took, what was measured."""

    arm: str
    planted: float
    comparisons: int
    called: float  # rate: aa -> regressed or improved (false alarms); planted -> regressed
    median_rounds: float
    median_minutes: float
    measured: float | None  # median over comparisons of the measured ratio B/A


@dataclass(frozen=True)
class Power:
    """The calibration table: one row per arm, and the noise of the A/A pairs now."""

    rows: tuple[ArmRow, ...]
    aa_cv: float | None  # sd of the A/A arm's per-round log ratios: the machine's pair noise
    aa_rounds: int

    @property
    def smallest_detected(self) -> float | None:
        """The smallest planted factor caught at least 90% of the time within the budget."""
        found = [row.planted for row in self.rows if row.arm != AA_ARM and row.called >= DETECTED]
        return min(found) if found else None


def comparison_groups(store: Store, group: str) -> list[str]:
    """The A/B groups (one per comparison) of a calibration group that have a complete part, in order."""
    numbers = {
        int(run.tags.get(CALIBRATE_ROUND, "0")) for run in store.runs() if run.tags.get(CALIBRATE_GROUP) == group
    }
    return [name for name in (f"{group}.{n}" for n in sorted(numbers)) if group_rounds(store, name)]


def power_rows(store: Store, group: str, floor: float | None = None) -> Power:
    """Per arm, what the group's comparisons found (rules: module docstring), judged with ``floor``
    (the runtime floor the comparisons ran with; default: the declared one)."""
    verdicts: dict[str, list[tuple[Verdict, float]]] = {}
    floors = {"runtime_s": floor} if floor else None
    for name in comparison_groups(store, group):
        minutes = _minutes_per_arm(store, name)
        for verdict in compare_group(store, name, floors=floors).verdicts:
            if verdict.metric == "runtime_s":
                arm = str(verdict.params.get("arm"))
                verdicts.setdefault(arm, []).append((verdict, minutes.get(arm, math.nan)))
    rows = tuple(_row(arm, factor, verdicts.get(arm, [])) for arm, factor in ARMS if verdicts.get(arm))
    aa = [v for v, _ in verdicts.get(AA_ARM, [])]
    logs = [
        math.log(b / a) for v in aa for a, b in zip(v.baseline_values, v.candidate_values, strict=False) if a > 0 < b
    ]
    cv = float(np.std(logs, ddof=1)) if len(logs) > 2 else None
    return Power(rows, cv, len(logs))


def _row(arm: str, planted: float, found: Sequence[tuple[Verdict, float]]) -> ArmRow:
    kinds = [v.verdict for v, _ in found]
    hits = sum(k in ("regressed", "improved") if arm == AA_ARM else k == "regressed" for k in kinds)
    rounds = [len(v.candidate_values) for v, _ in found]
    ratios = [v.ratio for v, _ in found if v.ratio is not None]
    return ArmRow(
        arm,
        planted,
        len(found),
        hits / len(found),
        float(np.median(rounds)),
        float(np.nanmedian([m for _, m in found])),
        stats.median(ratios) if ratios else None,
    )


def _minutes_per_arm(store: Store, group: str) -> dict[str, float]:
    """Minutes an arm took in one comparison: in each part (pair of sessions) that measured it, from its first
    to its last measurement (both sides) and one measurement more; a later part (a repeat in fresh sessions)
    adds its start-up, from its runs' start to its first measurement."""
    cases = store.cases()
    minutes: dict[str, float] = {}
    for number, sides in enumerate(group_rounds(store, group).values()):
        runs = [run.run_id for run in sides.values()]
        times: dict[str, list[float]] = {}
        for m in store.measurements(runs):
            times.setdefault(str(cases[m.fingerprint].params.get("arm")), []).append(_seconds(m))
        began = min(datetime.fromisoformat(run.started_at).timestamp() for run in sides.values())
        startup = min(min(t) for t in times.values()) - began if number and times else 0.0
        each = _mean_measurement(store, runs)
        for arm, t in times.items():
            minutes[arm] = minutes.get(arm, 0.0) + (max(t) - min(t) + each + startup) / 60
    return minutes


def _seconds(m: Measurement) -> float:
    return datetime.fromisoformat(m.recorded_at).timestamp() if m.recorded_at else math.nan


def _mean_measurement(store: Store, runs: list[str]) -> float:
    """The mean time of one measurement (restart, warm-up, compute), to count the first one too."""
    spans = [sum(m.phases.get(p, 0.0) for p in ("restart", "warmup", "compute")) for m in store.measurements(runs)]
    return float(np.mean(spans)) if spans else 0.0


def format_power(power: Power) -> str:
    """The table ``daskbench calibrate`` prints (at most 120 columns)."""
    head = ["arm", "planted", "measured B/A", "called", "median rounds", "median minutes", "comparisons"]
    body = [
        [
            row.arm,
            f"{row.planted:.2f}x",
            f"{row.measured:.3f}x" if row.measured else "-",
            f"{row.called:.0%}" + (" (false alarms)" if row.arm == AA_ARM else ""),
            f"{row.median_rounds:g}",
            f"{row.median_minutes:.1f}",
            str(row.comparisons),
        ]
        for row in power.rows
    ]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [head, *body]]
    noise = f"{power.aa_cv:.1%}" if power.aa_cv is not None else "-"
    smallest = f"{power.smallest_detected:.2f}x" if power.smallest_detected else "none of the planted factors"
    lines.append(f"noise now: sd of the A/A per-round log ratio {noise} ({power.aa_rounds} rounds)")
    lines.append(f"smallest change caught in >= {DETECTED:.0%} of comparisons: {smallest}")
    return "\n".join(lines)


@dataclass
class Calibration:
    """Runs the comparisons of one calibration group that are still missing."""

    store: Store
    db: str
    group: str
    pytest_args: Sequence[str]
    floor: float
    max_rounds: int
    max_seconds: float
    say: Callable[[str], None] = print
    spent: Spent = field(default_factory=Spent)  # what this call's comparisons measured, and their cost

    def run(self, comparisons: int) -> int:
        """Comparisons up to ``comparisons``; returns how many the group has."""
        done = len(comparison_groups(self.store, self.group))
        started = time.monotonic()
        for index, number in enumerate(range(done, comparisons)):
            elapsed = time.monotonic() - started
            left = f", about {elapsed / index * (comparisons - done - index) / 60:.0f} min left" if index else ""
            self.say(f"calibrate: comparison {number + 1}/{comparisons} (elapsed {elapsed / 60:.1f} min{left})")
            self._comparison(number)
        return len(comparison_groups(self.store, self.group))

    def _comparison(self, number: int) -> None:
        """One comparison: its parts (a change verdict is repeated in a fresh pair of sessions), its runs tagged."""
        name = f"{self.group}.{number}"
        sides = {side: Side(side, sys.executable, {SIDE_ENV: side}) for side in ("A", "B")}
        question = Question(self.floor, self.max_rounds)

        def start(part: Part) -> Lockstep:
            shared = turns.session_env(name, part.number, question)
            suffix = str(part.number + 1) if part.number else ""  # the first part keeps its old labels
            return Lockstep(
                sides,
                command=lambda side: pytest_command(
                    side.python, self.db, f"{name}-{side.name}{suffix}", [str(BENCH_FILE), *self.pytest_args]
                ),
                environment=lambda side: {**os.environ, **side.env, **shared},
                question=question,
                max_seconds=self.max_seconds,
                log_dir=Path(tempfile.mkdtemp(prefix="daskbench-calibrate-")),
                say=self.say,
                rounds_said=False,  # a line per arm when it stops
                part=part,
            )

        spent = run_parts(start, question, None, self.say, self.max_seconds)
        for key, result in spent.results.items():
            self.spent.results[f"{name}::{key}"] = result
        self.spent.parts += spent.parts
        self.spent.startup += spent.startup
        self.spent.wall += spent.wall
        for run in self._runs_of(name):
            self.store.tag_run(run.run_id, {CALIBRATE_GROUP: self.group, CALIBRATE_ROUND: str(number)})

    def _runs_of(self, name: str) -> list[Run]:
        return [run for run in self.store.runs() if run.tags.get("ab_group") == name]
