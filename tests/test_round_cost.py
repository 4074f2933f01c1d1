"""What a comparison's rounds cost and how a budget spends them (`daskbench.lockstep.cost`, `daskbench.lockstep.parts`):
turns with planted phases, parts with planted rounds; every figure below can be worked out by hand."""

from __future__ import annotations

import json
import math
import re
import socket
from dataclasses import dataclass, field

import pytest

from daskbench.judge import repeat
from daskbench.judge.sequential import Question
from daskbench.lockstep.case import CaseResult, round_line
from daskbench.lockstep.cost import RoundCost
from daskbench.lockstep.engine import Part, _value
from daskbench.lockstep.parts import Spent, run_parts
from daskbench.lockstep.turns import Turns
from daskbench.model import Measurement


def turn(compute: float, restart: float = 0.1, warmup: float = 0.02, collectors: float = 0.12, rest: float = 0.05):
    phases = {"compute": compute, "restart": restart, "warmup": warmup, "collectors": collectors, "build": 0.0}
    return {"done": "k", "phases": phases, "busy": compute + restart + warmup + collectors + rest}


def test_the_cost_line_splits_a_rounds_wall_time_into_compute_and_the_rest() -> None:
    """Two turns of 1 s compute, 0.24 s of phases and 0.05 s of storing each (1.29 s on the side), seen
    1.38 s by the controller, and 0.02 s of judging: wall 2 x 1.38 + 0.02 = 2.78 s, compute 2 s (72%), between
    the sides (2.78 - 2 x 1.29) / 2 = 0.10 s a turn."""
    cost = RoundCost()
    for _ in range(2):
        cost.add_turn(turn(1.0), wall=1.38)
    cost.add_wall(0.02)
    assert cost.wall == pytest.approx(2.78) and cost.compute == pytest.approx(2.0)
    assert cost.share == pytest.approx(2.0 / 2.78)
    line = cost.line(startup=12.4)
    assert line.startswith("rounds: 3 s of which compute 2 s (72%); a measurement: restart 0.10 s, warm-up 0.02 s")
    assert "collectors 0.12 s, storing and the rest 0.05 s, between the sides 0.10 s" in line
    assert line.endswith("start-up 12 s (sessions, clusters)")


def test_costs_add_up_and_a_turn_without_phases_counts_its_wall_time_as_busy() -> None:
    a, b = RoundCost(), RoundCost()
    a.add_turn(turn(0.5), wall=0.8)
    b.add_turn({"done": "k"}, wall=0.3)  # an older session: no phases, no busy
    total = a + b
    assert total.turns == 2 and total.compute == pytest.approx(0.5) and total.busy == pytest.approx(0.79 + 0.3)
    assert RoundCost().line() == "rounds: none measured"


def test_a_turn_is_judged_by_the_metric_asked_and_the_runtime_by_default() -> None:
    done = {"value": 1.5, "metrics": {"runtime_s": 1.5, "peak_worker_memory_above_idle_bytes": 2e8}}
    assert _value(done, "runtime_s") == 1.5
    assert _value(done, "peak_worker_memory_above_idle_bytes") == 2e8
    assert _value({"value": 1.2}, "runtime_s") == 1.2  # a session that sends no metrics
    assert _value({"value": 1.2}, "cost_usd") is None


# -- parts within a budget ------------------------------------------------------------------


@dataclass
class Planted:
    """A stand-in for one part's sessions: each case gets the rounds the part allows, of planted ratios."""

    ratios: dict[str, list[float]]
    seconds_per_round: float
    question: Question
    parts: list[Part] = field(default_factory=list)
    startup: float = 5.0
    wall: float = 0.0

    def __call__(self, part: Part) -> Planted:
        self.parts.append(part)
        return self

    def run(self) -> list[CaseResult]:
        part = self.parts[-1]
        found = []
        for key, ratios in self.ratios.items():
            if part.only is not None and key not in part.only:
                continue
            prior = part.prior.get(key)
            result = prior.carried() if prior is not None else CaseResult(key)
            offset, target = result.rounds, part.targets.get(key, part.rounds)
            while result.rounds < len(ratios) and not result.settled and result.plan_rounds < self.question.max_rounds:
                if (target is not None and result.rounds >= target) or _repeat_waits(result, offset):
                    break
                result.b.append(ratios[result.rounds])
                result.a.append(1.0)
                result.seconds += self.seconds_per_round
                result.judged = repeat.judge(self.question, result.parts())
            found.append(result)
        return found


def _repeat_waits(result: CaseResult, offset: int) -> bool:
    """Whether its change verdict, reached in this part, waits for a fresh pair of sessions (as `Lockstep`)."""
    return result.judged is not None and result.judged.repeating and result.judged.first > offset


def test_a_budget_screens_every_case_then_gives_rounds_only_to_the_open_ones() -> None:
    """A plain 2x change is decided at the screening's 3 rounds; an A/A case (ratios about 1, spread 0.03)
    is not, and the next part is for it alone, up to the look its estimate names; it is decided there."""
    question = Question(1.10, 30)
    aa = [1.02, 0.97, 1.01, 0.99, 1.03, 0.98, 1.0, 1.01, 0.99, 1.02, 0.98, 1.0]
    planted = Planted({"big": [2.0, 2.02, 1.98, 2.0], "aa": aa}, 1.0, question)
    spent = run_parts(planted, question, budget=600.0, say=lambda line: None)
    first, second = planted.parts[0], planted.parts[1]
    assert first.rounds == 3 and first.only is None
    assert list(second.only or []) == ["aa"] and second.targets["aa"] > 3
    assert spent.results["big"].rounds == 3 and spent.results["big"].decision.verdict == "regressed"
    assert spent.results["aa"].decided and spent.results["aa"].decision.verdict == "unchanged"
    assert spent.parts == 2 and spent.undecided() == []
    assert re.match(r"budget: 10\.0 min, used \d+\.\d min in 2 parts; every case decided", spent.lines()[1])


def test_without_a_budget_a_comparison_is_one_part_of_every_case_until_decided() -> None:
    question = Question(1.10, 30)
    planted = Planted({"big": [2.0, 2.02, 1.98, 2.0]}, 1.0, question)
    spent = run_parts(planted, question, budget=None, say=lambda line: None)
    assert len(planted.parts) == 1 and planted.parts[0].rounds is None and spent.budget is None
    assert len(spent.lines()) == 1


#: A 1.10x change, per-round spread about 0.03: regressed within a few rounds, its interval inside 1.20x.
SMALL = [1.12, 1.07, 1.10, 1.13, 1.08, 1.11, 1.09, 1.10, 1.12, 1.08, 1.10, 1.11, 1.09, 1.10, 1.12, 1.08]


def test_a_small_change_is_repeated_in_a_part_of_its_own_and_counts_once_both_agree() -> None:
    """Without a budget: part 1 decides the 1.10x (and the 2x, whose interval clears 1.20x); only the 1.10x
    gets part 2, fresh sessions, where it is judged from its own first round and agrees."""
    question = Question(1.05, 30)
    planted = Planted({"big": [2.0, 2.02, 1.98, 2.0], "small": SMALL + SMALL}, 1.0, question)
    said: list[str] = []
    spent = run_parts(planted, question, budget=None, say=said.append)
    assert len(planted.parts) == 2 and list(planted.parts[1].only or []) == ["small"]
    small = spent.results["small"]
    assert small.starts and small.judged is not None and small.judged.first == small.starts[0]
    assert small.decision is not None and small.decision.verdict == "regressed"
    assert "repeated in a fresh pair of sessions" in small.decision.note
    assert spent.results["big"].rounds == 3 and spent.results["big"].decision.verdict == "regressed"
    assert said == ["ab: part 2: 1 change to repeat in a fresh pair of sessions (small)"]


def test_a_change_the_fresh_sessions_do_not_see_ends_inconclusive_and_is_listed() -> None:
    """The first pair reads 1.10x (decided at the look of 5 rounds), the fresh pair 1.00x (spread 0.01): the
    sessions disagree; no more rounds."""
    question = Question(1.05, 30)
    same = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01]
    planted = Planted({"small": SMALL[:5] + same}, 1.0, question)
    spent = run_parts(planted, question, budget=None, say=lambda line: None)
    small = spent.results["small"]
    assert small.judged is not None and small.judged.first == 5
    assert small.settled and not small.decided and small.decision is not None
    assert small.decision.verdict == "inconclusive" and "the sessions disagree" in small.decision.note
    assert len(planted.parts) == 2 and [r.key for r in spent.undecided()] == ["small"]


def test_within_a_budget_a_repeat_gets_rounds_counted_from_its_own_start() -> None:
    question = Question(1.05, 30)
    planted = Planted({"small": SMALL + SMALL}, 1.0, question)
    spent = run_parts(planted, question, budget=600.0, say=lambda line: None)
    small = spent.results["small"]
    assert small.decision is not None and small.decision.verdict == "regressed" and small.judged is not None
    assert small.rounds > small.judged.first >= 3 and len(small.starts) >= 2


def test_what_a_spent_budget_left_undecided_is_listed_with_its_interval() -> None:
    """A case that cannot be decided (spread 0.3 at a 1.1x) stays open and is named with its interval."""
    question = Question(1.10, 8)
    noisy = [1.5, 0.8, 1.1, 1.45, 0.85, 1.3, 0.9, 1.2]
    planted = Planted({"noisy": noisy}, 1.0, question)
    spent = run_parts(planted, question, budget=600.0, say=lambda line: None)
    assert [r.key for r in spent.undecided()] == ["noisy"]
    listed = spent.lines()[-1]
    assert listed.startswith("  undecided: noisy: ") and "rounds" in listed and "(" in listed


def test_no_part_starts_when_the_budget_left_would_not_cover_its_start_up() -> None:
    question = Question(1.10, 30)
    planted = Planted({"aa": [1.02, 0.97, 1.01, 0.99, 1.03]}, 1.0, question, startup=math.inf)
    spent = run_parts(planted, question, budget=60.0, say=lambda line: None)
    assert spent.parts == 1 and [r.key for r in spent.undecided()] == ["aa"]


def test_spent_steps_add_up_for_a_bisection() -> None:
    one, two = Spent(parts=1, wall=10.0, startup=4.0), Spent(parts=2, wall=20.0, startup=6.0)
    one.add(two)
    assert (one.parts, one.wall, one.startup) == (3, 30.0, 10.0)


def test_the_steps_of_a_bisection_add_up_though_each_measures_the_same_case() -> None:
    """Every step of a bisection compares the same case: its cost line counts the rounds of every step, not
    only the last step's (which replaces the case's rounds in the results)."""
    total = Spent()
    for compute in (6.6, 1.6, 8.8, 2.0):
        step = Spent()
        step.results["bench.py::test_work[]#0"] = CaseResult(
            "bench.py::test_work[]#0", cost=RoundCost(turns=2, wall=compute + 1.0, compute=compute)
        )
        total.add(step)
    assert total.cost.compute == pytest.approx(19.0) and total.cost.turns == 8
    assert total.cost.wall == pytest.approx(23.0)


def test_a_busy_machine_is_said_under_the_cost_line_and_a_quiet_one_is_not() -> None:
    """Other work's cores as the sides said them: 0.1 (the idle twin) says nothing; 1.2 (another suite beside it)
    is said, with the load average read; none said (an older session) says nothing."""
    quiet, busy, unread = RoundCost(), RoundCost(), RoundCost()
    for others in (0.1, 0.2):
        quiet.add_turn({**turn(1.0), "others": others}, wall=1.4, load=1.3)
    for others in (1.1, 1.3):
        busy.add_turn({**turn(1.0), "others": others}, wall=1.4, load=4.8)
    unread.add_turn(turn(1.0), wall=1.4, load=9.0)
    assert quiet.busy_line(cores=2) is None and unread.busy_line(cores=2) is None
    line = busy.busy_line(cores=2)
    assert line is not None and line.startswith("the machine was busy: other work used 1.2 of its 2 cores during the")
    assert "(load average 4.8)" in line and "repeated in a fresh pair" in line and "quiet machine" in line
    assert (quiet + busy).busy_line(cores=2) is not None  # mean 0.675 > 0.5


def test_a_cases_parts_are_busy_by_the_cores_other_work_used_and_a_change_there_waits_for_its_repeat() -> None:
    """Rounds 1-3 (the first pair of sessions) saw other work use 0.1 cores, rounds 4-6 (the second) 1.2: only the
    second part is busy; the same 1.5x read in the second part alone is repeated, in the first alone counted."""
    result = CaseResult("k", a=[1.0] * 6, b=[1.5] * 6, starts=[3], others=[0.1, 0.0, 0.2, 1.2, None, 1.1])
    assert result.busy_parts() == [False, True] and result.carried().busy_parts() == [False, True]
    busy_only = CaseResult("k", a=[1.0] * 3, b=[1.5] * 3, others=[1.0, 1.1, 0.9])
    judged = repeat.judge(Question(1.05, 30), busy_only.parts(), busy_only.busy_parts())
    assert judged.repeating and judged.decision.verdict == "inconclusive"
    quiet = CaseResult("k", a=[1.0] * 3, b=[1.5] * 3, others=[0.1, 0.1, 0.1])
    assert repeat.judge(Question(1.05, 30), quiet.parts(), quiet.busy_parts()).decision.verdict == "regressed"


def test_a_sessions_done_carries_the_cores_other_work_used_and_nothing_when_it_read_none() -> None:
    ours, theirs = socket.socketpair()
    controller = theirs.makefile("rw", encoding="utf-8", buffering=1)
    turns = Turns("A", ours.makefile("rw", encoding="utf-8", buffering=1))
    read = Measurement("r", "f", 0, "passed", metrics={"runtime_s": 1.0}, extra={"others_cores": 1.2})
    turns.done("k", 0, read, busy=1.5)
    turns.done("k", 1, Measurement("r", "f", 1, "passed", metrics={"runtime_s": 1.0}), busy=1.5)
    said = [json.loads(controller.readline()) for _ in range(2)]
    assert said[0]["others"] == 1.2 and "others" not in said[1]
    for opened in (turns.stream, controller, ours, theirs):
        opened.close()


def test_spent_lines_carry_the_busy_machine_line_and_the_pr_comment_says_so() -> None:
    from daskbench.pr import measured_text

    cost = RoundCost()
    for _ in range(2):
        cost.add_turn({**turn(1.0), "others": 1.5}, wall=1.4, load=4.0)
    spent = Spent(replaced=cost)
    assert any(line.startswith("the machine was busy") for line in spent.lines())
    assert "measured on a busy machine" in measured_text(spent)


def test_a_round_line_says_a_first_reading_then_the_repeat_plainly() -> None:
    """At its first reading a case reads "regressed here, to repeat in fresh sessions"; a repeat still open
    at its most rounds reads inconclusive, its rounds counted as repeats."""
    question = Question(1.05, 30)
    result = CaseResult("c", a=[1.0] * 5, b=SMALL[:5])
    result.judged = repeat.judge(question, result.parts())
    result.stopped = "to repeat in fresh sessions"
    assert round_line(result, result.judged.decision).endswith(": regressed here, to repeat in fresh sessions")
    result = result.carried()
    result.a += [1.0] * 4
    result.b += [1.2, 0.8, 1.1, 0.9]
    result.judged = repeat.judge(question, result.parts())
    result.stopped = "not decided: --max-rounds 30 reached"
    line = round_line(result, result.judged.decision)
    assert " round 9 (repeat 4): " in line and line.endswith(": inconclusive, not decided: --max-rounds 30 reached")
