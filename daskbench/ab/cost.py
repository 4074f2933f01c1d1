"""Where a side-by-side comparison's time went: its rounds' compute against their wall time.

Every turn of a lockstep comparison (`daskbench.ab.lockstep`) is one measurement by one side. The
controller times each from the moment it says "go" to the side's "done"; the side says what the
measurement's phases took (restart, warm-up, collectors, compute: `Measurement.phases`) and how long
its whole turn was (``busy``: measured, stored, its progress line written). `RoundCost` adds those up, so
``ab``, ``pr``, ``bisect``, ``confirm`` and ``calibrate`` can end with one line:

    rounds: 182 s of which compute 75 s (41%); a measurement: restart 0.90 s, warm-up 0.30 s, ...

The compute is what the benchmark asked to be timed (the ``compute`` phase, graph build included when
there is one); everything else in the rounds' wall time is what a round costs beyond it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


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

    def add_turn(self, done: Mapping[str, Any], wall: float) -> None:
        """One side's turn: its "done" message (phases, busy) and the wall time the controller saw."""
        found = done.get("phases")
        phases: Mapping[str, Any] = found if isinstance(found, dict) else {}
        self.turns += 1
        self.wall += max(wall, 0.0)
        self.compute += _seconds(phases.get("compute")) + _seconds(phases.get("build"))
        self.restart += _seconds(phases.get("restart"))
        self.warmup += _seconds(phases.get("warmup"))
        self.collectors += _seconds(phases.get("collectors"))
        self.busy += _seconds(done.get("busy")) or max(wall, 0.0)

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
        share = f" ({self.share:.0%})" if self.share is not None else ""
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
