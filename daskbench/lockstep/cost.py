"""Where a side-by-side comparison's time went: its rounds' compute against their wall time.

Every turn of a lockstep comparison (`daskbench.lockstep.engine`) is one measurement by one side. The
controller times each from the moment it says "go" to the side's "done"; the side says what the
measurement's phases took (restart, warm-up, collectors, compute: `Measurement.phases`) and how long
its whole turn was (``busy``: measured, stored, its progress line written). `RoundCost` adds those up, so
``ab``, ``pr``, ``bisect``, ``confirm`` and ``calibrate`` can end with one line:

    rounds: 182 s of which compute 75 s (41%); a measurement: restart 0.90 s, warm-up 0.30 s, ...

The compute is what the benchmark asked to be timed (the ``compute`` phase, graph build included when
there is one); everything else in the rounds' wall time is what a round costs beyond it. Its share is the
rounds' efficiency; a case of several calls per measurement (`daskbench.lockstep.loops`) raises it, and the
line then says how many calls the measurements made (``compute 75 s (81%, 412 calls in 96 measurements)``).

Each side says how many cores other work used during its measurement (``others``), and the machine's 1-minute
load average is read at every turn. Beside other work (another suite, a CI job), lockstep A/A comparisons on
this project's 2-core machine called unchanged code changed far more often than their 5% (docs/measured.md,
"What a verdict costs"): a session can stay slower than its twin for a whole pair of sessions, which no number
of rounds averages away. So when other work used more than `daskbench.judge.repeat.BUSY_CORES` on average,
`busy_line` says so under the cost line (and the verdicts repeat their changes: `daskbench.judge.repeat`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from daskbench.judge.repeat import BUSY_REPEAT_WITHIN, busy
from daskbench.lockstep import loops
from daskbench.metrics.probe import load_average


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value >= 0 else 0.0


@dataclass
class RoundCost:
    """Seconds spent by the turns of some rounds, summed: the wall time the controller saw, the compute in
    it, and the rest by phase."""

    turns: int = 0
    wall: float = 0.0  # from each "go" to its "done", and the controller's own work between turns
    compute: float = 0.0
    restart: float = 0.0
    warmup: float = 0.0
    collectors: float = 0.0
    busy: float = 0.0  # the sides' whole turns, as each side timed them
    calls: int = 0  # the calls of the benchmark the turns made (several a turn: `daskbench.lockstep.loops`)
    load: float = 0.0  # the 1-minute load average read at each turn's end, summed over `loads` reads
    loads: int = 0
    others: float = 0.0  # the cores other work used during each turn's measurement, summed over `others_read`
    others_read: int = 0

    def add_turn(self, done: Mapping[str, Any], wall: float, load: float | None = None) -> None:
        """One side's turn: its "done" message (phases, busy), the wall time the controller saw, and the load
        average then (read here when not given)."""
        found = done.get("phases")
        phases: Mapping[str, Any] = found if isinstance(found, dict) else {}
        self.turns += 1
        self.calls += loops.ran(done)
        self.wall += max(wall, 0.0)
        self.compute += _seconds(phases.get("compute")) + _seconds(phases.get("build"))
        self.restart += _seconds(phases.get("restart"))
        self.warmup += _seconds(phases.get("warmup"))
        self.collectors += _seconds(phases.get("collectors"))
        self.busy += _seconds(done.get("busy")) or max(wall, 0.0)
        load = load_average() if load is None else load
        if load is not None:
            self.load += load
            self.loads += 1
        others = done.get("others")
        if isinstance(others, int | float) and others >= 0:
            self.others += others
            self.others_read += 1

    def add_wall(self, seconds: float) -> None:
        """The controller's own time between turns (judging a round, saying it)."""
        self.wall += max(seconds, 0.0)

    def __add__(self, other: RoundCost) -> RoundCost:
        return RoundCost(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def share(self) -> float | None:
        """Compute over wall time (None before any turn)."""
        return self.compute / self.wall if self.wall > 0 else None

    def line(self, startup: float | None = None) -> str:
        """``rounds: 182 s of which compute 75 s (41%); a measurement: restart 0.90 s, warm-up 0.30 s,
        collectors 0.12 s, storing and the rest 0.41 s, between the sides 0.05 s``, and the start-up."""
        if not self.turns:
            return "rounds: none measured"
        calls = f", {self.calls} calls in {self.turns} measurements" if self.calls > self.turns else ""
        share = f" ({self.share:.0%}{calls})" if self.share is not None else ""
        each = self.turns
        rest = max(self.busy - self.compute - self.restart - self.warmup - self.collectors, 0.0)
        between = max(self.wall - self.busy, 0.0)
        parts = [
            f"restart {self.restart / each:.2f} s",
            f"warm-up {self.warmup / each:.2f} s",
            f"collectors {self.collectors / each:.2f} s",
            f"storing and the rest {rest / each:.2f} s",
            f"between the sides {between / each:.2f} s",
        ]
        started = f"; start-up {startup:.0f} s (sessions, clusters)" if startup is not None else ""
        return (
            f"rounds: {self.wall:.0f} s of which compute {self.compute:.0f} s{share}; a measurement: "
            f"{', '.join(parts)}{started}"
        )

    def busy_line(self, cores: int | None = None) -> str | None:
        """``the machine was busy: other work used 1.2 of its 2 cores during the rounds (load average 3.4) ...``
        when other work used more than `daskbench.judge.repeat.BUSY_CORES` on average; None on a quiet machine or
        before any turn that said."""
        cores = cores or os.cpu_count() or 1
        if not self.others_read or not busy([self.others / self.others_read]):
            return None
        load = f" (load average {self.load / self.loads:.1f})" if self.loads else ""
        return (
            f"the machine was busy: other work used {self.others / self.others_read:.1f} of its {cores} cores during "
            f"the rounds{load}: beside other work, a side can stay slower than its twin for a whole pair of sessions, "
            f"so a change within {BUSY_REPEAT_WITHIN:.1f}x was repeated in a fresh pair; a quiet machine decides sooner"
        )
