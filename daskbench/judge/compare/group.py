"""A/B-group mode: an interleaved group from ``daskbench ab`` (lockstep or sessions), by its rounds, and
the run tags that mark its runs."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import repeat, sequential, stats, suite
from daskbench.judge.compare.comparison import Against, finish
from daskbench.judge.compare.verdicts import (
    Decide,
    Judge,
    Rules,
    SideValues,
    merge_floors,
    paired_verdicts,
    passed_values,
)
from daskbench.model import SET_ASIDE_TAG, Measurement, Run, calibration_set_aside, group_measurements
from daskbench.store import Store
from daskbench.verdicts import Comparison

#: Run tags `daskbench ab` sets on each session it runs.
AB_GROUP, AB_SIDE, AB_ROUND = "ab_group", "ab_side", "ab_round"


def group_rounds(store: Store, group: str) -> dict[int, dict[str, Run]]:
    """The runs of A/B group ``group`` by round and side (the newest ended run of each); rounds
    missing a side are left out."""
    rounds: dict[int, dict[str, Run]] = {}
    for run in store.runs():  # newest first
        if run.tags.get(AB_GROUP) == group and run.tags.get(AB_SIDE) in ("A", "B") and run.ended_at:
            rounds.setdefault(int(run.tags.get(AB_ROUND, "0")), {}).setdefault(run.tags[AB_SIDE], run)
    return {number: sides for number, sides in sorted(rounds.items()) if len(sides) == 2}


def group_parts(store: Store, group: str) -> list[dict[str, tuple[list[Measurement], list[Measurement]]]]:
    """Each part of a group (`group_rounds`), in order: per case (fingerprint, sorted) its measurements on side A
    and on side B (to pair with `lockstep_rounds`)."""
    found = []
    for sides in group_rounds(store, group).values():
        a_by, b_by = (group_measurements(store.measurements([sides[side].run_id]), "fingerprint") for side in "AB")
        found.append({fp: (a_by[fp], b_by[fp]) for fp in sorted(a_by.keys() & b_by.keys())})
    return found


def compare_group(
    store: Store,
    group: str,
    *,
    floors: Mapping[str, float] | None = None,
    include_worker_loss: bool = False,
    family: int = 1,
) -> Comparison:
    """Verdicts of an interleaved A/B group: each case's per-round B/A ratios, judged by the
    sequential rule (`sequential.rounds_decision`) over the rounds the group allowed.

    A round is one A and one B measurement taken side by side: in a lockstep group (``ab_mode``
    ``lockstep``: one session per side, measuring in turn) the same repeat of a case on both
    sides; in a group of sessions, one session per side and the median of its repeats. The
    pairs carry the drift between rounds themselves, so no run-to-run noise is assumed. A
    B-side failure where A passed is ``newly-failing``.

    A group measured with false alarms counted per suite (tag ``ab_suite_alpha``, `daskbench.judge.suite`)
    spends that error over its cases times the metrics judged, or over at least its tag ``ab_family`` or
    ``family`` verdicts (a shard judged as part of its whole suite), and says so in its notes.
    """
    rounds = group_rounds(store, group)
    if not rounds:
        raise DaskbenchError(
            f"no complete round of A/B group {group!r} in {store.display_url}; list groups with: daskbench runs "
            "(column tags), or run one with: daskbench ab"
        )
    by_side = {side: [sides[side] for sides in rounds.values()] for side in ("A", "B")}
    asked = by_side["A"][-1].tags.get("ab_metric", "")  # --metric: judged even when not compared by default
    also = (asked,) if catalog.is_declared(asked) else ()
    rules = Rules(merge_floors(floors), stats.Z_THRESHOLD, stats.MIN_HISTORY, include_worker_loss, also)
    ms = {run.run_id: store.measurements([run.run_id]) for runs in by_side.values() for run in runs}
    side_ms = {side: [m for run in runs for m in ms[run.run_id]] for side, runs in by_side.items()}
    a_by, b_by = (group_measurements(side_ms[side], "fingerprint") for side in ("A", "B"))
    cases = store.cases({*a_by, *b_by})
    shape = _GroupShape.of(by_side).counted(len(cases), family)
    notes = [shape.family.text(len(cases))] if shape.family.alpha is not None else []

    def rule(_a_fp: str, a_side: list[Measurement], b_side: list[Measurement], own: Rules) -> Judge:
        return _rounds_rule(a_side, b_side, shape, own)

    verdicts = paired_verdicts(a_by, b_by, cases, True, rules, rule)
    base_runs, cand_runs = tuple(by_side["A"]), by_side["B"]
    against = Against(base_runs, shape.label(group), base_runs[-1:])
    return finish("ab", against, cand_runs[-1], verdicts, notes, cand_runs)


@dataclass(frozen=True)
class _GroupShape:
    """How a group's rounds are laid out: lockstep (a round is a repeat) or sessions (a round is a
    run pair), the run pairs, and the most rounds the group allowed (None: as many as it has)."""

    lockstep: bool
    pairs: tuple[tuple[str, str], ...]  # (A run id, B run id) per session round or lockstep part
    max_rounds: int | None
    boundary: tuple[str, float] | None = None  # a bisection step's question: (metric, boundary)
    repeat_within: float | None = None  # change verdicts repeated in fresh sessions (`daskbench.judge.repeat`)
    family: suite.Family = suite.PER_CASE  # the verdicts whose false alarms are counted together
    asked: str = ""  # the metric the group was asked to judge (``--metric``; tag ``ab_metric``)
    set_aside: bool = False  # a case's loops' calibration round not judged (tag ``ab_set_aside``)

    @classmethod
    def of(cls, by_side: Mapping[str, list[Run]]) -> _GroupShape:
        newest = by_side["A"][-1].tags
        limit = newest.get("ab_max_rounds", "")
        pairs = tuple((a.run_id, b.run_id) for a, b in zip(by_side["A"], by_side["B"], strict=True))
        lockstep = newest.get("ab_mode") == "lockstep"
        within = _number(newest.get("ab_repeat_within", "")) if lockstep else None
        most = int(limit) if limit.isdigit() else None
        asked = newest.get("ab_metric", "")
        set_aside = lockstep and newest.items() >= SET_ASIDE_TAG.items()
        return cls(lockstep, pairs, most, _boundary(newest), within, _family(newest), asked, set_aside)

    def counted(self, cases: int, family: int = 1) -> _GroupShape:
        """Its family spent over ``cases`` cases times the metrics judged, or over at least ``family`` verdicts."""
        at_least = max(family, suite.family_size(cases, suite.metrics_judged(self.asked)))
        return replace(self, family=self.family.at_least(at_least))

    def question(self, metric: str, floor: float, rounds: int) -> sequential.Question:
        """What a case's ``rounds`` rounds of ``metric`` are asked (its change verdicts repeated as the group was)."""
        boundary = self.boundary[1] if self.boundary is not None and self.boundary[0] == metric else None
        most = max(self.max_rounds or rounds, 1)
        return sequential.Question(floor, most, boundary, metric, self.repeat_within, self.family)

    def label(self, group: str) -> str:
        if self.lockstep:
            return f"A/B group {group}: lockstep, each case measured in turn until decided, side A"
        return f"A/B group {group}: {len(self.pairs)} interleaved rounds, side A"


def _rounds_rule(
    a_side: list[Measurement], b_side: list[Measurement], shape: _GroupShape, rules: Rules
) -> tuple[SideValues, Decide]:
    """The value pairs of each round: per lockstep repeat both sides measured, or per session
    round the median of each side's passing repeats."""
    a_runs, b_runs = (group_measurements(ms, "run_id") for ms in (a_side, b_side))
    sizes: dict[str, list[int]] = {}  # per metric: the rounds of each part (each a pair of sessions)
    busy: dict[str, list[bool]] = {}  # per metric: whether each part was measured on a busy machine

    def per_round(metric: str) -> tuple[list[float], list[float]]:
        a_vals, b_vals = [], []
        sizes[metric], busy[metric] = [], []
        sides = [(a_runs.get(a_run, []), b_runs.get(b_run, [])) for a_run, b_run in shape.pairs]
        parts = [(ms, _part_rounds(ms, shape.lockstep, metric)) for ms in sides]
        aside = shape.set_aside and calibration_set_aside([calls for _, found in parts for *_, calls in found])
        for (a_ms, b_ms), found in parts:
            if aside and found:
                found, aside = found[1:], False  # its loops' calibration round: set aside, as the controller did
            sizes[metric].append(len(found))
            if found:
                busy[metric].append(repeat.busy(_others(a_ms + b_ms)))
            a_vals += [a for a, _, _ in found]
            b_vals += [b for _, b, _ in found]
        return a_vals, b_vals

    def decide(metric: str, a: list[float], b: list[float]) -> stats.Decision:
        question = shape.question(metric, rules.floors[metric], len(a))
        if shape.repeat_within is None or metric not in sizes or sum(sizes[metric]) != len(a) or not a:
            alpha = shape.family.pooled_alpha(sequential.ALPHA)
            return sequential.rounds_decision(a, b, question.floor, shape.max_rounds, question.boundary, alpha)
        edges = list(itertools.accumulate(sizes[metric], initial=0))
        parts = [(a[i:j], b[i:j]) for i, j in itertools.pairwise(edges) if j > i]
        return repeat.with_rounds(repeat.judge(question, parts, busy[metric]), a, b)

    return per_round, decide


def group_questions(
    store: Store, group: str, cases: int, *, family: int = 1, floors: Mapping[str, float] | None = None
) -> dict[str, sequential.Question]:
    """What `compare_group` asks of each compared metric of a lockstep group of ``cases`` cases whose change
    verdicts are repeated (its floors, most rounds, repeat and family, as its tags say): to replay its rounds
    through the same rule; empty for any other group."""
    rounds = group_rounds(store, group)
    if not rounds:
        return {}
    shape = _GroupShape.of({side: [sides[side] for sides in rounds.values()] for side in ("A", "B")})
    if not shape.lockstep or shape.repeat_within is None:
        return {}
    shape, merged = shape.counted(cases, family), merge_floors(floors)
    return {metric: shape.question(metric, merged[metric], sequential.MAX_ROUNDS) for metric in catalog.compared()}


def _number(text: str, below: float | None = None) -> float | None:
    """A tag's number above 1 (a repeat's factor), or with ``below`` between 0 and it (an error), else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    if below is not None:
        return value if 0.0 < value < below else None
    return value if value > 1.0 else None


def _family(tags: Mapping[str, str]) -> suite.Family:
    """The suite-level error a group was measured with (tags ``ab_suite_alpha``, ``ab_family``); none: per case."""
    alpha = _number(tags.get("ab_suite_alpha", ""), below=1.0)
    counted = tags.get("ab_family", "")
    return suite.Family(int(counted) if counted.isdigit() and int(counted) > 0 else 1, alpha)


def _boundary(tags: Mapping[str, str]) -> tuple[str, float] | None:
    """The boundary a group's metric was judged against (tags ``ab_boundary``, ``ab_metric``), if any."""
    try:
        boundary = float(tags["ab_boundary"])
    except (KeyError, ValueError):
        return None
    return (tags.get("ab_metric", "runtime_s"), boundary) if boundary > 1.0 else None


def _session_pair(a_ms: list[Measurement], b_ms: list[Measurement], metric: str) -> list[tuple[float, float]]:
    a, b = passed_values(a_ms, metric), passed_values(b_ms, metric)
    return [(stats.median(a), stats.median(b))] if a and b else []


def _others(ms: list[Measurement]) -> list[float]:
    """The cores other work used during the passing measurements (``extra["others_cores"]``; older rows: none)."""
    found = (m.extra.get("others_cores") for m in ms if m.outcome == "passed")
    return [float(cores) for cores in found if isinstance(cores, int | float)]


def _part_rounds(
    sides: tuple[list[Measurement], list[Measurement]], lockstep: bool, metric: str
) -> list[tuple[float, float, int]]:
    """A part's rounds: its lockstep rounds, or one round of each side's median (one call)."""
    if lockstep:
        return lockstep_rounds(*sides, metric)
    return [(a, b, 1) for a, b in _session_pair(*sides, metric)]


def lockstep_rounds(a_ms: list[Measurement], b_ms: list[Measurement], metric: str) -> list[tuple[float, float, int]]:
    """Repeat r of A with repeat r of B, for the repeats both measured (passed), in order, each with the calls a
    measurement made in it (the fewer of the two sides')."""
    a_by = {m.repeat: (passed_values([m], metric), m.loops) for m in a_ms}
    b_by = {m.repeat: (passed_values([m], metric), m.loops) for m in b_ms}
    rounds = ((a_by[r], b_by[r]) for r in sorted(a_by.keys() & b_by.keys()))
    return [(a[0], b[0], min(a_calls, b_calls)) for (a, a_calls), (b, b_calls) in rounds if a and b]
