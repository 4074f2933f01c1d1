"""Several calls a measurement (`daskbench.lockstep.loops`): the rule that fixes them at screening, worked by
hand; the controller asking both scripted sides the same calls over the real socket; per-call metrics; how a
measurement of several calls is shown and how rows without them read."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from daskbench.cli.show import repeat_cell
from daskbench.errors import DaskbenchError
from daskbench.judge.sequential import Question
from daskbench.lockstep import loops
from daskbench.lockstep.case import CaseResult, round_line
from daskbench.lockstep.cost import RoundCost
from daskbench.lockstep.engine import Lockstep
from daskbench.lockstep.sessions import Side
from daskbench.lockstep.turns import Turns
from daskbench.metrics.collectors import Collected, per_call
from daskbench.model import Measurement, Run, calibration_set_aside
from tests.helpers import make_case, make_measurement


@pytest.mark.parametrize(
    ("per_call_s", "expected"),
    [
        ((0.1, 0.125), 8),  # the slower side: ceil(1.0 / 0.125)
        ((0.07, 0.05), 15),  # ceil(1.0 / 0.07) = ceil(14.3)
        ((0.45, 0.4), 3),  # ceil(2.2)
        ((1.0, 0.9), 1),  # a second of compute already: one call
        ((2.5, 3.0), 1),
        ((0.001, 0.002), 32),  # ceil(500) stops at MAX_LOOPS
        ((0.1, None), 1),  # a side measured no time: nothing known to amortise
        ((0.1, 0.0), 1),
        ((0.1, float("nan")), 1),
        ((), 1),
    ],
)
def test_the_calls_a_measurement_makes_reach_a_second_of_compute_on_the_slower_side(
    per_call_s: tuple[float | None, ...], expected: int
) -> None:
    assert loops.TARGET_S == 1.0 and loops.MAX_LOOPS == 32
    assert loops.loops_for(per_call_s) == expected


def test_no_target_means_one_call_and_a_smaller_one_fewer_calls() -> None:
    assert loops.loops_for([0.1, 0.1], target=0.0) == 1
    assert loops.loops_for([0.1, 0.1], target=0.35) == 4
    assert loops.loops_for([0.01, 0.01], most=5) == 5


def test_the_target_comes_from_the_environment_and_a_bad_one_is_one_line() -> None:
    assert loops.target_from_env({}) == loops.TARGET_S
    assert loops.target_from_env({loops.ENV_TARGET: "0"}) == 0.0
    assert loops.target_from_env({loops.ENV_TARGET: " 2.5 "}) == 2.5
    for bad in ("fast", "-1", "inf"):
        with pytest.raises(DaskbenchError, match="DASKBENCH_LOOP_TARGET") as raised:
            loops.target_from_env({loops.ENV_TARGET: bad})
        assert "\n" not in str(raised.value)


def test_a_turn_reads_its_compute_per_call_and_an_older_session_made_one_call() -> None:
    """4 calls of 0.2 s build and 0.6 s compute in all: 0.2 s a call; a done without loops made one."""
    assert loops.per_call({"phases": {"compute": 0.6, "build": 0.2}, "loops": 4}) == pytest.approx(0.2)
    assert loops.per_call({"phases": {"compute": 0.3}}) == pytest.approx(0.3)
    assert loops.per_call({"phases": {}}) is None and loops.per_call({}) is None
    assert loops.ran({}) == 1 and loops.ran({"loops": 0}) == 1 and loops.ran({"loops": True}) == 1
    assert loops.ran({"loops": 8}) == 8


def _case(rounds: int, asked: int, made: int) -> CaseResult:
    return CaseResult("k", a=[1.0] * rounds, b=[1.0] * rounds, loops=asked, calls=made)


def test_the_calls_are_fixed_after_the_first_round_kept_after_and_lowered_to_what_a_side_could_make() -> None:
    dones = [{"phases": {"compute": 0.1}, "loops": 1}, {"phases": {"compute": 0.125}, "loops": 1}]
    assert loops.next_loops(_case(1, 1, 1), dones) == 8  # screened: fixed from the first round
    looped = [{"phases": {"compute": 0.8}, "loops": 8}, {"phases": {"compute": 3.0}, "loops": 8}]
    assert loops.next_loops(_case(2, 8, 8), looped) == 8  # later rounds never re-calibrate
    assert loops.next_loops(_case(5, 1, 1), dones) == 1  # a case carried on with one call stays so
    assert loops.next_loops(_case(2, 8, 1), looped) == 1  # a side made one (a whole test): both go to one
    assert loops.next_loops(_case(1, 1, 1), dones, target=0.0) == 1


#: A scripted side: says its plan, then each round says ready, reads the controller's answer, and answers a
#: go with a done of PER_CALL seconds a call (as many calls as asked, or one when it cannot loop); then writes
#: the calls it was asked for to OUT.
SIDE = """
import json, os, socket
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["DASKBENCH_AB_CONTROL"])
stream = sock.makefile("rw", encoding="utf-8", buffering=1)
def send(message):
    stream.write(json.dumps(message) + "\\n")
    stream.flush()
send({{"side": os.environ["DASKBENCH_AB_SIDE"], "plan": ["k"]}})
stream.readline()
asked = []
for r in range(10):
    send({{"ready": "k", "round": r}})
    go = json.loads(stream.readline())
    if not go.get("go"):
        break
    asked.append(go.get("loops"))
    made = go.get("loops", 1) if {can_loop} else 1
    send({{"done": "k", "round": r, "value": {per_call}, "outcome": "passed", "loops": made,
           "phases": {{"compute": {per_call} * made}}}})
open({out!r}, "w").write(json.dumps(asked))
"""


def _scripted(tmp_path: Path, b_can_loop: bool) -> Lockstep:
    def command(side: Side) -> list[str]:
        per_call_s, can_loop = (0.1, True) if side.name == "A" else (0.125, b_can_loop)
        out = str(tmp_path / f"{side.name}.json")
        return [sys.executable, "-c", SIDE.format(per_call=per_call_s, can_loop=can_loop, out=out)]

    return Lockstep(
        {name: Side(name) for name in "AB"},
        command=command,
        environment=lambda side: dict(os.environ),
        question=Question(1.1, 3),
        max_seconds=60.0,
        log_dir=tmp_path,
        say=lambda line: None,
        exact=True,
        loop_target=1.0,
    )


@pytest.mark.parametrize("b_can_loop", [True, False], ids=["both-loop", "b-cannot"])
def test_the_controller_asks_both_sides_the_same_calls_fixed_at_the_first_round(
    tmp_path: Path, b_can_loop: bool
) -> None:
    """Round 1 one call each (0.1 and 0.125 s): 8 calls each from round 2, and round 1, the calibration, set
    aside: 3 rounds judged need 4 measured. A side B that makes one call though asked 8 (a test measured as a
    whole) takes both sides back to one call in round 3, and round 1 is judged as the others; every round per
    call."""
    lockstep = _scripted(tmp_path, b_can_loop)
    (result,) = lockstep.run()
    asked = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in "AB"}
    expected = [1, 8, 8, 8] if b_can_loop else [1, 8, 1]
    assert asked == {"A": expected, "B": expected}
    assert result.a == [0.1] * 3 and result.b == [0.125] * 3  # per call, however many calls
    assert (result.set_aside, result.measured) == ((1, 4) if b_can_loop else (0, 3))
    made = {"A": expected, "B": expected if b_can_loop else [1, 1, 1]}
    assert result.cost.calls == sum(made["A"]) + sum(made["B"])
    assert result.loops == (8 if b_can_loop else 1)


@pytest.mark.parametrize(
    ("calls", "aside"),
    [([1, 8, 8], True), ([1, 8], True), ([1, 1, 1], False), ([8, 8, 8], False), ([1], False), ([], False)],
)
def test_a_first_round_of_one_call_before_rounds_of_more_is_the_calibration(calls: list[int], aside: bool) -> None:
    assert calibration_set_aside(calls) is aside


def test_the_calibration_round_is_set_aside_once_its_next_round_made_more_calls() -> None:
    """A wild single call (3x) then looped rounds: the wild round leaves the judged rounds, their cores with it;
    the sessions still count it (measured); a case whose second round made one call keeps its first."""
    result = CaseResult("k", a=[1.0, 1.0], b=[3.0, 1.02], others=[0.1, 0.2], timed=[(1, 0.5), (8, 2.0)])
    assert result.set_aside_calibration()
    assert (result.a, result.b, result.others) == ([1.0], [1.02], [0.2])
    assert (result.rounds, result.measured, result.set_aside) == (1, 2, 1)
    assert not result.set_aside_calibration()  # once only
    whole = CaseResult("k", a=[1.0, 1.0], b=[3.0, 1.02], timed=[(1, 0.5), (1, 0.5)])
    assert not whole.set_aside_calibration() and whole.rounds == 2
    early = CaseResult("k", a=[1.0], b=[3.0], timed=[(1, 0.5)])
    assert not early.set_aside_calibration() and early.rounds == 1  # its next round not measured yet


def test_a_session_reads_the_calls_from_the_go_and_one_from_an_older_controller() -> None:
    ours, theirs = socket.socketpair()
    controller = theirs.makefile("rw", encoding="utf-8", buffering=1)
    turns = Turns("A", ours.makefile("rw", encoding="utf-8", buffering=1))
    answers = ('{"go": true, "loops": 8}', '{"go": true}', '{"go": true, "loops": "many"}', '{"go": false}')
    calls = []
    for round_, answer in enumerate(answers):  # one at a time, as the controller answers each ready
        controller.write(answer + "\n")
        controller.flush()
        calls.append(turns.wait("k", round_))
    assert calls == [8, 1, 1, 0]
    for opened in (turns.stream, controller, ours, theirs):
        opened.close()


def test_totals_over_the_window_are_per_call_and_peaks_levels_and_events_stay() -> None:
    """Three calls in one window: the tasks (30), transfers (10 bytes: 3.33 rounds to 3), the normalised
    runtime and the breakdown divided by 3; memory peaks, the probe and workers lost as the window saw them."""
    found = Collected(
        metrics={"task_count": 30, "bytes_transferred": 10, "runtime_norm_s": 3.0, "peak_memory_bytes": 5 * 2**30,
                 "cpu_probe_s": 0.03, "worker_restarts": 1, "max_tasks_queued": 12},
        extra={"time_breakdown": {"compute": 3.0, "idle": 0.6}, "thread_seconds": 3.6, "oom_deaths": 0,
               "task_seconds": {"sum": 0.3}},
    )  # fmt: skip
    each = per_call(found, 3)
    assert each.metrics == {
        "task_count": 10, "bytes_transferred": 3, "runtime_norm_s": pytest.approx(1.0),
        "peak_memory_bytes": 5 * 2**30, "cpu_probe_s": 0.03, "worker_restarts": 1, "max_tasks_queued": 12,
    }  # fmt: skip
    assert each.extra["time_breakdown"] == {"compute": pytest.approx(1.0), "idle": pytest.approx(0.2)}
    assert each.extra["thread_seconds"] == pytest.approx(1.2) and each.extra["oom_deaths"] == 0
    assert each.extra["task_seconds"] == {"sum": pytest.approx(0.1)}
    assert per_call(found, 1) is found


def test_a_measurement_of_several_calls_is_said_in_show_the_round_line_and_the_cost_line() -> None:
    run = Run("r", "x", "2026-01-01T00:00:00+00:00")
    looped = make_measurement(run, make_case(), extra={"loops": 8})
    old = make_measurement(run, make_case())  # a row recorded before loops: one call
    assert (looped.loops, old.loops) == (8, 1)
    assert repeat_cell(3, looped.loops) == "r3 x8 calls" and repeat_cell(0, old.loops) == "r0"
    result = CaseResult("store.py::test_x[]#0", "test_x", a=[1.0, 1.0], b=[1.1, 1.1], calls=8)
    from daskbench.judge import repeat

    result.judged = repeat.judge(Question(1.1, 30), result.parts())
    assert "round 2 x8 calls: B/A" in round_line(result, result.judged.decision)
    cost = RoundCost()
    for _ in range(2):
        cost.add_turn({"phases": {"compute": 1.6}, "loops": 8, "busy": 2.0}, wall=2.0, load=0.0)
    assert "compute 3 s (80%, 16 calls in 2 measurements)" in cost.line()


def test_an_old_row_without_loops_reads_as_one_call() -> None:
    assert Measurement("r", "f", 0, "passed", metrics={"runtime_s": 1.0}).loops == 1
    assert Measurement("r", "f", 0, "passed", metrics={"runtime_s": 1.0}, extra={"loops": "x"}).loops == 1


def test_a_budget_expects_the_next_round_to_cost_what_its_rounds_at_the_current_calls_cost() -> None:
    """A first round of one call took 1.0 s, two of 8 calls 2.8 and 3.0 s: the next is expected to take 2.9 s
    (not the 2.27 s mean of all three); a case with no timed rounds (rounds from before) takes its mean."""
    result = CaseResult("k", a=[1.0] * 3, b=[1.0] * 3, seconds=6.9, loops=8, calls=8)
    result.timed = [(1, 1.0), (8, 2.8), (8, 3.0)]
    assert result.per_round == pytest.approx(2.9)
    assert result.carried().per_round == pytest.approx(2.9)
    assert CaseResult("k", a=[1.0] * 3, b=[1.0] * 3, seconds=6.9).per_round == pytest.approx(2.3)
