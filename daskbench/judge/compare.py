"""Compare a candidate run with a baseline: verdicts from the store, and what differs beside them.

Two modes (the statistics and their defaults live in `daskbench.judge.stats`):

- **A/B**: ``baseline`` is a baseline name (``daskbench baseline set``) or a run id/prefix;
  the repeats of each case in the baseline run(s) against those in the candidate run.
- **history**: each case of the candidate against its own last N good runs (runs started
  before the candidate, on the same kind of host unless ``allow_mixed``).

With neither ``baseline`` nor ``history``, the baseline named ``main`` is used if it
exists; otherwise compare falls back to history mode (``DEFAULT_HISTORY`` runs) and says
so in ``Comparison.notes``, because a first nightly set-up has history before anyone has
named a baseline.

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

A/B refuses (`DaskbenchError`) runs from hosts whose cpu model, cores or memory differ,
and runs with no case in common that share workloads whose cluster specs differ. With
``allow_mixed`` such cases are instead paired by workload and parameters (each baseline
case with the candidate case whose cluster spec differs in the fewest fields), which is
how two settings (e.g. worker-saturation 1.1 vs inf) are compared as A and B.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import explain, machine, matching, sequential, stats
from daskbench.judge.selection import Selection
from daskbench.model import (
    ACCEPTED_STEP,
    NOT_RESULTS,
    WORKER_LOST,
    Case,
    Comparison,
    Measurement,
    Run,
    Verdict,
    VerdictKind,
    group_measurements,
)
from daskbench.store import Store, runstatus
from daskbench.text import first_few, flatten, plural

#: Per metric: (baseline values, candidate values) of one case.
SideValues = Callable[[str], tuple[list[float], list[float]]]
#: Per metric and both sides' values: the statistical decision.
Decide = Callable[[str, list[float], list[float]], stats.Decision]
#: How one pair of sides is judged: where its values come from and how they are decided.
Judge = tuple[SideValues, Decide]

DEFAULT_BASELINE = "main"
#: Outcome rows (new, missing, newly-failing, fixed) are about the whole case; they carry this metric.
CASE_METRIC = "runtime_s"
#: The ``method`` of those case-level rows, so readers (the report) can tell them apart.
OUTCOME_METHOD = "outcome"
#: Tie-break of equal effects: the verdicts a maintainer must act on first.
_ORDER = {
    kind: index
    for index, kind in enumerate(
        ("newly-failing", "regressed", "fixed", "improved", "inconclusive", "unchanged", "new", "missing")
    )
}


@dataclass(frozen=True)
class _Rules:
    """How verdicts are decided. ``floors`` holds every metric's floor and, keyed
    ``workload:metric``, the floors of one workload; `of` gives a case its own."""

    floors: Mapping[str, float]
    z_threshold: float
    min_history: int
    include_worker_loss: bool = False  # judge worker-lost measurements as the workload's failures

    def of(self, workload: str) -> _Rules:
        """These rules with ``workload``'s own floors in place of the general ones."""
        own = {key.split(":", 1)[1]: value for key, value in self.floors.items() if key.startswith(f"{workload}:")}
        return replace(self, floors={**self.floors, **own}) if own else self


def compare(store: Store, selection: Selection) -> Comparison:
    """The verdicts ``selection`` asks for: the one dispatch of every command that compares."""
    if selection.ab_group is not None:
        return compare_group(store, selection.ab_group, floors=selection.floors,
                             include_worker_loss=selection.include_worker_loss)  # fmt: skip
    rules = _Rules(_merge_floors(selection.floors), selection.z_threshold, selection.min_history,
                   selection.include_worker_loss)  # fmt: skip
    cand, notes = _candidate(store, selection.candidate)
    cand_ms = store.measurements([cand.run_id])
    if not cand_ms:
        raise DaskbenchError(f"run {cand.run_id[:8]} has no measurements; nothing to compare")
    notes += _set_aside_note(cand_ms, rules)
    baseline, history = selection.baseline, selection.history
    if baseline is None and history is None:
        alone = _alone(store, cand, defaulted=not selection.candidate)
        if alone:
            return _finish("history", (), cand, [], (), "nothing yet", [*notes, *alone])
        baseline, history = _default_reference(store, notes)
    if history is not None:
        return _history_comparison(store, cand, cand_ms, history, rules, selection.allow_mixed, notes)
    label, base_runs = _resolve_baseline(store, baseline or DEFAULT_BASELINE)
    notes += runstatus.partial_notes(store, base_runs, "baseline")
    return _ab_comparison(store, cand, cand_ms, base_runs, label, rules, selection.allow_mixed, notes)


def compare_runs(store: Store, **selection: Any) -> Comparison:
    """`compare` with the `Selection` given as keywords (``candidate=``, ``baseline=``, ``history=``...)."""
    return compare(store, Selection(**selection))


def _candidate(store: Store, candidate: str | None) -> tuple[Run, list[str]]:
    """The run to judge and notes on it: a named run whatever its status (warned if it did not
    finish), by default the newest finished run."""
    if candidate:
        cand = store.run(candidate)
        return cand, runstatus.partial_notes(store, [cand], "candidate")
    return runstatus.latest_finished(store)


def _default_reference(store: Store, notes: list[str]) -> tuple[str | None, int | None]:
    """The baseline named ``main`` if there is one, else history mode (said in ``notes``)."""
    if DEFAULT_BASELINE in store.baselines():
        return DEFAULT_BASELINE, None
    notes.append(
        f"no baseline named {DEFAULT_BASELINE!r}: comparing each case with its last {stats.DEFAULT_HISTORY} good "
        f"runs (name one with: daskbench baseline set {DEFAULT_BASELINE} <run-id>)"
    )
    return None, stats.DEFAULT_HISTORY


def _alone(store: Store, cand: Run, *, defaulted: bool) -> list[str]:
    """Why a plain ``daskbench compare`` has nothing to judge yet (one run; or the newest run
    is the baseline), with how to get a second run; empty when there is something to compare."""
    others = [run for run in store.runs() if run.run_id != cand.run_id]
    if not others:
        reason = f"run {cand.run_id[:8]} is the only run in {store.display_url}"
    elif defaulted and set(store.baselines().get(DEFAULT_BASELINE, ())) == {cand.run_id}:
        reason = f"the newest run {cand.run_id[:8]} is the baseline {DEFAULT_BASELINE!r} itself"
    else:
        return []
    return [
        f"{reason}: nothing to compare yet",
        "run the benchmarks again (e.g. after a change), then daskbench compare judges the new run",
        "daskbench report shows this run alone: its saturation trade-offs, memory and cost",
    ]


def _merge_floors(floors: Mapping[str, float] | None) -> dict[str, float]:
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


def _resolve_baseline(store: Store, name: str) -> tuple[str, tuple[Run, ...]]:
    """A baseline name wins over a run id prefix of the same spelling."""
    if name in store.baselines():
        return name, tuple(store.run(run_id) for run_id in store.baseline(name))
    try:
        run = store.run(name)
    except DaskbenchError:
        raise DaskbenchError(
            f"no baseline or run named {name!r}; list them with: daskbench baseline list, daskbench runs"
        ) from None
    return run.run_id[:8], (run,)


# -- A/B --------------------------------------------------------------------------------


def _ab_comparison(
    store: Store,
    cand: Run,
    cand_ms: list[Measurement],
    base_runs: tuple[Run, ...],
    label: str,
    rules: _Rules,
    allow_mixed: bool,
    notes: list[str],
) -> Comparison:
    if cand.run_id in {run.run_id for run in base_runs}:
        raise DaskbenchError(f"run {cand.run_id[:8]} is both candidate and baseline {label!r}; pass --candidate")
    if not allow_mixed:
        matching.refuse_mixed_hosts(base_runs, cand)
    base = group_measurements(store.measurements([run.run_id for run in base_runs]), "fingerprint")
    cand_by = group_measurements(cand_ms, "fingerprint")
    cases = store.cases({*base, *cand_by})
    taught = _noise_runs(store, cand, base_runs, allow_mixed)
    noise_by = _noise_medians(store, taught, set(base))
    notes = [*notes, _noise_note(taught)]
    pooled = {metric: stats.pooled_run_noise(list(per_case.values()), stats.default_run_sd(metric))
              for metric, per_case in noise_by.items()}  # fmt: skip

    def rule(base_fp: str, base_side: list[Measurement], cand_side: list[Measurement], own: _Rules) -> Judge:
        def noise(metric: str) -> stats.RunNoise:
            default = stats.RunNoise(stats.default_run_sd(metric), 0)
            return stats.case_noise(noise_by.get(metric, {}).get(base_fp, []), pooled.get(metric, default))

        return _ab_rule(base_side, cand_side, noise, own)

    found = _paired_verdicts(base, cand_by, cases, allow_mixed, rules, rule)
    base_ms = [m for ms in base.values() for m in ms]
    verdicts, speed_notes = machine.guard(found, base_ms, cand_ms)
    return _finish("ab", base_runs, cand, verdicts, base_runs, label, [*notes, *speed_notes])


def _noise_runs(store: Store, cand: Run, base_runs: tuple[Run, ...], allow_mixed: bool) -> list[Run]:
    """The runs whose per-run medians show this host's run-to-run noise: the baseline runs when
    there are several, else the newest 20 runs on this host started before the candidate (never
    the candidate, never later runs: a verdict between two runs does not change as runs are added)."""
    if len(base_runs) > 1:
        return list(base_runs)
    earlier = [run for run in store.runs() if run.started_at < cand.started_at and not runstatus.made_side_by_side(run)
               and (allow_mixed or matching.same_host(run, cand))]  # fmt: skip
    return earlier[: stats.DEFAULT_HISTORY]  # recent noise, and a bounded read of a long history


def _noise_note(taught: list[Run]) -> str:
    """Which runs taught the run-to-run noise, for the comparison's notes."""
    ids = [run.run_id[:8] for run in taught]
    return f"run-to-run noise from {plural(len(ids), 'run')} before the candidate" + (
        f": {first_few(ids)}" if ids else ""
    )


def _noise_medians(store: Store, taught: list[Run], fingerprints: set[str]) -> dict[str, dict[str, list[float]]]:
    """Per metric and baseline case, the per-run medians of the ``taught`` runs."""
    runs = {run.run_id for run in taught}
    found: dict[str, dict[str, list[float]]] = {}
    measured = [m for m in store.measurements(sorted(runs)) if m.fingerprint in fingerprints] if runs else []
    for fingerprint, of_case in group_measurements(measured, "fingerprint").items():
        for ms in group_measurements(of_case, "run_id").values():
            for metric in catalog.names():
                values = _values(ms, metric)
                if values:
                    found.setdefault(metric, {}).setdefault(fingerprint, []).append(stats.median(values))
    return found


def _paired_verdicts(
    base: Mapping[str, list[Measurement]],
    cand: Mapping[str, list[Measurement]],
    cases: Mapping[str, Case],
    allow_mixed: bool,
    rules: _Rules,
    rule: Callable[[str, list[Measurement], list[Measurement], _Rules], Judge],
) -> list[Verdict]:
    """The one pairing loop of both A/B modes: pair the cases, then per pair a presence or
    outcome change, else one verdict per metric by ``rule`` (with the case's own floors),
    runtime changes explained."""
    verdicts: list[Verdict] = []
    for base_fp, cand_fp, note in matching.pair_cases(set(base), set(cand), cases, allow_mixed):
        fp = cand_fp or base_fp or ""
        base_side, cand_side = base.get(base_fp or "", []), cand.get(cand_fp or "", [])
        status = _presence(cases[fp], fp, base_side, cand_side) or _outcome_change(
            cases[fp], fp, base_side, cand_side, rules
        )
        if status is not None:
            verdicts.append(status)
            continue
        own = rules.of(cases[fp].workload)
        values, decide = rule(base_fp or "", base_side, cand_side, own)
        found = _metric_verdicts(cases[fp], fp, values, decide, own, note)
        verdicts += explain.explain_verdicts(found, base_side, cand_side)
    return verdicts


def _ab_rule(
    base: list[Measurement], cand: list[Measurement], noise: Callable[[str], stats.RunNoise], rules: _Rules
) -> tuple[SideValues, Decide]:
    """How two separate runs are judged (stats module docstring, "Two runs are two sessions").

    ``noise(metric)`` is the run-to-run noise of this case: pooled over the cases of the
    comparison, or its own once it has enough runs. One baseline run: the repeats of both sides,
    the interval widened by that noise. Several baseline runs: the candidate's median against each
    baseline run's median, a t prediction interval with that noise.
    """
    by_run = group_measurements(base, "run_id")

    def values(metric: str) -> tuple[list[float], list[float]]:
        return _values(base, metric), _values(cand, metric)

    def decide(metric: str, b: list[float], c: list[float]) -> stats.Decision:
        floor = rules.floors[metric]
        if len(by_run) > 1:
            medians = [stats.median(v) for v in (_values(ms, metric) for ms in by_run.values()) if v]
            return stats.prediction_decision(medians, stats.median(c), floor, noise(metric))
        paired = len(b) >= 2 and _repeat_set(base, metric) == _repeat_set(cand, metric)
        return stats.ab_decision(b, c, floor, paired=paired, noise=noise(metric))

    return values, decide


def _repeat_set(ms: list[Measurement], metric: str) -> list[int]:
    return sorted(m.repeat for m in ms if m.ok and getattr(m, metric) is not None)


# -- history ----------------------------------------------------------------------------


def _history_comparison(
    store: Store,
    cand: Run,
    cand_ms: list[Measurement],
    window: int,
    rules: _Rules,
    allow_mixed: bool,
    notes: list[str],
) -> Comparison:
    earlier = [run for run in store.runs() if run.started_at < cand.started_at and run.run_id != cand.run_id]
    sides = [run for run in earlier if runstatus.made_side_by_side(run)]
    if sides:  # other versions (bisect, confirm, pr), half a machine each, planted arms (calibrate)
        earlier = [run for run in earlier if not runstatus.made_side_by_side(run)]
        notes.append(f"history skips {plural(len(sides), 'run')} made side by side (ab, calibrate, bisect, "
                     "confirm, pr: judge those with compare --ab GROUP)")  # fmt: skip
    earlier, skipped = runstatus.finished_only(store, earlier, "history")
    notes.extend(skipped)
    usable = {run.run_id: run for run in earlier if allow_mixed or matching.same_host(run, cand)}
    if len(usable) < len(earlier):
        notes.append(
            f"history skips {len(earlier) - len(usable)} earlier runs from other hosts "
            f"({matching.HOST_CLASS} when both runs name one, else {', '.join(matching.HOST_IDENTITY)} "
            "differ); --allow-mixed includes them, DASKBENCH_HOST_CLASS names hosts that count as one"
        )
    cand_by = group_measurements(cand_ms, "fingerprint")
    cases = store.cases(cand_by)
    verdicts: list[Verdict] = []
    used: dict[str, Run] = {}
    for fp, ms in sorted(cand_by.items()):
        past = _past(store.measurements(fingerprint=fp), usable)
        good = [(run, group) for run, group in past if all(m.ok for m in group)][-window:]
        used.update((run.run_id, run) for run, _ in good)
        verdicts += _history_case(cases[fp], fp, ms, past, good, rules.of(cases[fp].workload))
    reference = _reference_run(list(usable.values()), cand)
    if reference is not None:
        used[reference.run_id] = reference
        verdicts += _missing_from(store, reference, cand_by)
        notes.append(
            f"missing cases and the differences below are against run {reference.run_id[:8]}, the latest earlier run"
        )
    base_runs = tuple(sorted(used.values(), key=lambda run: run.started_at))
    history_ms = store.measurements([run.run_id for run in base_runs]) if base_runs else []
    verdicts, speed_notes = machine.guard(verdicts, history_ms, cand_ms)
    label = f"last {window} good runs of each case"
    return _finish("history", base_runs, cand, verdicts, (reference,) if reference else (), label,
                   [*notes, *speed_notes])  # fmt: skip


def _past(ms: list[Measurement], usable: Mapping[str, Run]) -> list[tuple[Run, list[Measurement]]]:
    grouped: dict[str, list[Measurement]] = {}
    for m in ms:
        if m.run_id in usable:
            grouped.setdefault(m.run_id, []).append(m)
    return sorted(((usable[run_id], group) for run_id, group in grouped.items()), key=lambda item: item[0].started_at)


def _history_case(
    case: Case,
    fp: str,
    cand: list[Measurement],
    past: list[tuple[Run, list[Measurement]]],
    good: list[tuple[Run, list[Measurement]]],
    rules: _Rules,
) -> list[Verdict]:
    if not past:
        return [_outcome_verdict(case, fp, "new", [], cand, "no earlier run of this case")]
    status = _outcome_change(case, fp, past[-1][1], cand, rules)
    if status is not None:
        return [status]

    good, accepted = _since_accepted(good)
    steps: dict[str, str] = {}

    def values(metric: str) -> tuple[list[float], list[float]]:
        rows = [(run, stats.median(found)) for run, group in good if (found := _values(group, metric))]
        step = stats.last_step([value for _, value in rows], rules.floors[metric])
        if step is None:
            return [value for _, value in rows], _values(cand, metric)
        ratio = stats.median([v for _, v in rows[step:]]) / stats.median([v for _, v in rows[:step]])
        since, run_id = len(rows) - step, rows[step][0].run_id[:8]
        if since >= rules.min_history:  # an established new level: judged against it
            steps[metric] = f"history steps {ratio:.2f}x at run {run_id}: judged against the {since} runs since"
            rows = rows[step:]
        else:  # a recent step keeps counting until accepted (or established)
            steps[metric] = (
                f"history steps {ratio:.2f}x at run {run_id}, {since} runs ago; if that is the new normal: "
                f"daskbench baseline accept {run_id}"
            )
        return [value for _, value in rows], _values(cand, metric)

    def decide(metric: str, history: list[float], c: list[float]) -> stats.Decision:
        floor, z, least = rules.floors[metric], rules.z_threshold, rules.min_history
        decision = stats.history_decision(history, c, floor, z_threshold=z, min_history=least)
        said = "; ".join(part for part in (accepted, steps.get(metric, ""), decision.note) if part)
        return replace(decision, note=said)

    found = _metric_verdicts(case, fp, values, decide, rules, "")
    return explain.explain_verdicts(found, [m for _, group in good for m in group], cand)


def _since_accepted(
    good: list[tuple[Run, list[Measurement]]],
) -> tuple[list[tuple[Run, list[Measurement]]], str]:
    """The history from the newest run whose measurements were accepted as a new level
    (``daskbench baseline accept``) on, and a note saying so; all of it when none was."""
    marked = [n for n, (_, group) in enumerate(good) if any(ACCEPTED_STEP in m.flags for m in group)]
    if not marked:
        return good, ""
    run = good[marked[-1]][0]
    return good[marked[-1] :], f"history since run {run.run_id[:8]}, accepted as a new level"


def _reference_run(earlier: list[Run], cand: Run) -> Run | None:
    """The latest earlier run, preferring one with the candidate's label (e.g. the last nightly)."""
    ordered = sorted(earlier, key=lambda run: run.started_at)
    same_label = [run for run in ordered if run.label == cand.label]
    return (same_label or ordered)[-1] if ordered else None


def _missing_from(store: Store, reference: Run, cand_by: Mapping[str, list[Measurement]]) -> list[Verdict]:
    gone = {
        fp: ms
        for fp, ms in group_measurements(store.measurements([reference.run_id]), "fingerprint").items()
        if fp not in cand_by
    }
    cases = store.cases(gone)
    note = f"in run {reference.run_id[:8]}, not in the candidate"
    return [_outcome_verdict(cases[fp], fp, "missing", ms, [], note) for fp, ms in sorted(gone.items())]


# -- one case ---------------------------------------------------------------------------


def _presence(case: Case, fp: str, base: list[Measurement], cand: list[Measurement]) -> Verdict | None:
    if not base:
        return _outcome_verdict(case, fp, "new", [], cand, "not in the baseline")
    if not cand:
        return _outcome_verdict(case, fp, "missing", base, [], "not in the candidate")
    return None


def _outcome_change(
    case: Case, fp: str, base: list[Measurement], cand: list[Measurement], rules: _Rules
) -> Verdict | None:
    """newly-failing / fixed / failing on both sides, of the measurements that are results (`_results`);
    a side with none is one ``inconclusive`` row saying why."""
    unmeasured = _unmeasured(case, fp, base, cand, rules)
    if unmeasured is not None:
        return unmeasured
    base, cand = _results(base, rules), _results(cand, rules)
    base_failed, cand_failed = [m for m in base if not m.ok], [m for m in cand if not m.ok]
    if cand_failed and not base_failed:
        return _outcome_verdict(case, fp, "newly-failing", base, cand, _failure(cand_failed, len(cand)))
    if base_failed and not cand_failed:
        return _outcome_verdict(case, fp, "fixed", base, cand, f"passes; was {_failure(base_failed, len(base))}")
    if base_failed and cand_failed:
        note = f"fails on both sides: was {_failure(base_failed, len(base))}; now {_failure(cand_failed, len(cand))}"
        return _outcome_verdict(case, fp, "inconclusive", base, cand, note)
    return None


def _results(ms: list[Measurement], rules: _Rules) -> list[Measurement]:
    """The measurements that are results of the workload: never one cut short (``interrupted``) or
    lost with its cluster (``cluster-lost``); one that lost a worker only when asked (``include_worker_loss``)."""
    return [m for m in ms if m.outcome not in NOT_RESULTS and (rules.include_worker_loss or m.outcome != WORKER_LOST)]


def _unmeasured(case: Case, fp: str, base: list[Measurement], cand: list[Measurement], rules: _Rules) -> Verdict | None:
    """One ``inconclusive`` row for a case a side measured but got no result of (cluster lost, worker
    lost, interrupted), instead of a row per metric without values; None when both sides have results."""
    for side, ms in (("candidate", cand), ("baseline", base)):
        if ms and not _results(ms, rules):
            note = f"no result of the workload in the {side}: {_failure(ms, len(ms))}; not judged"
            return _outcome_verdict(case, fp, "inconclusive", base, cand, note + _include_hint(ms, rules))
    return None


def _include_hint(ms: list[Measurement], rules: _Rules) -> str:
    """How to have worker-lost measurements judged, when some were set aside."""
    lost = not rules.include_worker_loss and any(m.outcome == WORKER_LOST for m in ms)
    return " (--include-worker-loss judges a lost worker as the workload's failure)" if lost else ""


def _set_aside_note(cand: list[Measurement], rules: _Rules) -> list[str]:
    """The comparison's note counting the candidate's measurements left out of every verdict, by outcome."""
    aside = [m for m in cand if not _results([m], rules)]
    if not aside:
        return []
    counts = ", ".join(f"{outcome} x{n}" for outcome, n in sorted(Counter(m.outcome for m in aside).items()))
    return [f"not judged: {plural(len(aside), 'candidate measurement')} ({counts}): no result of the workload"
            + _include_hint(aside, rules)]  # fmt: skip


def _failure(failed: list[Measurement], total: int) -> str:
    counts = ", ".join(
        f"{outcome}" + (f" x{n}" if n > 1 else "") for outcome, n in Counter(m.outcome for m in failed).items()
    )
    message = next((m.message.splitlines()[0] for m in failed if m.message.strip()), "")
    return f"{counts} in {len(failed)} of {total} repeats" + (f" ({message[:160]})" if message else "")


def _metric_verdicts(
    case: Case, fp: str, values: SideValues, decide: Decide, rules: _Rules, note: str
) -> list[Verdict]:
    """One verdict per compared metric that has values on either side."""
    verdicts = []
    for metric in catalog.compared():
        base, cand, judged = _values_or_fallback(metric, values)
        if not base and not cand:
            continue
        if base and cand:
            decision = _judged_on(judged, stats.within_min_change(decide(judged, base, cand), base, cand, judged))
        else:
            side = "baseline" if not base else "candidate"
            decision = stats.Decision("inconclusive", note=f"no {metric} values in the {side}")
        verdicts.append(_verdict(case, fp, metric, base, cand, rules.floors[metric], decision, note))
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
    case: Case,
    fp: str,
    metric: str,
    base: list[float],
    cand: list[float],
    floor: float | None,
    d: stats.Decision,
    note: str,
) -> Verdict:
    d = _oriented(metric, d)
    return Verdict(
        fingerprint=fp,
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


def _outcome_verdict(
    case: Case, fp: str, kind: VerdictKind, base: list[Measurement], cand: list[Measurement], note: str
) -> Verdict:
    decision = stats.Decision(kind, method=OUTCOME_METHOD, note=note)
    return _verdict(case, fp, CASE_METRIC, _values(base, CASE_METRIC), _values(cand, CASE_METRIC), None, decision, "")


def _values(ms: Iterable[Measurement], metric: str) -> list[float]:
    """A metric's values over the passed repeats, in repeat order (pairs line up by repeat)."""
    ordered = sorted(ms, key=lambda m: (m.repeat, m.run_id))
    return [float(getattr(m, metric)) for m in ordered if m.ok and getattr(m, metric) is not None]


# -- assembling -------------------------------------------------------------------------


def _finish(
    mode: Literal["ab", "history"],
    base_runs: tuple[Run, ...],
    cand: Run,
    verdicts: list[Verdict],
    diff_against: Sequence[Run],
    label: str,
    notes: list[str],
) -> Comparison:
    return Comparison(
        mode=mode,
        baseline_runs=base_runs,
        candidate_run=cand,
        verdicts=tuple(sorted(verdicts, key=_sort_key)),
        version_diff=matching.diff([run.versions for run in diff_against], cand.versions),
        config_diff=matching.diff([flatten(run.dask_config) for run in diff_against], flatten(cand.dask_config)),
        host_diff=matching.diff([run.host for run in diff_against], cand.host),
        baseline_label=label,
        notes=tuple(notes),
    )


def effect_size(v: Verdict) -> float:
    """How big a change is, for sorting: outcome changes first, then |log ratio|."""
    if v.verdict in ("newly-failing", "fixed"):
        return math.inf
    if v.ratio is None or not v.ratio > 0:
        return -1.0
    return abs(math.log(v.ratio))


def _sort_key(v: Verdict) -> tuple[float, int, str, str, int]:
    order = catalog.names()
    return (-effect_size(v), _ORDER[v.verdict], v.workload, v.fingerprint, order.index(v.metric))


# -- interleaved A/B groups (daskbench ab) ----------------------------------------------

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


def compare_group(
    store: Store, group: str, *, floors: Mapping[str, float] | None = None, include_worker_loss: bool = False
) -> Comparison:
    """Verdicts of an interleaved A/B group: each case's per-round B/A ratios, judged by the
    sequential rule (`sequential.rounds_decision`) over the rounds the group allowed.

    A round is one A and one B measurement taken side by side: in a lockstep group (``ab_mode``
    ``lockstep``: one session per side, measuring in turn) the same repeat of a case on both
    sides; in a group of sessions, one session per side and the median of its repeats. The
    pairs carry the drift between rounds themselves, so no run-to-run noise is assumed. A
    B-side failure where A passed is ``newly-failing``.
    """
    rounds = group_rounds(store, group)
    if not rounds:
        raise DaskbenchError(
            f"no complete round of A/B group {group!r} in {store.display_url}; list groups with: daskbench runs "
            "(column tags), or run one with: daskbench ab"
        )
    rules = _Rules(_merge_floors(floors), stats.Z_THRESHOLD, stats.MIN_HISTORY, include_worker_loss)
    by_side = {side: [sides[side] for sides in rounds.values()] for side in ("A", "B")}
    ms = {run.run_id: store.measurements([run.run_id]) for runs in by_side.values() for run in runs}
    side_ms = {side: [m for run in runs for m in ms[run.run_id]] for side, runs in by_side.items()}
    a_by, b_by = (group_measurements(side_ms[side], "fingerprint") for side in ("A", "B"))
    cases = store.cases({*a_by, *b_by})
    shape = _GroupShape.of(by_side)

    def rule(_a_fp: str, a_side: list[Measurement], b_side: list[Measurement], own: _Rules) -> Judge:
        return _rounds_rule(a_side, b_side, shape, own)

    verdicts = _paired_verdicts(a_by, b_by, cases, True, rules, rule)
    base_runs, cand_runs = tuple(by_side["A"]), by_side["B"]
    return _finish("ab", base_runs, cand_runs[-1], verdicts, base_runs[-1:], shape.label(group), [])


@dataclass(frozen=True)
class _GroupShape:
    """How a group's rounds are laid out: lockstep (a round is a repeat) or sessions (a round is a
    run pair), the run pairs, and the most rounds the group allowed (None: as many as it has)."""

    lockstep: bool
    pairs: tuple[tuple[str, str], ...]  # (A run id, B run id) per session round or lockstep part
    max_rounds: int | None

    @classmethod
    def of(cls, by_side: Mapping[str, list[Run]]) -> _GroupShape:
        newest = by_side["A"][-1].tags
        limit = newest.get("ab_max_rounds", "")
        pairs = tuple((a.run_id, b.run_id) for a, b in zip(by_side["A"], by_side["B"], strict=True))
        return cls(newest.get("ab_mode") == "lockstep", pairs, int(limit) if limit.isdigit() else None)

    def label(self, group: str) -> str:
        if self.lockstep:
            return f"A/B group {group}: lockstep, each case measured in turn until decided, side A"
        return f"A/B group {group}: {len(self.pairs)} interleaved rounds, side A"


def _rounds_rule(
    a_side: list[Measurement], b_side: list[Measurement], shape: _GroupShape, rules: _Rules
) -> tuple[SideValues, Decide]:
    """The value pairs of each round: per lockstep repeat both sides measured, or per session
    round the median of each side's passing repeats."""
    a_runs, b_runs = (group_measurements(ms, "run_id") for ms in (a_side, b_side))

    def per_round(metric: str) -> tuple[list[float], list[float]]:
        a_vals, b_vals = [], []
        for a_run, b_run in shape.pairs:
            a_ms, b_ms = a_runs.get(a_run, []), b_runs.get(b_run, [])
            for a, b in _lockstep_pairs(a_ms, b_ms, metric) if shape.lockstep else _session_pair(a_ms, b_ms, metric):
                a_vals.append(a)
                b_vals.append(b)
        return a_vals, b_vals

    def decide(metric: str, a: list[float], b: list[float]) -> stats.Decision:
        return sequential.rounds_decision(a, b, rules.floors[metric], shape.max_rounds)

    return per_round, decide


def _session_pair(a_ms: list[Measurement], b_ms: list[Measurement], metric: str) -> list[tuple[float, float]]:
    a, b = _values(a_ms, metric), _values(b_ms, metric)
    return [(stats.median(a), stats.median(b))] if a and b else []


def _lockstep_pairs(a_ms: list[Measurement], b_ms: list[Measurement], metric: str) -> list[tuple[float, float]]:
    """Repeat r of A with repeat r of B, for the repeats both measured (passed), in order."""
    a_by = {m.repeat: _values([m], metric) for m in a_ms}
    b_by = {m.repeat: _values([m], metric) for m in b_ms}
    return [(a_by[r][0], b_by[r][0]) for r in sorted(a_by.keys() & b_by.keys()) if a_by[r] and b_by[r]]
