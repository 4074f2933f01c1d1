"""Bisect releases or commits: the first version of a package, or commit of a checkout, that made the
selected cases slower.

``daskbench bisect --good G --bad B`` (`daskbench.cli.bisect`) finds the packages whose versions differ
between the two ends (`moving_packages`; dask and distributed move together), lists their releases
between the two on the index (`make_plan`, `daskbench.envs.available_versions`), and runs a binary
search whose every step is a lockstep A/B (`daskbench.ab.lockstep`) of the good environment (side A)
against the step's (side B), each case measured in turn until the sequential rule decides it. With
``--repo``, the candidates are the commits of a local git checkout after good up to bad (`commit_plan`,
first-parent), each installed from its source tree (`daskbench.envs.exported`).

Step 0 confirms the bad end against the good one: unless it is ``regressed`` there is nothing to
bisect. A step that ends undecided is run again with twice the rounds (a fresh group: the sequential
rule's error bound holds for one planned most-rounds), up to a cap, and never guessed. Each step's runs
carry the tags `TAG` (the bisection's name), `STEP`, `VERSION`, `ATTEMPT`, `VERDICT`, `MINUTES` and the
two ends, so the store holds the bisection (`stored_steps` reads it back for ``--resume``, and
``daskbench report`` may show it). This lives in ``ab/`` because a step is a lockstep A/B.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from daskbench import envs
from daskbench.ab.lockstep import run_group
from daskbench.ab.sessions import Side
from daskbench.errors import DaskbenchError
from daskbench.judge import bisected, sequential, stats
from daskbench.judge.compare import AB_GROUP, AB_SIDE, compare_group
from daskbench.model import Comparison, Run, Verdict
from daskbench.store import Store
from daskbench.text import WIDTH, first_few, plural, say, terminal_safe, wrap_line

if TYPE_CHECKING:
    from packaging.version import Version

#: How much of a commit's subject a step line shows.
SUBJECT_WIDTH = 36
#: Packages that move together: when both differ, a step pins both to one version.
PAIRED = ("dask", "distributed")
#: The step tags (`daskbench.judge.bisected` reads them back for the alert and the report).
TAG, STEP, VERSION, ATTEMPT, VERDICT, MINUTES = (
    bisected.TAG, bisected.STEP, bisected.VERSION, bisected.ATTEMPT, bisected.VERDICT, bisected.MINUTES,
)  # fmt: skip
GOOD_TAG, BAD_TAG, PINS = bisected.GOOD_TAG, bisected.BAD_TAG, bisected.PINS
REPO_TAG, COMMIT, SUBJECT = bisected.REPO_TAG, bisected.COMMIT, bisected.SUBJECT
#: The most rounds an undecided step is raised to (its first attempt has ``--max-rounds``).
ROUNDS_CAP = 120

Say = Callable[[str], None]
Pins = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Candidate:
    """One point of a bisection: the versions of the bisected packages (a release, or a dask+distributed
    pair), or a commit of a git checkout (its full id, and its subject as the commit has it)."""

    pins: Pins = ()
    commit: str = ""
    subject: str = ""

    def label(self) -> str:
        """``1.5`` when every package has one version, else ``dask==X,distributed==Y``; a commit's 12-char id."""
        if self.commit:
            return self.commit[:12]
        versions = {version for _, version in self.pins}
        return versions.pop() if len(versions) == 1 else ",".join(f"{n}=={v}" for n, v in self.pins)

    def describe(self) -> str:
        """``standin 1.5``, ``dask 2026.7.0, distributed 2026.7.0``, or ``1a2b3c4d5e6f the subject``
        (escaped, cut to `SUBJECT_WIDTH`)."""
        if self.commit:
            return f"{self.label()} {shortened(self.subject, SUBJECT_WIDTH)}"
        return ", ".join(f"{name} {version}" for name, version in self.pins)


def shortened(text: str, width: int) -> str:
    """``text`` inert on a terminal, cut to ``width`` characters (``...`` ends a cut one)."""
    safe = terminal_safe(text)
    return safe if len(safe) <= width else safe[: width - 3] + "..."


@dataclass(frozen=True)
class BisectPlan:
    """What is bisected: the moving packages, the good point and the candidates after it, oldest first
    (the last is the bad end), and notes (a release of one of a pair only, skipped)."""

    moving: tuple[str, ...]
    good: Candidate
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()

    def max_steps(self) -> int:
        """Step 0 (the bad end) and the binary search over the rest."""
        return 1 + math.ceil(math.log2(len(self.candidates)))


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

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    @property
    def bad(self) -> bool:
        return self.verdict == "regressed"


@dataclass(frozen=True)
class Outcome:
    """How a bisection ended: ``culprit`` (first bad candidate and the step that showed it),
    ``none`` (step 0 found no regression) or ``undecided`` (a step stayed undecided at the cap)."""

    kind: str
    step: Step
    candidate: Candidate | None = None


# -- what is bisected -------------------------------------------------------------------------


def recorded_pins(run: Run) -> dict[str, str]:
    """A run's recorded versions as pins (normalized names; python and daskbench left out)."""
    found = {envs.normalized(name): version for name, version in run.versions.items()}
    return {name: version for name, version in found.items() if name not in envs.NOT_PINNED}


def moving_packages(good: Mapping[str, str], bad: Mapping[str, str], only: Collection[str] | None) -> tuple[str, ...]:
    """The packages to bisect: those that differ (or ``only`` these); one line when there is nothing
    to bisect, or more than one package (dask with distributed counts as one)."""
    differ = differing_names(good, bad)
    if not differ:
        raise DaskbenchError(f"--good and --bad name the same versions ({_shown(good)}): nothing to bisect")
    chosen = sorted(envs.normalized(name) for name in only) if only else differ
    for name in chosen:
        if name not in good or name not in bad:
            side = "--good" if name not in good else "--bad"
            raise DaskbenchError(f"{side} has no version of {name}; give it as a pin, e.g. {side} {name}==VERSION")
        if name not in differ:
            raise DaskbenchError(f"--only {name}: it is {good[name]} at both ends; they differ in {', '.join(differ)}")
    if len(chosen) > 1 and set(chosen) != set(PAIRED):
        raise DaskbenchError(f"good and bad differ in {plural(len(chosen), 'package')} ({first_few(chosen, 4)}); "
                             "bisect one at a time: --only NAME (dask and distributed move as one) or pins "
                             "that differ in one")  # fmt: skip
    return tuple(chosen)


def differing_names(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """The package names whose versions differ between two version sets (one lacking a name differs), sorted."""
    return sorted(name for name in {*a, *b} if not _same(a.get(name), b.get(name)))


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and envs.same_version(a, b)


def _shown(pins: Mapping[str, str]) -> str:
    return first_few([f"{name}=={version}" for name, version in sorted(pins.items())], 4)


def make_plan(
    good: Mapping[str, str], bad: Mapping[str, str], moving: tuple[str, ...], listed: Mapping[str, list[str]],
    where: str,
) -> BisectPlan:  # fmt: skip
    """The candidates strictly after good up to bad, from each moving package's ``listed`` versions
    (oldest first); one line for an end the index (``where``) does not have, or a bad not newer."""
    for name in moving:
        for flag, end in (("--good", good), ("--bad", bad)):
            _check_listed(name, end[name], listed[name], flag, where)
        if _key(bad[name]) <= _key(good[name]):
            raise DaskbenchError(f"--bad {name}=={bad[name]} is not newer than --good {name}=={good[name]}")
    first = moving[0]
    low, high = _key(good[first]), _key(bad[first])
    between = {name: [v for v in listed[name] if low < _key(v) < high] for name in moving}
    common = [v for v in between[first] if all(_has(between[name], v) for name in moving)]
    notes = tuple(f"{name} {v} has no matching {_other(moving, name)} release: skipped"
                  for name in moving for v in between[name] if not _has(common, v))  # fmt: skip
    candidates = [Candidate(tuple((name, v) for name in moving)) for v in common]
    ends = (Candidate(tuple((name, good[name]) for name in moving)), Candidate(tuple((n, bad[n]) for n in moving)))
    return BisectPlan(moving, ends[0], (*candidates, ends[1]), notes)


def _check_listed(name: str, version: str, listed: list[str], flag: str, where: str) -> None:
    if not _has(listed, version):
        offers = f"it offers {first_few(listed[::-1], 5)}" if listed else "it has no version of it"
        raise DaskbenchError(f"{flag} {name}=={version} is not on the index (asked {where}); {offers}")


def _has(versions: list[str], version: str) -> bool:
    return any(envs.same_version(v, version) for v in versions)


def _key(version: str) -> Version:
    from packaging.version import Version

    return Version(version)


def _other(moving: tuple[str, ...], name: str) -> str:
    return "/".join(other for other in moving if other != name)


def commit_plan(repo: Path, good_ref: str, bad_ref: str) -> BisectPlan:
    """The commits of ``repo`` after ``good_ref`` up to ``bad_ref`` (first-parent, oldest first); one line
    for an unknown ref, identical ends, or a good that is not an ancestor of bad."""
    good = envs.resolve_commit(repo, good_ref, "--good")
    bad = envs.resolve_commit(repo, bad_ref, "--bad")
    if good == bad:
        raise DaskbenchError(f"--good {good_ref} and --bad {bad_ref} are the same commit ({good[:12]}): "
                             "nothing to bisect")  # fmt: skip
    commits = envs.commits_between(repo, good, bad)
    subjects = envs.commit_subjects(repo, good, bad)
    candidates = tuple(Candidate(commit=commit, subject=subjects.get(commit, "")) for commit in commits)
    return BisectPlan((repo.name,), Candidate(commit=good, subject=envs.commit_subject(repo, good)), candidates)


# -- judging a step ---------------------------------------------------------------------------


def judge(comparison: Comparison) -> tuple[str, tuple[str, ...], Verdict]:
    """A step's verdict from its group's runtime verdicts: ``regressed`` when any case regressed (or
    newly fails), else ``inconclusive`` when any case is undecided, else ``improved`` when all
    improved, else ``unchanged``; with the cases and the verdict shown as evidence."""
    runtime = [v for v in comparison.verdicts if v.metric == "runtime_s"]
    if not runtime:
        raise DaskbenchError("the step measured no case on both sides; check the pytest arguments after --")
    worse = [v for v in runtime if v.is_regression]
    if worse:
        return "regressed", tuple(v.workload for v in worse), max(worse, key=_ratio)
    shown = max(runtime, key=_ratio)
    if any(v.verdict == "inconclusive" for v in runtime):
        return "inconclusive", (), shown
    return ("improved" if all(v.verdict == "improved" for v in runtime) else "unchanged"), (), shown


def _ratio(verdict: Verdict) -> float:
    return verdict.ratio if verdict.ratio is not None else math.inf


def judged_step(store: Store, group: str, number: int, candidate: Candidate, minutes: float,
                floors: Mapping[str, float]) -> Step:  # fmt: skip
    """The step of lockstep group ``group``, judged from the store."""
    verdict, cases, shown = judge(compare_group(store, group, floors=floors))
    return Step(number, candidate.label(), candidate.describe(), verdict, cases, shown.ratio, shown.ci_low,
                shown.ci_high, len(shown.baseline_values), minutes, group)  # fmt: skip


# -- the store --------------------------------------------------------------------------------


def stored_steps(store: Store, name: str, floors: Mapping[str, float] | None = None) -> list[Step]:
    """The finished steps of bisection ``name``, oldest first (a step's last attempt counts)."""
    found: dict[str, Step] = {}
    runs = [r for r in store.runs() if r.tags.get(TAG) == name and r.tags.get(AB_SIDE) == "A" and VERDICT in r.tags]
    for run in reversed(runs):
        tags = run.tags
        found[tags[VERSION]] = judged_step(store, tags[AB_GROUP], int(tags[STEP]), _stored_candidate(tags),
                                           float(tags.get(MINUTES, "0")), floors or {})  # fmt: skip
    return sorted(found.values(), key=lambda step: step.number)


def _stored_candidate(tags: Mapping[str, str]) -> Candidate:
    """A step's candidate from its tags: a commit, or the pins."""
    if tags.get(COMMIT):
        return Candidate(commit=tags[COMMIT], subject=tags.get(SUBJECT, ""))
    return Candidate(tuple(envs.parse_pins(tags.get(PINS, ""), PINS).items()))


def stored_repo(store: Store, name: str) -> str | None:
    """The ``--repo`` a stored bisection of commits was started with (None: a bisection of releases)."""
    return next((run.tags[REPO_TAG] for run in store.runs() if run.tags.get(TAG) == name and REPO_TAG in run.tags),
                None)  # fmt: skip


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
    floors: Mapping[str, float] = field(default_factory=dict)
    max_rounds: int = sequential.MAX_ROUNDS
    rounds_cap: int = ROUNDS_CAP
    max_seconds: float = 600.0
    say: Say = say
    show: Say = print
    stored: dict[str, Step] = field(default_factory=dict)  # by label: a resumed bisection's finished steps
    done: dict[str, Step] = field(default_factory=dict)

    def run(self, plan: BisectPlan) -> Outcome:
        """Step 0, then the binary search; the outcome names the first bad candidate, or why none."""
        good = self.python_of(plan.good)
        first = self._step(plan.candidates[-1], good)
        if not first.decided:
            return Outcome("undecided", first)
        if not first.bad:
            return Outcome("none", first)
        low, high = -1, len(plan.candidates) - 1
        while high - low > 1:
            middle = (low + high) // 2
            step = self._step(plan.candidates[middle], good)
            if not step.decided:
                return Outcome("undecided", step)
            low, high = (low, middle) if step.bad else (middle, high)
            self.show(f"  first bad is now {_range(plan, low, high)}")
        culprit = plan.candidates[high]
        return Outcome("culprit", self.done[culprit.label()], culprit)

    def _next_number(self) -> int:
        return 1 + max((step.number for step in [*self.stored.values(), *self.done.values()]), default=-1)

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
            if step.decided or rounds >= self.rounds_cap:
                break
            rounds, attempt = min(2 * rounds, self.rounds_cap), attempt + 1
            self.say(f"bisect: step {number} ({candidate.describe()}) not decided after {step.rounds} rounds; "
                     f"again with at most {rounds} rounds per case")  # fmt: skip
        self.show(step_line(step))
        self.done[step.label] = step
        return step

    def _attempt(self, number: int, attempt: int, candidate: Candidate, good: str, python: str, rounds: int,
                 started: float) -> Step:  # fmt: skip
        """One lockstep group of the step; its runs tagged, its verdict judged from the store."""
        group = f"{self.name}-{number}-{uuid.uuid4().hex[:6]}"
        self.say(f"bisect: step {number}: {candidate.describe()} (B) against good (A), at most {rounds} rounds "
                 f"per case; group {group}")  # fmt: skip
        self._lockstep(group, {"A": Side("A", good), "B": Side("B", python)}, rounds)
        minutes = (time.monotonic() - started) / 60
        step = judged_step(self.store, group, number, candidate, minutes, self.floors)
        self._tag(group, step, attempt, candidate)
        return step

    def _lockstep(self, group: str, sides: dict[str, Side], rounds: int) -> None:
        floor = self.floors.get("runtime_s", stats.default_floor("runtime_s"))
        run_group(group, sides, self.db, self.pytest_args, floor=floor, max_rounds=rounds,
                  max_seconds=self.max_seconds, say=self.say)  # fmt: skip

    def _tag(self, group: str, step: Step, attempt: int, candidate: Candidate) -> None:
        """Tag the group's runs: the bisection, the step, the candidate and the step's verdict."""
        pins = ",".join(f"{name}=={version}" for name, version in candidate.pins)
        tags = {TAG: self.name, STEP: str(step.number), VERSION: step.label, ATTEMPT: str(attempt),
                VERDICT: step.verdict, MINUTES: f"{step.minutes:.2f}", PINS: pins,
                GOOD_TAG: self.ends[0], BAD_TAG: self.ends[1]}  # fmt: skip
        if candidate.commit:
            tags |= {REPO_TAG: self.repo, COMMIT: candidate.commit, SUBJECT: candidate.subject}
        for run in self.store.runs():
            if run.tags.get(AB_GROUP) == group:
                self.store.tag_run(run.run_id, tags)


# -- words ------------------------------------------------------------------------------------


def step_line(step: Step, *, stored: bool = False) -> str:
    """``step 2  standin 1.5  regressed  1.29x (1.20-1.38)  3 rounds  0.6 min  [sleepy]``; the cases on a
    line of their own when one line would be wider than `WIDTH`."""
    effect = f"{step.ratio:.2f}x" if step.ratio is not None else "-"
    interval = f" ({step.low:.2f}-{step.high:.2f})" if step.low is not None and step.high is not None else ""
    cases = f"  [{first_few(list(step.cases), 3)}]" if step.cases else ""
    kept = "  (stored)" if stored else ""
    line = (f"step {step.number}  {step.described}  {step.verdict}  {effect}{interval}  "
            f"{plural(step.rounds, 'round')}  {step.minutes:.1f} min")  # fmt: skip
    if len(line + cases + kept) <= WIDTH:
        return line + cases + kept
    return f"{line}{kept}\n{cases}"


def _range(plan: BisectPlan, low: int, high: int) -> str:
    """Where the first bad candidate can still be: ``1.4 .. 1.5`` or just ``1.5``."""
    first, last = plan.candidates[low + 1], plan.candidates[high]
    if first == last:
        return f"{last.label()} (found)"
    return f"one of {first.label()} .. {last.label()} ({plural(high - low, 'candidate')})"


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
        return [f"step {step.number} ({step.described}) is not decided after {plural(step.rounds, 'round')} "
                f"(--rounds-cap {rounds_cap}); no culprit named. Continue with more rounds: daskbench bisect "
                f"--resume {name} --rounds-cap {2 * rounds_cap} ..."]  # fmt: skip
    assert outcome.candidate is not None
    effect = f"{step.ratio:.2f}x" if step.ratio is not None else "-"
    interval = f", 95% interval {step.low:.2f}-{step.high:.2f}" if step.low and step.high else ""
    evidence = (f"  evidence: step {step.number}, {first_few(list(step.cases), 3)} regressed {effect}{interval}, "
                f"{plural(step.rounds, 'round')}")  # fmt: skip
    command = f"(daskbench compare --group {step.group})"
    if len(evidence) + 1 + len(command) > WIDTH:  # the command whole on a line of its own, to copy
        return [_culprit_line(outcome.candidate), evidence, f"    {command}"]
    return [_culprit_line(outcome.candidate), f"{evidence} {command}"]


def _culprit_line(candidate: Candidate) -> str:
    """``first bad release: standin 1.5`` or ``first bad commit: <full id> <subject>`` (in 120 columns)."""
    if candidate.commit:
        return f"first bad commit: {candidate.commit} {shortened(candidate.subject, 120 - 59)}"
    return f"first bad release: {candidate.describe()}"
