"""Confirm a suspect side by side: tonight's environment against the last good run's, in lockstep.

A regression found against history (or a baseline) may be the code or may be the night: a busy
machine, a slow disk. ``daskbench confirm`` (`daskbench.cli.confirm`) answers which, for the suspect
cases only: it picks the **last good run** (`good_run`: the newest run the comparison judged against
that measured every suspect case and was not itself slow in them), rebuilds that run's environment as
an overlay over this interpreter holding the good run's versions of the packages that differ
(`make_plan`, `daskbench.envs`), and runs a lockstep A/B (`daskbench.lockstep.engine`) of it (side A)
against this interpreter (side B, tonight's), each case measured in turn until the sequential rule
decides it. The group's runs carry the tags of `daskbench.judge.confirmed` (the candidate run, the good
run and the two version sets), so ``daskbench alert --group GROUP`` and the report find the evidence.

When no environment can be rebuilt (the good run recorded the same versions as tonight's, or the
build fails) this says so in one line, and the nightly falls back to a re-run of the same environment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from daskbench import envs
from daskbench.bisect import plan as bisect_plan
from daskbench.errors import DaskbenchError
from daskbench.judge import confirmed, sequential, stats, suite
from daskbench.judge.compare import AB_GROUP
from daskbench.judge.confirmed import Pins, describe_pins
from daskbench.lockstep.parts import GroupPlan, Spent, run_group
from daskbench.lockstep.sessions import Side
from daskbench.model import Run, group_measurements, recorded_commits
from daskbench.store import Store, runstatus
from daskbench.text import first_few, plural, say
from daskbench.verdicts import Comparison, Verdict

Say = Callable[[str], None]


@dataclass(frozen=True)
class ConfirmPlan:
    """What a confirmation compares: the candidate's suspect verdicts, the good run, and the versions
    of the packages that differ (the good run's, side A; the candidate's, side B)."""

    candidate: Run
    good: Run
    suspects: tuple[Verdict, ...]
    pins: Pins
    tonight: Pins

    def workloads(self) -> list[str]:
        return sorted({verdict.workload for verdict in self.suspects})

    def selection(self) -> str:
        """The pytest ``-k`` expression of the suspect workloads."""
        return " or ".join(self.workloads())

    def describe(self) -> str:
        """``standin 1.0 (run 1a2b3c4d) against standin 1.1 (run 5e6f7a8b)``."""
        return (
            f"{describe_pins(self.pins)} (run {self.good.run_id[:8]}) against {describe_pins(self.tonight)} "
            f"(run {self.candidate.run_id[:8]})"
        )


# -- what is confirmed ------------------------------------------------------------------------


def make_plan(store: Store, night: Comparison) -> ConfirmPlan:
    """The suspects of ``night``, its last good run and the versions that differ; one line when nothing
    is suspect, no run can stand for good, or no package version differs (nothing to rebuild)."""
    suspects = tuple(night.regressions)
    if not suspects:
        raise DaskbenchError(f"nothing regressed in run {night.candidate_run.run_id[:8]}: nothing to confirm")
    good = good_run(store, night, suspects)
    pins, tonight = differing(good, night.candidate_run)
    return ConfirmPlan(night.candidate_run, good, suspects, pins, tonight)


def good_run(store: Store, night: Comparison, suspects: Sequence[Verdict]) -> Run:
    """The newest run ``night`` judged against that measured every suspect case, passed, and was not
    itself slow in them (a run-median below the suspect's floor times the median over those runs);
    else the newest that measured them. One line when none did."""
    fingerprints = {verdict.fingerprint for verdict in suspects}
    runs = [run for run in night.baseline_runs if not runstatus.made_side_by_side(run)]  # a night's, not an A/B's
    measured = group_measurements(store.measurements([run.run_id for run in runs]) if runs else [], "run_id")
    per_run = {run.run_id: group_measurements(measured.get(run.run_id, []), "fingerprint") for run in runs}
    usable = [
        run
        for run in runs
        if fingerprints <= {fp for fp, ms in per_run[run.run_id].items() if ms and all(m.ok for m in ms)}
    ]
    if not usable:
        cases = first_few(sorted({verdict.workload for verdict in suspects}), 3)
        raise DaskbenchError(f"no run judged against measured every suspect case ({cases}): no good run to rebuild")
    levels = {(verdict.fingerprint, verdict.metric): _levels(per_run, usable, verdict) for verdict in suspects}
    for run in sorted(usable, key=lambda r: r.started_at, reverse=True):
        if all(_not_slow(levels[(v.fingerprint, v.metric)], run.run_id, v.floor) for v in suspects):
            return run
    return max(usable, key=lambda r: r.started_at)


def _levels(per_run: Mapping[str, Mapping[str, list]], runs: Sequence[Run], verdict: Verdict) -> dict[str, float]:
    """Each run's median of the suspect's metric in its case."""
    found = {}
    for run in runs:
        values = [
            value
            for m in per_run[run.run_id].get(verdict.fingerprint, [])
            if (value := m.metrics.get(verdict.metric)) is not None
        ]
        if values:
            found[run.run_id] = stats.median(values)
    return found


def _not_slow(levels: Mapping[str, float], run_id: str, floor: float | None) -> bool:
    if run_id not in levels:
        return False
    typical = stats.median(list(levels.values()))
    return not typical > 0 or levels[run_id] / typical < (floor or math.inf)


def differing(good: Run, candidate: Run) -> tuple[Pins, Pins]:
    """The packages whose recorded versions (or commits, from git) differ, at the good run's and at the
    candidate's versions; one line when none differ (then no other environment can be built) or the good run lacks one."""
    ours, theirs = bisect_plan.recorded_pins(good), bisect_plan.recorded_pins(candidate)
    names = bisect_plan.differing_names(bisect_plan.recorded_refs(good), bisect_plan.recorded_refs(candidate))
    if not names:
        raise DaskbenchError(
            f"run {good.run_id[:8]} (the last good run) recorded the same package versions as run "
            f"{candidate.run_id[:8]}: no other environment to rebuild"
        )
    missing = [name for name in names if name not in ours]
    if missing:
        raise DaskbenchError(
            f"run {good.run_id[:8]} (the last good run) recorded no version of "
            f"{first_few(missing, 3)}: its environment cannot be rebuilt"
        )
    return _described(good, ours, names), _described(candidate, theirs, names)


def _described(run: Run, pins: Mapping[str, str], names: Sequence[str]) -> Pins:
    """Each name's version in ``run`` (``none``: not installed), ``1.0 (git 1a2b3c4d5e6f)`` when from git."""
    commits = recorded_commits(run.tags)
    return tuple(
        (name, pins.get(name, "none") + (f" (git {commits[name].short()})" if name in commits else ""))
        for name in names
    )


def build_good(plan: ConfirmPlan, options: envs.BuildOptions, say: Say = say) -> str:
    """The interpreter of the good run's environment, built as ``options`` say: an overlay over this interpreter
    holding the good run's versions of the packages that differ (built once, cached)."""
    spec = envs.spec_from_run(plan.good, only=[name for name, _ in plan.pins], with_daskbench=False)
    return str(envs.build(spec, options, say=say, inherit=True))


# -- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Runner:
    """Runs one confirmation's lockstep A/B and tags its runs."""

    store: Store
    db: str
    pytest_args: Sequence[str]
    floors: Mapping[str, float]
    max_rounds: int = sequential.MAX_ROUNDS
    max_seconds: float = 600.0
    say: Say = say
    metric: str = "runtime_s"

    def question(self, plan: ConfirmPlan) -> sequential.Question:
        """The question each suspect case is asked: like its suspect verdict or like the good run. With every
        suspect of the metric a large change, against the boundary between 1 and the smallest of their lower
        bounds (`sequential.boundary_between`); else whether it changed beyond the floor."""
        floor = self.floors.get(self.metric, stats.default_floor(self.metric))
        lows = [v.ci_low for v in plan.suspects if v.metric == self.metric and v.ci_low is not None]
        boundary = sequential.boundary_between(min(lows), floor) if lows else None
        family = suite.Family(alpha=suite.SUITE_ALPHA)  # the suspects' false alarms counted together
        return sequential.Question(floor, self.max_rounds, boundary, self.metric, family=family)

    def run(self, plan: ConfirmPlan, group: str, good_python: str, tonight_python: str) -> Spent:
        """Side A the good environment, side B tonight's, the suspect workloads only (``-k``)."""
        if any(run.tags.get(AB_GROUP) == group for run in self.store.runs()):
            raise DaskbenchError(
                f"A/B group {group!r} exists already in {self.store.display_url}; pick another --group"
            )
        args = [*self.pytest_args, "-k", plan.selection()]
        sides = {"A": Side("A", good_python), "B": Side("B", tonight_python)}
        self.say(
            f"confirm: {plural(len(plan.workloads()), 'suspect workload')} ({first_few(plan.workloads(), 3)}) "
            f"side by side: {plan.describe()}; group {group}"
        )
        question = self.question(plan)
        if question.boundary is not None:
            self.say(
                f"confirm: the suspects are large changes: each case is judged like them (above "
                f"{question.boundary:.2f}x) or like the good run (below)"
            )
        spent = run_group(GroupPlan(group, sides, self.db, args, question, self.max_seconds), self.say)
        self.tag(plan, group)
        return spent

    def tag(self, plan: ConfirmPlan, group: str) -> None:
        tags = confirmed.tags(plan.candidate.run_id, plan.good.run_id, plan.pins, plan.tonight, self.floors)
        for run in self.store.runs():
            if run.tags.get(AB_GROUP) == group:
                self.store.tag_run(run.run_id, tags)
