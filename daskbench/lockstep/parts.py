"""A lockstep comparison in parts, and a whole suite within one budget (``--budget MINUTES``).

Without a budget a comparison is one part: every case in turn until decided, at its most rounds or out of its
time (`daskbench.lockstep.engine`). With one, the first part screens every case for `SCREEN_ROUNDS` rounds
(the sequential rule's first look: an effect plainly far from every floor is decided there), and each later
part gives rounds to the cases still open, the cheapest to decide first, planned on half the budget left
(`daskbench.judge.budget.allocate`, `part_seconds`), until every case is decided, none can be given more, or
the budget ends; what stayed undecided is listed with its interval. A part is a new pair of sessions (its runs
are the group's next part: ``GROUP-A2``, ``GROUP-B2``...), so its start-up is paid again; a part is not
started when the budget left would not cover that. Every case keeps one sequential plan over all its parts
(its most rounds), so the verdicts read from the store (`compare_group`) are the rule's own.

``ab``, ``pr``, ``confirm`` and ``bisect`` say what a group runs in one record, `GroupPlan`, and hand it to
`run_group`; ``calibrate``, whose sessions run its own benchmark file under its own labels, starts each
part itself and hands that to `run_parts`.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from daskbench.judge.budget import SCREEN_ROUNDS, OpenCase, allocate, part_seconds
from daskbench.judge.sequential import ALPHA, Question
from daskbench.lockstep import turns
from daskbench.lockstep.case import CaseResult
from daskbench.lockstep.cost import RoundCost
from daskbench.lockstep.engine import Lockstep, Part, pytest_command
from daskbench.lockstep.sessions import Side
from daskbench.text import first_few, plural


@dataclass
class Spent:
    """What a comparison measured over all its parts, and what that cost."""

    results: dict[str, CaseResult] = field(default_factory=dict)  # by case key, in the order first measured
    parts: int = 0
    wall: float = 0.0
    startup: float = 0.0
    budget: float | None = None  # seconds
    replaced: RoundCost = field(default_factory=RoundCost)  # the cost of results a later step's replaced

    @property
    def cost(self) -> RoundCost:
        total = self.replaced + RoundCost()
        for result in self.results.values():
            total = total + result.cost
        return total

    def undecided(self) -> list[CaseResult]:
        """The cases measured without a verdict: still open, or their pairs of sessions disagreed."""
        return [r for r in self.results.values() if not r.decided and not r.failed]

    def open(self, question: Question, max_seconds: float) -> list[CaseResult]:
        """The cases that may still take rounds: not settled, their plan not at its most rounds, within time."""
        return [
            r
            for r in self.results.values()
            if not r.settled and not r.failed and r.plan_rounds < question.max_rounds and r.seconds < max_seconds
        ]

    def add(self, other: Spent) -> None:
        """Another comparison's (a bisection's next step): its cases under their own keys' last values; the
        rounds of a case it replaces still count in the cost."""
        for key in other.results.keys() & self.results.keys():
            self.replaced = self.replaced + self.results[key].cost
        self.replaced = self.replaced + other.replaced
        self.results.update(other.results)
        self.parts += other.parts
        self.wall += other.wall
        self.startup += other.startup

    def lines(self) -> list[str]:
        """The cost line, and with a budget what it bought: parts, minutes used, what stayed undecided."""
        cost = self.cost  # summed over every result: once
        lines = [cost.line(self.startup)]
        if busy := cost.busy_line():
            lines.append(busy)
        if self.budget is not None:
            open_ = self.undecided()
            left = f"; undecided: {plural(len(open_), 'case')}" if open_ else "; every case decided"
            lines.append(
                f"budget: {self.budget / 60:.1f} min, used {self.wall / 60:.1f} min in {plural(self.parts, 'part')}"
                f"{left}"
            )
            lines += [f"  undecided: {_undecided_line(r)}" for r in open_]
        return lines


def _undecided_line(result: CaseResult) -> str:
    name = result.shown
    decision = result.decision
    if decision is None or decision.ci_low is None or decision.ci_high is None:
        return f"{name[:80]}: {plural(result.rounds, 'round')}"
    ratio = f"{decision.ratio:.2f}x" if decision.ratio is not None else "-"
    return f"{name[:80]}: {ratio} ({decision.ci_low:.2f}-{decision.ci_high:.2f}), {plural(result.rounds, 'round')}"


def log_ratios(result: CaseResult, skip: int | None = None) -> tuple[float, ...]:
    """The log ratios of its rounds after the first ``skip`` (default: its current plan's, its repeat's when it
    is being repeated)."""
    skip = result.rounds - result.plan_rounds if skip is None else skip
    pairs = zip(result.a[skip:], result.b[skip:], strict=True)
    return tuple(math.log(b / a) for a, b in pairs if a > 0 and b > 0)


def run_parts(
    start: Callable[[Part], Lockstep],
    question: Question,
    budget: float | None,
    say: Callable[[str], None],
    max_seconds: float = math.inf,
) -> Spent:
    """Run the comparison: one part without a ``budget`` (seconds), and one more for the change verdicts to
    repeat in fresh sessions (`daskbench.judge.repeat`); with one, a screening part and parts for the open
    cases (repeats among them) until the budget ends. ``start(part)`` makes the lockstep runner of one part."""
    began = time.monotonic()
    deadline = began + budget if budget is not None else None
    spent = Spent(budget=budget)
    part: Part | None = Part(0, rounds=SCREEN_ROUNDS if budget is not None else None, deadline=deadline)
    while part is not None:
        runner = start(part)
        for result in runner.run():
            spent.results[result.key] = result
        question = runner.question  # its family counts the cases the sessions found (`Lockstep._plan`)
        spent.parts += 1
        spent.startup += runner.startup
        spent.wall = time.monotonic() - began
        if deadline is not None:
            part = _next_part(spent, question, deadline, max_seconds, say)
        else:
            part = _repeat_part(spent, question, max_seconds, say)
    return spent


def _repeat_part(spent: Spent, question: Question, max_seconds: float, say: Callable[[str], None]) -> Part | None:
    """Without a budget: a part for the cases whose change verdict waits for its repeat; None when none does."""
    waiting = [r for r in spent.open(question, max_seconds) if r.repeating and r.plan_rounds == 0]
    if not waiting:
        return None
    say(
        f"ab: part {spent.parts + 1}: {plural(len(waiting), 'change')} to repeat in a fresh pair of sessions "
        f"({first_few([r.shown for r in waiting], 2)})"
    )
    return Part(spent.parts, only=[r.key for r in waiting], prior=dict(spent.results))


def _next_part(
    spent: Spent, question: Question, deadline: float, max_seconds: float, say: Callable[[str], None]
) -> Part | None:
    """The next part: the open cases its share of the budget left can decide (`part_seconds`), cheapest
    first; None when there is none."""
    startup = spent.startup / max(spent.parts, 1)  # a part's start-up, as the parts so far took
    left = deadline - time.monotonic() - startup
    open_ = spent.open(question, max_seconds)
    if left <= 0 or not open_:
        return None
    cases = [_open_case(r, question) for r in open_]
    chosen = allocate(cases, part_seconds(left))
    if not chosen:
        return None
    names = [spent.results[a.key].shown for a in chosen]
    say(
        f"ab: part {spent.parts + 1}: {plural(len(chosen), 'open case')} closest to deciding first "
        f"({first_few(names, 2)}); {left / 60:.1f} min of the budget left"
    )
    # a repeat's rounds are counted from its own start
    targets: Mapping[str, int] = {
        a.key: a.rounds + spent.results[a.key].rounds - spent.results[a.key].plan_rounds for a in chosen
    }
    return Part(spent.parts, only=list(targets), targets=targets, prior=dict(spent.results), deadline=deadline)


def _open_case(result: CaseResult, question: Question) -> OpenCase:
    """What `allocate` needs of an open case; a repeat not begun is projected from its first reading."""
    per_round = result.per_round
    fresh = result.repeating and result.plan_rounds == 0
    logs = log_ratios(result, 0 if fresh else None)
    done = 0 if fresh else None
    alpha = ALPHA
    if result.repeating:
        alpha = question.family.repeat_alpha()
    elif result.judged is not None and result.judged.confirming:
        alpha = question.family.alone_alpha()
    return OpenCase(result.key, logs, per_round, question.max_rounds, question.floor, question.boundary, done, alpha)


@dataclass(frozen=True)
class GroupPlan:
    """What one lockstep group runs (``ab``, ``bisect``, ``confirm``, ``pr``), settled before it starts: its
    name and two sides, the store its sessions write to, their pytest arguments, the question each case is
    measured until and its limits. ``environ``: the sessions' environment (default this process's), to which
    each side's own variables and the turn variables are added; ``wrap``: applied to each session's command
    (e.g. to start it in another folder); ``first_part``: a continued group's next part number; ``exact``:
    every case runs the question's most rounds (``--rounds N``)."""

    group: str
    sides: Mapping[str, Side]
    db: str
    pytest_args: Sequence[str]
    question: Question
    max_seconds: float
    budget: float | None = None  # seconds for the whole group (--budget): in parts, see `run_parts`
    environ: Mapping[str, str] | None = None
    wrap: Callable[[Side, list[str]], list[str]] | None = None
    first_part: int = 0
    exact: bool = False
    #: Which of the common cases to measure (a shard's: ``pr --shard K/N``); all when None.
    pick: Callable[[Sequence[str], Mapping[str, str]], Sequence[str]] | None = None


def run_group(plan: GroupPlan, say: Callable[[str], None]) -> Spent:
    """A lockstep group of two interpreters, in parts as `run_parts` decides: part ``n`` (counted from
    ``plan.first_part``: a continued group adds parts) has the sessions labelled ``GROUP-An`` / ``GROUP-Bn``;
    a line per round."""
    base = dict(os.environ if plan.environ is None else plan.environ)
    question = plan.question

    def start(part: Part) -> Lockstep:
        number = plan.first_part + part.number
        shared = turns.session_env(plan.group, number, question)

        def command(side: Side) -> list[str]:
            session = pytest_command(side.python, plan.db, f"{plan.group}-{side.name}{number + 1}", plan.pytest_args)
            return plan.wrap(side, session) if plan.wrap else session

        return Lockstep(
            plan.sides,
            command=command,
            environment=lambda side: {**base, **side.env, **shared},
            question=question,
            max_seconds=plan.max_seconds,
            log_dir=Path(tempfile.mkdtemp(prefix="daskbench-lockstep-")),
            say=say,
            exact=plan.exact,
            part=part,
            pick=plan.pick,
        )

    return run_parts(start, question, plan.budget, say, plan.max_seconds)
