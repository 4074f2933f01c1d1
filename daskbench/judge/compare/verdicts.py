"""The verdict rows of one case, shared by the three modes: how they are decided (`Rules`), the pairing loop
of the two A/B modes (`paired_verdicts`), outcome rows and one row per metric.

Cases are matched by fingerprint. Per case, outcomes come first: a case with a repeat
that did not pass (any outcome but ``passed``) in the candidate but none in the baseline (history: the
latest earlier run) is ``newly-failing``; the reverse is ``fixed``; failures on both sides
are ``inconclusive``; these get one row (metric ``runtime_s``) for the whole case, as do
``new`` (only in the candidate) and ``missing`` (only in the baseline; history: in the
latest earlier run). Otherwise there is one row per metric with values on either side.
Measurements that are no result of the workload are left out of all that (`_results`):
``interrupted`` and ``cluster-lost`` always, ``worker-lost`` unless ``include_worker_loss``
(then it is the workload's failure); a side left with none is one ``inconclusive`` row, and
the comparison's notes count what was set aside.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import explain, matching, stats
from daskbench.judge.selection import Selection
from daskbench.model import NOT_RESULTS, WORKER_LOST, Case, Measurement
from daskbench.text import plural
from daskbench.verdicts import Verdict, VerdictKind

#: (baseline values, candidate values) of one metric of one case.
BothSides = tuple[list[float], list[float]]
#: Per metric: both sides' values.
SideValues = Callable[[str], BothSides]
#: Per metric and both sides' values: the statistical decision.
Decide = Callable[[str, list[float], list[float]], stats.Decision]
#: How one pair of sides is judged: where its values come from and how they are decided.
Judge = tuple[SideValues, Decide]

#: Outcome rows (new, missing, newly-failing, fixed) are about the whole case; they carry this metric.
CASE_METRIC = "runtime_s"
#: The ``method`` of those case-level rows, so readers (the report) can tell them apart.
OUTCOME_METHOD = "outcome"


@dataclass(frozen=True)
class StoredCase:
    """A case as the store holds it: its record and the fingerprint its measurements carry."""

    case: Case
    fingerprint: str


@dataclass(frozen=True)
class Rules:
    """How verdicts are decided. ``floors`` holds every metric's floor and, keyed
    ``workload:metric``, the floors of one workload; `of` gives a case its own."""

    floors: Mapping[str, float]
    z_threshold: float
    min_history: int
    include_worker_loss: bool = False  # judge worker-lost measurements as the workload's failures
    also: tuple[str, ...] = ()  # metrics judged besides the compared ones (an A/B group's --metric)

    @classmethod
    def of_selection(cls, selection: Selection) -> Rules:
        """The rules a `Selection` asks for, every metric's declared floor overridden by its floors."""
        floors = merge_floors(selection.floors)
        return cls(floors, selection.z_threshold, selection.min_history, selection.include_worker_loss)

    def of(self, workload: str) -> Rules:
        """These rules with ``workload``'s own floors in place of the general ones."""
        own = {key.split(":", 1)[1]: value for key, value in self.floors.items() if key.startswith(f"{workload}:")}
        return replace(self, floors={**self.floors, **own}) if own else self


def merge_floors(floors: Mapping[str, float] | None) -> dict[str, float]:
    """The declared floor of every metric, overridden by ``floors``."""
    merged = {metric: stats.default_floor(metric) for metric in catalog.names()}
    for key, value in (floors or {}).items():
        metric = key.rpartition(":")[2]
        if not catalog.is_declared(metric) or not value >= 1.0:
            raise DaskbenchError(
                f"floor {key}={value!r}: metrics are {', '.join(catalog.names())} (optionally after "
                "a workload, wordcount:runtime_s) and floors are >= 1"
            )
        merged[key] = float(value)
    return merged


def paired_verdicts(
    base: Mapping[str, list[Measurement]],
    cand: Mapping[str, list[Measurement]],
    cases: Mapping[str, Case],
    allow_mixed: bool,
    rules: Rules,
    rule: Callable[[str, list[Measurement], list[Measurement], Rules], Judge],
) -> list[Verdict]:
    """The one pairing loop of both A/B modes: pair the cases, then per pair a presence or
    outcome change, else one verdict per metric by ``rule`` (with the case's own floors),
    runtime changes explained."""
    verdicts: list[Verdict] = []
    for base_fp, cand_fp, note in matching.pair_cases(set(base), set(cand), cases, allow_mixed):
        fp = cand_fp or base_fp or ""
        of = StoredCase(cases[fp], fp)
        base_side, cand_side = base.get(base_fp or "", []), cand.get(cand_fp or "", [])
        status = _presence(of, base_side, cand_side) or outcome_change(of, base_side, cand_side, rules)
        if status is not None:
            verdicts.append(status)
            continue
        own = rules.of(of.case.workload)
        values, decide = rule(base_fp or "", base_side, cand_side, own)
        found = metric_verdicts(of, values, decide, own, note)
        verdicts += explain.explain_verdicts(found, base_side, cand_side)
    return verdicts


# -- one case ---------------------------------------------------------------------------


def _presence(of: StoredCase, base: list[Measurement], cand: list[Measurement]) -> Verdict | None:
    if not base:
        return outcome_verdict(of, "new", [], cand, "not in the baseline")
    if not cand:
        return outcome_verdict(of, "missing", base, [], "not in the candidate")
    return None


def outcome_change(of: StoredCase, base: list[Measurement], cand: list[Measurement], rules: Rules) -> Verdict | None:
    """newly-failing / fixed / failing on both sides, of the measurements that are results (`_results`);
    a side with none is one ``inconclusive`` row saying why."""
    unmeasured = _unmeasured(of, base, cand, rules)
    if unmeasured is not None:
        return unmeasured
    base, cand = _results(base, rules), _results(cand, rules)
    base_failed, cand_failed = [m for m in base if not m.ok], [m for m in cand if not m.ok]
    if cand_failed and not base_failed:
        return outcome_verdict(of, "newly-failing", base, cand, _failure(cand_failed, len(cand)))
    if base_failed and not cand_failed:
        return outcome_verdict(of, "fixed", base, cand, f"passes; was {_failure(base_failed, len(base))}")
    if base_failed and cand_failed:
        note = f"fails on both sides: was {_failure(base_failed, len(base))}; now {_failure(cand_failed, len(cand))}"
        return outcome_verdict(of, "inconclusive", base, cand, note)
    return None


def _results(ms: Sequence[Measurement], rules: Rules) -> list[Measurement]:
    """The measurements that are results of the workload: never one cut short (``interrupted``) or
    lost with its cluster (``cluster-lost``); one that lost a worker only when asked (``include_worker_loss``)."""
    return [m for m in ms if m.outcome not in NOT_RESULTS and (rules.include_worker_loss or m.outcome != WORKER_LOST)]


def _unmeasured(of: StoredCase, base: list[Measurement], cand: list[Measurement], rules: Rules) -> Verdict | None:
    """One ``inconclusive`` row for a case a side measured but got no result of (cluster lost, worker
    lost, interrupted), instead of a row per metric without values; None when both sides have results."""
    for side, ms in (("candidate", cand), ("baseline", base)):
        if ms and not _results(ms, rules):
            note = f"no result of the workload in the {side}: {_failure(ms, len(ms))}; not judged"
            return outcome_verdict(of, "inconclusive", base, cand, note + _include_hint(ms, rules))
    return None


def _include_hint(ms: Sequence[Measurement], rules: Rules) -> str:
    """How to have worker-lost measurements judged, when some were set aside."""
    lost = not rules.include_worker_loss and any(m.outcome == WORKER_LOST for m in ms)
    return " (--include-worker-loss judges a lost worker as the workload's failure)" if lost else ""


def set_aside_note(cand: Sequence[Measurement], rules: Rules) -> list[str]:
    """The comparison's note counting the candidate's measurements left out of every verdict, by outcome."""
    aside = [m for m in cand if not _results([m], rules)]
    if not aside:
        return []
    counts = ", ".join(f"{outcome} x{n}" for outcome, n in sorted(Counter(m.outcome for m in aside).items()))
    return [
        f"not judged: {plural(len(aside), 'candidate measurement')} ({counts}): no result of the workload"
        + _include_hint(aside, rules)
    ]


def _failure(failed: list[Measurement], total: int) -> str:
    counts = ", ".join(
        f"{outcome}" + (f" x{n}" if n > 1 else "") for outcome, n in Counter(m.outcome for m in failed).items()
    )
    message = next((m.message.splitlines()[0] for m in failed if m.message.strip()), "")
    return f"{counts} in {len(failed)} of {total} repeats" + (f" ({message[:160]})" if message else "")


def metric_verdicts(of: StoredCase, values: SideValues, decide: Decide, rules: Rules, note: str) -> list[Verdict]:
    """One verdict per compared metric (and each of ``rules.also``) that has values on either side."""
    verdicts = []
    compared = catalog.compared()
    for metric in [*compared, *(name for name in rules.also if name not in compared)]:
        base, cand, judged = _values_or_fallback(metric, values)
        if not base and not cand:
            continue
        if base and cand:
            decision = _judged_on(judged, stats.within_min_change(decide(judged, base, cand), base, cand, judged))
        else:
            side = "baseline" if not base else "candidate"
            decision = stats.Decision("inconclusive", note=f"no {metric} values in the {side}")
        verdicts.append(_verdict(of, metric, (base, cand), rules.floors[metric], decision, note))
    return verdicts


def _values_or_fallback(metric: str, values: SideValues) -> tuple[list[float], list[float], str]:
    """The metric's values, or its fallback's when a side lacks it and both sides have those
    (memory above idle against a run recorded before it was): (baseline, candidate, judged)."""
    base, cand = values(metric)
    fallback = catalog.get(metric).fallback
    if (base and cand) or fallback is None:
        return base, cand, metric
    old_base, old_cand = values(fallback)
    return (old_base, old_cand, fallback) if old_base and old_cand else (base, cand, metric)


def _judged_on(judged: str, decision: stats.Decision) -> stats.Decision:
    """A decision made on a fallback metric says so in its note."""
    if catalog.get(judged).compared:
        return decision
    said = f"judged on {judged}: a side was recorded before its compared metric existed"
    return replace(decision, note=f"{decision.note}; {said}" if decision.note else said)


def _verdict(
    of: StoredCase, metric: str, values: BothSides, floor: float | None, d: stats.Decision, note: str
) -> Verdict:
    d, (base, cand), case = _oriented(metric, d), values, of.case
    return Verdict(
        fingerprint=of.fingerprint,
        workload=case.workload,
        params=dict(case.params),
        metric=metric,
        verdict=d.verdict,
        ratio=d.ratio,
        ci_low=d.ci_low,
        ci_high=d.ci_high,
        floor=floor,
        baseline_values=tuple(base),
        candidate_values=tuple(cand),
        cluster=case.cluster.identity(),
        method=d.method,
        note="; ".join(part for part in (note, d.note, _floor_advice(case, metric, d)) if part),
        score=d.score,
    )


def _floor_advice(case: Case, metric: str, d: stats.Decision) -> str:
    """The floor this case's noise needs, as the ``--floor`` of its workload and metric; or that none would help."""
    return stats.floor_advice(d.floor_need, f"{case.workload}:{metric}") if d.floor_need else ""


def _oriented(metric: str, d: stats.Decision) -> stats.Decision:
    """Statistics judge "higher is worse"; for a metric where higher is better, swap the direction."""
    if catalog.get(metric).higher_is_worse or d.verdict not in ("regressed", "improved"):
        return d
    return replace(d, verdict="improved" if d.verdict == "regressed" else "regressed")


def outcome_verdict(
    of: StoredCase, kind: VerdictKind, base: Sequence[Measurement], cand: Sequence[Measurement], note: str
) -> Verdict:
    """A row about the whole case (new, missing, an outcome change), carrying `CASE_METRIC`."""
    decision = stats.Decision(kind, method=OUTCOME_METHOD, note=note)
    values = (passed_values(base, CASE_METRIC), passed_values(cand, CASE_METRIC))
    return _verdict(of, CASE_METRIC, values, None, decision, "")


def passed_values(ms: Iterable[Measurement], metric: str) -> list[float]:
    """A metric's values over the passed repeats, in repeat order (pairs line up by repeat)."""
    ordered = sorted(ms, key=lambda m: (m.repeat, m.run_id))
    return [float(getattr(m, metric)) for m in ordered if m.ok and getattr(m, metric) is not None]
