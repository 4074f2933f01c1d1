"""The bisections of a culprit hunt, within one budget.

Every confirmed case of the night is searched in one bisection (`daskbench.bisect.search.Bisection` over the
`Route`'s plan, the cases selected with ``-k``): a step is bad when any of them regressed, so it finds the first
candidate where one did. The cases that regressed at that step share its cause; the others, if any, are searched
again from just after it, and so on while the budget lasts. Step 0 of the first search, the bad end against the
good, is the confirmation itself when the route's bad end is tonight's environment (its A/B group is tagged as
that step, not measured again). Every step's environment is an overlay over this interpreter holding the
point's packages (a commit exported from the mirror, `envs.exported`, or a release), checked to import: one that
does not build or import is skipped, as ``git bisect skip`` does, and said. Steps already stored under the hunt's
name are reused, so running it again with more budget continues it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from daskbench import envs
from daskbench.bisect import points, search
from daskbench.bisect.plan import BisectPlan, Candidate
from daskbench.bisect.points import Point
from daskbench.culprit.route import Route
from daskbench.judge.compare import AB_GROUP
from daskbench.store import Store
from daskbench.text import say

Say = Callable[[str], None]
#: The budget of a hunt when none is given: what fits a GitHub Actions job beside the night (minutes).
BUDGET_MINUTES = 60.0


@dataclass(frozen=True)
class Search:
    """One bisection of the hunt: its name, the workloads it searched, how it ended and its steps."""

    name: str
    workloads: tuple[str, ...]
    outcome: search.Outcome
    steps: tuple[search.Step, ...]

    def shared(self) -> tuple[str, ...]:
        """The workloads the culprit's step found regressed: they share its cause (none without a culprit)."""
        return self.outcome.step.cases if self.outcome.kind == "culprit" else ()


@dataclass(frozen=True)
class Hunt:
    """What a hunt found: its route, its searches in order, the workloads no search reached (the budget ran out
    first), the candidates skipped (label: why) and the time it took against its budget (seconds)."""

    route: Route
    searches: tuple[Search, ...]
    unsearched: tuple[str, ...]
    skipped: Mapping[str, str]
    seconds: float
    budget: float
    confirmation: str = ""

    def kind(self) -> str:
        """``culprit`` when a search named one, else how the first search ended (``none``, ``undecided``...)."""
        kinds = [found.outcome.kind for found in self.searches]
        return "culprit" if "culprit" in kinds else (kinds[0] if kinds else "budget")


@dataclass
class Hunter:
    """Runs a hunt: the settings of its bisections (as ``daskbench bisect`` takes them) and its budget."""

    store: Store
    db: str
    pytest_args: Sequence[str]
    route: Route
    name: str
    floors: Mapping[str, float]
    build: envs.BuildOptions  # how its environments are built
    budget: float = BUDGET_MINUTES * 60
    max_rounds: int = 30
    rounds_cap: int = search.ROUNDS_CAP
    max_seconds: float = 600.0
    metric: str = "runtime_s"
    say: Say = say
    show: Say = print
    built: dict[str, str] = field(default_factory=dict)  # by candidate label: its interpreter
    skipped: dict[str, str] = field(default_factory=dict)  # by candidate label: why it was skipped

    def run(self, workloads: Sequence[str], confirmation: str = "") -> Hunt:
        """The searches, until every workload is explained, a search ends without a culprit, or the budget ends."""
        began, remaining, start = time.monotonic(), list(workloads), 0
        searches: list[Search] = []
        candidates = self.route.plan.candidates
        while remaining and start < len(candidates):
            left = self.budget - (time.monotonic() - began)
            if left <= 0:
                break
            name = self.name if not searches else f"{self.name}-{len(searches) + 1}"
            found = self._search(name, self._plan(start), remaining, left, confirmation if not searches else "")
            searches.append(found)
            if found.outcome.kind != "culprit" or found.outcome.candidate is None:
                break
            remaining = [workload for workload in remaining if workload not in found.shared()]
            start = candidates.index(found.outcome.candidate) + 1
        last = searches[-1].workloads if searches else ()
        unsearched = tuple(remaining) if tuple(remaining) != last else ()
        seconds = time.monotonic() - began
        return Hunt(self.route, tuple(searches), unsearched, dict(self.skipped), seconds, self.budget, confirmation)

    def _plan(self, start: int) -> BisectPlan:
        """The route's plan from candidate ``start`` on (a later search starts after the last culprit)."""
        plan = self.route.plan
        pivot = plan.pivot - start if plan.pivot is not None and plan.pivot >= start else None
        return BisectPlan(plan.moving, plan.good, plan.candidates[start:], plan.notes, pivot)

    def _search(self, name: str, plan: BisectPlan, workloads: list[str], budget: float, confirmation: str) -> Search:
        bisection = search.Bisection(
            name,
            self.store,
            self.db,
            [*self.pytest_args, "-k", " or ".join(workloads)],
            self.python_of,
            (self.route.good.run_id, self.route.bad.run_id),
            floors=self.floors,
            max_rounds=self.max_rounds,
            rounds_cap=self.rounds_cap,
            max_seconds=self.max_seconds,
            say=self.say,
            show=self.show,
            stored={step.label: step for step in search.stored_steps(self.store, name, self.floors)},
            metric=self.metric,
            budget=budget,
        )
        if confirmation and not self.route.held:
            self._confirmation_as_step_zero(bisection, plan.candidates[-1], confirmation)
        self.say(f"culprit: bisection {name}: {len(plan.candidates)} candidates, {', '.join(workloads)}")
        outcome = bisection.run(plan)
        steps = tuple(sorted(bisection.done.values(), key=lambda step: step.number))
        for line in search.outcome_lines(outcome, name, self.rounds_cap):
            self.show(line)
        return Search(name, tuple(workloads), outcome, steps)

    def _confirmation_as_step_zero(self, bisection: search.Bisection, bad: Candidate, group: str) -> None:
        """The confirmation measured the bad end (tonight's environment) against the good one: it is step 0,
        tagged as the bisection's (once), never measured again."""
        if bad.label() in bisection.stored:
            return
        step = search.judged_step(self.store, group, 0, bad, 0.0, self.floors, self.metric)
        if not step.bad:
            return
        if not any(run.tags.get(search.TAG) for run in self.store.runs() if run.tags.get(AB_GROUP) == group):
            bisection.tag(group, step, 1, bad)
        bisection.stored[bad.label()] = step

    def python_of(self, candidate: Candidate) -> str:
        """The interpreter of ``candidate``'s environment (built once): an overlay holding its point's packages,
        each checked to import. `envs.InstallFailed` when it does not build or import: the bisection skips it."""
        label = "good" if candidate == self.route.plan.good else candidate.label()
        if label in self.skipped:
            raise envs.InstallFailed(self.skipped[label])
        if label not in self.built:
            try:
                self.built[label] = self._build(self.route.point(candidate), candidate.describe())
            except envs.InstallFailed as error:
                self.skipped[label] = str(error)
                raise
        return self.built[label]

    def _build(self, point: Point, described: str) -> str:
        return points.point_python(point, self.route.repos, described, self.build, say=self.say)
