"""measure/estimate-error reads what a session prints (its plan line, its progress lines) back into seconds:
planted lines, no session run."""

from __future__ import annotations

import pytest

from daskbench.plugin.pace import clock
from measure.estimate_error import Session, clock_seconds


@pytest.mark.parametrize("seconds", [7, 45, 89, 720, 5340, 7500])
def test_the_clock_text_a_session_prints_reads_back_as_its_seconds(seconds: int) -> None:
    """What `pace.clock` writes (to the second below 90 s, to the minute above: whole minutes here) reads back."""
    assert clock_seconds(clock(seconds)) == seconds


def test_a_sessions_plan_and_progress_lines_are_read_with_the_time_they_came() -> None:
    session = Session()
    session.read("daskbench: 42 measurements planned, about 12 min here (0.65 s a measurement at tiny ...)", 1.5)
    session.read("daskbench: ocean_anomaly size=tiny w=1 t=1 mem=12GiB sat=inf r0 passed 0.31s peak/worker 190 MiB", 9)
    session.read("    (10/42 measured, about 2 h 05 min left)", 30.0)
    session.read("    (42/42 measured)", 80.0)
    assert (session.planned, session.estimate, session.planned_at) == (42, 720, 1.5)
    assert session.lefts == [(10, 7500, 30.0)]
