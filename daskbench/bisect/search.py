"""Bisect releases or commits: the first version of a package, or commit of a checkout, that made the
selected cases slower.

``daskbench bisect --good G --bad B`` (`daskbench.cli.bisect`) runs a binary search over the candidates
of a `daskbench.bisect.plan.BisectPlan` (releases between the two ends on the index, or with ``--repo``
the commits of a git checkout), whose every step is a lockstep A/B (`daskbench.lockstep.engine`) of the good
environment (side A) against the step's (side B), each case measured in turn until the sequential rule
decides it.

Step 0 confirms the bad end against the good one: unless it is ``regressed`` there is nothing to
bisect. A step that ends undecided is run again with twice the rounds (a fresh group: the sequential
rule's error bound holds for one planned most-rounds), up to a cap, and never guessed. Each step's runs
carry the tags `TAG` (the bisection's name), `STEP`, `VERSION`, `ATTEMPT`, `VERDICT`, `MINUTES` and the
two ends, so the store holds the bisection (`stored_steps` reads it back for a continued ``--group``, and
``daskbench report`` may show it).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from daskbench import envs
from daskbench.bisect.plan import BisectPlan, Candidate, shortened
from daskbench.errors import DaskbenchError
from daskbench.judge import bisected, sequential, stats
from daskbench.judge.compare import AB_GROUP, AB_SIDE, compare_group
from daskbench.lockstep.parts import GroupPlan, Spent, run_group
from daskbench.lockstep.sessions import Side
from daskbench.store import Store
from daskbench.text import WIDTH, first_few, plural, say, wrap_line
from daskbench.verdicts import Comparison, Verdict

TAG, STEP, VERSION, ATTEMPT, VERDICT, MINUTES = (
    bisected.TAG,
    bisected.STEP,
    bisected.VERSION,
    bisected.ATTEMPT,
    bisected.VERDICT,
    bisected.MINUTES,
)
GOOD_TAG, BAD_TAG, PINS = bisected.GOOD_TAG, bisected.BAD_TAG, bisected.PINS
REPO_TAG, COMMIT, SUBJECT = bisected.REPO_TAG, bisected.COMMIT, bisected.SUBJECT
OTHER_REPO_TAG = bisected.OTHER_REPO_TAG
#: The most rounds an undecided step is raised to (its first attempt has ``--max-rounds``).
ROUNDS_CAP = 120

Say = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """One finished step: the candidate's verdict against the good end, with its evidence."""

    number: int
    label: str
    described: str
    verdict: str  # regressed | unchanged | improved | inconclusive
    cases: tuple[str, ...]  # the regressed cases (none: the case shown as evidence)
    ratio: float | None
    low: float | None
    high: float | None
    rounds: int
    minutes: float
    group: str
    boundary: float | None = None  # judged like the bad end (above) or the good end (below); None: the floor

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    @property
    def bad(self) -> bool:
        return self.verdict == "regressed"


@dataclass(frozen=True)
class Outcome:
    """How a bisection ended: ``culprit`` (first bad candidate and the step that showed it),
    ``none`` (step 0 found no regression), ``undecided`` (a step stayed undecided at the cap) or ``budget``
    (``--budget`` used up before the next step; ``step`` the last one that finished)."""

    kind: str
    step: Step
    candidate: Candidate | None = None
    #: Candidates just before the culprit that did not build: the first bad one may be any of them.
    unbuilt: tuple[Candidate, ...] = ()
    #: Undecided or out of budget after step 0: the candidates the first bad one may still be, oldest first.
    left: tuple[Candidate, ...] = ()


# -- judging a step ---------------------------------------------------------------------------


def judge(comparison: Comparison, metric: str = "runtime_s") -> tuple[str, tuple[str, ...], Verdict]:
    """A step's verdict from its group's verdicts of ``metric``: ``regressed`` when any case regressed (or
    newly fails), else ``inconclusive`` when any case is undecided, else ``improved`` when all
    improved, else ``unchanged``; with the cases and the verdict shown as evidence."""
    runtime = [v for v in comparison.verdicts if v.metric == metric]
    if not runtime:
        raise DaskbenchError(
            f"the step measured no case on both sides with a {metric}; check the pytest arguments after -- "
            "(and --metric)"
        )
    worse = [v for v in runtime if v.is_regression]
    if worse:
        return "regressed", tuple(v.workload for v in worse), max(worse, key=_ratio)
    shown = max(runtime, key=_ratio)
    if any(v.verdict == "inconclusive" for v in runtime):
        return "inconclusive", (), shown
    return ("improved" if all(v.verdict == "improved" for v in runtime) else "unchanged"), (), shown


def _ratio(verdict: Verdict) -> float:
    return verdict.ratio if verdict.ratio is not None else math.inf


def judged_step(
    store: Store,
    group: str,
    number: int,
    candidate: Candidate,
    minutes: float,
    floors: Mapping[str, float],
    metric: str = "runtime_s",
) -> Step:
    """The step of lockstep group ``group``, judged from the store (against the boundary its runs carry)."""
    comparison = compare_group(store, group, floors=floors)
    verdict, cases, shown = judge(comparison, metric)
    tags = comparison.baseline_runs[-1].tags if comparison.baseline_runs else {}
    return Step(
        number,
        candidate.label(),
        candidate.describe(),
        verdict,
        cases,
        shown.ratio,
        shown.ci_low,
        shown.ci_high,
        len(shown.baseline_values),
        minutes,
        group,
        _float(tags.get("ab_boundary")),
    )


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


# -- the store --------------------------------------------------------------------------------


def stored_steps(store: Store, name: str, floors: Mapping[str, float] | None = None) -> list[Step]:
    """The finished steps of bisection ``name``, oldest first (a step's last attempt counts)."""
    found: dict[str, Step] = {}
    runs = [r for r in store.runs() if r.tags.get(TAG) == name and r.tags.get(AB_SIDE) == "A" and VERDICT in r.tags]
    for run in reversed(runs):
        tags = run.tags
        minutes, metric = float(tags.get(MINUTES, "0")), tags.get("ab_metric", "runtime_s")
        found[tags[VERSION]] = judged_step(
            store, tags[AB_GROUP], int(tags[STEP]), _stored_candidate(tags), minutes, floors or {}, metric
        )
    return sorted(found.values(), key=lambda step: step.number)


def _stored_candidate(tags: Mapping[str, str]) -> Candidate:
    """A step's candidate from its tags: a commit, or the pins."""
    if tags.get(COMMIT):
        return Candidate(commit=tags[COMMIT], subject=tags.get(SUBJECT, ""))
    return Candidate(tuple(envs.parse_pins(tags.get(PINS, ""), PINS).items()))


def stored_repo(store: Store, name: str, tag: str = REPO_TAG) -> str | None:
    """The ``--repo`` a stored bisection of commits was started with (None: a bisection of releases); with
    ``tag`` `OTHER_REPO_TAG`, its ``--other-repo`` (None: none given)."""
    return next((run.tags[tag] for run in store.runs() if run.tags.get(TAG) == name and tag in run.tags), None)


def stored_ends(store: Store, name: str) -> tuple[str, str] | None:
    """The ``--good`` and ``--bad`` a stored bisection was started with (None: no such bisection)."""
    for run in store.runs():
        if run.tags.get(TAG) == name and GOOD_TAG in run.tags:
            return run.tags[GOOD_TAG], run.tags.get(BAD_TAG, "")
    return None


# -- running ----------------------------------------------------------------------------------


@dataclass
class Bisection:
    """Runs the steps of one bisection, printing each as it finishes (``show``), progress on ``say``."""

    name: str
    store: Store
    db: str
    pytest_args: list[str]
    python_of: Callable[[Candidate], str]  # the interpreter of a candidate's environment (built once)
    ends: tuple[str, str]  # the --good and --bad as given, tagged on every step
    repo: str = ""  # the checkout whose commits are bisected (none: releases), tagged on every step
    other_repo: str = ""  # the checkout each commit's partner package came from (--other-repo), tagged likewise
    floors: Mapping[str, float] = field(default_factory=dict)
    max_rounds: int = sequential.MAX_ROUNDS
    rounds_cap: int = ROUNDS_CAP
    max_seconds: float = 600.0
    say: Say = say
    show: Say = print
    stored: dict[str, Step] = field(default_factory=dict)  # by label: a resumed bisection's finished steps
    done: dict[str, Step] = field(default_factory=dict)
    metric: str = "runtime_s"  # --metric: the metric a step is judged by
    budget: float | None = None  # --budget: seconds for the whole bisection, shared by the steps to come
    boundary: float | None = None  # set from step 0: later steps judged like the bad end or the good end
    spent: Spent = field(default_factory=Spent)  # every step's rounds, for the cost line
    began: float = 0.0
    steps_planned: int = 1

    def run(self, plan: BisectPlan) -> Outcome:
        """Step 0, then the binary search; the outcome names the first bad candidate, or why none."""
        self.began = time.monotonic()
        self.steps_planned = plan.max_steps()
        good = self.python_of(plan.good)
        first = self._step(plan.candidates[-1], good)
        if not first.decided:
            return Outcome("undecided", first)
        if not first.bad:
            return Outcome("none", first)
        self._hunt(first)
        low, high = -1, len(plan.candidates) - 1
        skipped: set[int] = set()
        while (middle := _middle(low, high, skipped, plan.pivot)) is not None:
            left = tuple(plan.candidates[low + 1 : high + 1])
            if self.out_of_budget():
                return Outcome("budget", self._last(), left=left)
            candidate = plan.candidates[middle]
            if not self._buildable(candidate):
                skipped.add(middle)
                continue
            step = self._step(candidate, good)
            if not step.decided:
                return Outcome("undecided", step, left=left)
            low, high = (low, middle) if step.bad else (middle, high)
            self.show(f"  first bad is now {_range(plan, low, high)}")
        culprit = plan.candidates[high]
        unbuilt = tuple(plan.candidates[i] for i in sorted(skipped) if low < i < high)
        return Outcome("culprit", self.done[culprit.label()], culprit, unbuilt)

    def out_of_budget(self) -> bool:
        """Whether ``budget`` is used up (never without one)."""
        return self.budget is not None and time.monotonic() - self.began >= self.budget

    def _last(self) -> Step:
        return max(self.done.values(), key=lambda step: step.number)

    def _buildable(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` can be measured: its environment built (or its step stored already). One
        that does not install (a commit that does not build, a release the index lacks) is said once and
        skipped, as ``git bisect skip`` does; a fault of the machine (a full disk) still stops the bisection."""
        kept = self.stored.get(candidate.label())
        if kept is not None and kept.decided:
            return True
        try:
            self.python_of(candidate)
        except envs.InstallFailed as error:
            for part in wrap_line(f"  {candidate.describe()} does not build, skipped: {error}", indent="    "):
                self.show(part)
            return False
        return True

    def _hunt(self, first: Step) -> None:
        """What the later steps are asked, from what step 0 measured of the bad end: like it or like the good
        end, against the boundary between them when the change is large (`sequential.boundary_between`)."""
        floor = self.floors.get(self.metric, stats.default_floor(self.metric))
        self.boundary = sequential.boundary_between(first.low, floor)
        if self.boundary is None:
            self.say(
                f"bisect: the bad end is {_effect(first)}: a change that small is hunted as step 0 was, each step "
                f"against the floor {floor:.2f}"
            )
            return
        self.say(
            f"bisect: the bad end is {_effect(first)}: each later step is judged like it (bad: above "
            f"{self.boundary:.2f}x, the geometric midpoint of 1 and {first.low:.2f}) or like the good end (below)"
        )

    def _next_number(self) -> int:
        return 1 + max((step.number for step in [*self.stored.values(), *self.done.values()]), default=-1)

    def _share(self) -> float | None:
        """The budget of the next step: what is left of ``budget``, shared by the steps still to come."""
        if self.budget is None:
            return None
        left = self.budget - (time.monotonic() - self.began)
        return max(left, 0.0) / max(self.steps_planned - len(self.done), 1)

    def _step(self, candidate: Candidate, good: str) -> Step:
        """The candidate's stored decided step, else a new one: attempts with twice the rounds until decided."""
        kept = self.stored.get(candidate.label())
        if kept is not None and kept.decided:
            self.show(step_line(kept, stored=True))
            self.done[kept.label] = kept
            return kept
        number, python, started = self._next_number(), self.python_of(candidate), time.monotonic()
        rounds, attempt = self.max_rounds, 1
        while True:
            step = self._attempt(number, attempt, candidate, good, python, rounds, started)
            if step.decided or rounds >= self.rounds_cap or self.out_of_budget():
                break
            rounds, attempt = min(2 * rounds, self.rounds_cap), attempt + 1
            self.say(
                f"bisect: step {number} ({candidate.describe()}) not decided after {step.rounds} rounds; "
                f"again with at most {rounds} rounds per case"
            )
        self.show(step_line(step))
        self.done[step.label] = step
        return step

    def _attempt(
        self, number: int, attempt: int, candidate: Candidate, good: str, python: str, rounds: int, started: float
    ) -> Step:
        """One lockstep group of the step; its runs tagged, its verdict judged from the store."""
        group = f"{self.name}-{number}-{uuid.uuid4().hex[:6]}"
        question = self._question(rounds)
        asked = f", like bad above {question.boundary:.2f}x" if question.boundary is not None else ""
        self.say(
            f"bisect: step {number}: {candidate.describe()} (B) against good (A), at most {rounds} rounds "
            f"per case{asked}; group {group}"
        )
        self.spent.add(self._lockstep(group, {"A": Side("A", good), "B": Side("B", python)}, question))
        minutes = (time.monotonic() - started) / 60
        step = judged_step(self.store, group, number, candidate, minutes, self.floors, self.metric)
        self.tag(group, step, attempt, candidate)
        return step

    def _question(self, rounds: int) -> sequential.Question:
        floor = self.floors.get(self.metric, stats.default_floor(self.metric))
        return sequential.Question(floor, rounds, self.boundary, self.metric)

    def _lockstep(self, group: str, sides: dict[str, Side], question: sequential.Question) -> Spent:
        plan = GroupPlan(group, sides, self.db, self.pytest_args, question, self.max_seconds, budget=self._share())
        return run_group(plan, self.say)

    def tag(self, group: str, step: Step, attempt: int, candidate: Candidate) -> None:
        """Tag the group's runs: the bisection, the step, the candidate and the step's verdict (tags already
        there with these values stay: a step taken from elsewhere, such as a confirmation, is tagged once)."""
        pins = ",".join(f"{name}=={version}" for name, version in candidate.pins)
        tags = {
            TAG: self.name,
            STEP: str(step.number),
            VERSION: step.label,
            ATTEMPT: str(attempt),
            VERDICT: step.verdict,
            MINUTES: f"{step.minutes:.2f}",
            PINS: pins,
            GOOD_TAG: self.ends[0],
            BAD_TAG: self.ends[1],
        }
        if candidate.commit:
            tags |= {REPO_TAG: candidate.repo or self.repo, COMMIT: candidate.commit, SUBJECT: candidate.subject}
            tags |= {OTHER_REPO_TAG: self.other_repo} if self.other_repo else {}
        for run in self.store.runs():
            if run.tags.get(AB_GROUP) == group:
                self.store.tag_run(run.run_id, tags)


# -- words ------------------------------------------------------------------------------------


def _effect(step: Step) -> str:
    """``25.30x (10.20-62.10)``: a step's ratio and interval."""
    effect = f"{step.ratio:.2f}x" if step.ratio is not None else "-"
    interval = f" ({step.low:.2f}-{step.high:.2f})" if step.low is not None and step.high is not None else ""
    return effect + interval


def verdict_words(step: Step) -> str:
    """A step's verdict as its question had it: ``regressed``/``unchanged`` against the floor, or ``bad (above
    3.16x)`` / ``good (below 3.16x)`` against a boundary."""
    if step.boundary is None or not step.decided:
        return step.verdict
    side = "above" if step.bad else "below"
    return f"{'bad' if step.bad else 'good'} ({side} {step.boundary:.2f}x)"


def step_line(step: Step, *, stored: bool = False) -> str:
    """``step 2  standin 1.5  regressed  1.29x (1.20-1.38)  3 rounds  0.6 min  [sleepy]``; the cases on a
    line of their own when one line would be wider than `WIDTH`."""
    cases = f"  [{first_few(list(step.cases), 3)}]" if step.cases else ""
    kept = "  (stored)" if stored else ""
    line = (
        f"step {step.number}  {step.described}  {verdict_words(step)}  {_effect(step)}  "
        f"{plural(step.rounds, 'round')}  {step.minutes:.1f} min"
    )
    if len(line + cases + kept) <= WIDTH:
        return line + cases + kept
    return f"{line}{kept}\n{cases}"


def _middle(low: int, high: int, skipped: set[int], pivot: int | None = None) -> int | None:
    """The next index to measure between ``low`` and ``high`` (both excluded): the ``pivot`` while it is between
    and not skipped, else the midpoint, else the untried index nearest to it (the skipped ones built nothing to
    measure); None when none is left."""
    if pivot is not None and low < pivot < high and pivot not in skipped:
        return pivot
    middle = (low + high) // 2
    around = sorted(range(low + 1, high), key=lambda i: (abs(i - middle), i))
    return next((i for i in around if i not in skipped), None)


def _range(plan: BisectPlan, low: int, high: int) -> str:
    """Where the first bad candidate can still be: ``1.4 .. 1.5`` or just ``1.5``."""
    first, last = plan.candidates[low + 1], plan.candidates[high]
    if first == last:
        return f"{last.label()} (found)"
    return f"one of {first.label()} .. {last.label()} ({plural(high - low, 'candidate')})"


def left_text(left: tuple[Candidate, ...]) -> str:
    """Where the first bad candidate may still be: ``the first bad is one of 1a2b.. .. 3c4d.. (5 candidates)``."""
    if not left:
        return "nothing is left to search"
    if len(left) == 1:
        return f"the first bad is {left[0].label()}"
    return f"the first bad is one of {left[0].label()} .. {left[-1].label()} ({plural(len(left), 'candidate')})"


def outcome_lines(outcome: Outcome, name: str, rounds_cap: int) -> list[str]:
    """The closing lines: the first bad release (or commit) with its evidence, no regression, or the
    undecided step; each wrapped to `WIDTH` columns."""
    said = _outcome_text(outcome, name, rounds_cap)
    return [part for line in said for part in wrap_line(line, indent=" " * (len(line) - len(line.lstrip()) + 2))]


def _outcome_text(outcome: Outcome, name: str, rounds_cap: int) -> list[str]:
    step = outcome.step
    if outcome.kind == "none":
        return [f"no regression between good and bad (step 0: {step.verdict}; bisection {name})"]
    if outcome.kind == "undecided":
        return [
            f"step {step.number} ({step.described}) is not decided after {plural(step.rounds, 'round')} "
            f"(--rounds-cap {rounds_cap}); no culprit named. Continue bisection {name} with more rounds "
            f"(--rounds-cap {2 * rounds_cap}):"
        ]
    if outcome.kind == "budget":
        return [
            f"the budget was used up after step {step.number}; no culprit named: {left_text(outcome.left)}. "
            f"Continue bisection {name} with a larger --budget:"
        ]
    assert outcome.candidate is not None
    effect = f"{step.ratio:.2f}x" if step.ratio is not None else "-"
    interval = f", 95% interval {step.low:.2f}-{step.high:.2f}" if step.low and step.high else ""
    evidence = (
        f"  evidence: step {step.number}, {first_few(list(step.cases), 3)} regressed {effect}{interval}, "
        f"{plural(step.rounds, 'round')}"
    )
    command = f"(daskbench compare --group {step.group})"
    unbuilt = (
        [f"  or one of {', '.join(c.label() for c in outcome.unbuilt)} just before it, which did not build"]
        if outcome.unbuilt
        else []
    )
    if len(evidence) + 1 + len(command) > WIDTH:  # the command whole on a line of its own, to copy
        return [_culprit_line(outcome.candidate), *unbuilt, evidence, f"    {command}"]
    return [_culprit_line(outcome.candidate), *unbuilt, f"{evidence} {command}"]


def _culprit_line(candidate: Candidate) -> str:
    """``first bad release: standin 1.5`` or ``first bad commit: <full id> <subject>`` (in 120 columns)."""
    if candidate.commit:
        return f"first bad commit: {candidate.commit} {shortened(candidate.subject, 120 - 59)}"
    return f"first bad release: {candidate.describe()}"
