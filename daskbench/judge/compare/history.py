"""History mode: each case of the candidate against its own last N good runs (runs started before the
candidate, on the same kind of host unless ``allow_mixed``); a level the history stepped to is judged as such."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from daskbench.judge import explain, machine, matching, stats
from daskbench.judge.compare.comparison import Against, Candidate, finish
from daskbench.judge.compare.verdicts import (
    Rules,
    StoredCase,
    metric_verdicts,
    outcome_change,
    outcome_verdict,
    passed_values,
)
from daskbench.judge.selection import Selection
from daskbench.model import ACCEPTED_STEP, Measurement, Run, group_measurements
from daskbench.store import MeasuredOutcome, Store, runstatus
from daskbench.text import plural
from daskbench.verdicts import Comparison, Verdict

#: Earlier runs of one case with their measurements, oldest first.
Past = list[tuple[Run, list[Measurement]]]


@dataclass(frozen=True)
class CaseHistory:
    """What one case is judged against: its newest earlier run's measurements (None: never measured before),
    and its last good runs, oldest first."""

    latest: list[Measurement] | None
    good: Past


def compare_history(store: Store, selection: Selection, candidate: Candidate, rules: Rules) -> Comparison:
    """Each case of the candidate against its last ``selection.history`` good runs; missing cases and
    what else differs against the latest earlier run."""
    cand, window = candidate.run, selection.history or stats.DEFAULT_HISTORY
    usable, notes = _usable_runs(store, cand, selection.allow_mixed)
    cand_by = group_measurements(candidate.measurements, "fingerprint")
    cases = store.cases(cand_by)
    histories = case_histories(store, list(usable.values()), set(cand_by), window)
    verdicts: list[Verdict] = []
    used: dict[str, Run] = {}
    for fp, ms in sorted(cand_by.items()):
        found = histories[fp]
        used.update((run.run_id, run) for run, _ in found.good)
        verdicts += _history_case(StoredCase(cases[fp], fp), ms, found, rules.of(cases[fp].workload))
    reference = _reference_run(list(usable.values()), cand)
    if reference is not None:
        used[reference.run_id] = reference
        verdicts += _missing_from(store, reference, cand_by)
        notes.append(
            f"missing cases and the differences below are against run {reference.run_id[:8]}, the latest earlier run"
        )
    base_runs = tuple(sorted(used.values(), key=lambda run: run.started_at))
    history_ms = [m for found in histories.values() for _, group in found.good for m in group]
    verdicts, speed_notes = machine.guard(verdicts, history_ms, candidate.measurements)
    against = Against(base_runs, f"last {window} good runs of each case", (reference,) if reference else ())
    return finish("history", against, cand, verdicts, [*candidate.notes, *notes, *speed_notes])


def case_histories(store: Store, usable: Sequence[Run], fingerprints: set[str], window: int) -> dict[str, CaseHistory]:
    """Per case, its newest earlier run of ``usable`` and its last ``window`` good ones (every repeat ok).

    The runs are read newest first, a batch at a time (twice the window, then doubling), by the outcomes
    of these cases' measurements alone (`Store.outcomes`, through the indexes), until every case has its
    window or the runs are exhausted; then only the measurements chosen are decoded, in one read. So the
    cost follows the window and the cases, not the length of the history."""
    ordered = sorted(usable, key=lambda run: run.started_at, reverse=True)
    latest: dict[str, str] = {}
    good: dict[str, list[str]] = {fp: [] for fp in fingerprints}  # newest first
    chosen: dict[tuple[str, str], list[int]] = {}
    wanted, start, batch = set(fingerprints), 0, max(2 * window, 10)
    while wanted and start < len(ordered):
        runs_batch = [run.run_id for run in ordered[start : start + batch]]
        start, batch = start + batch, 2 * batch
        rows: dict[tuple[str, str], list[MeasuredOutcome]] = {}
        for row in store.outcomes(runs_batch, wanted):
            rows.setdefault((row.fingerprint, row.run_id), []).append(row)
        for run_id in runs_batch:
            for fp in wanted:
                found = rows.get((fp, run_id))
                if found is None:
                    continue
                if fp not in latest:
                    latest[fp] = run_id
                    chosen[(fp, run_id)] = [row.id for row in found]
                if all(row.ok for row in found) and len(good[fp]) < window:
                    good[fp].append(run_id)
                    chosen[(fp, run_id)] = [row.id for row in found]
        wanted = {fp for fp in wanted if len(good[fp]) < window}
    decoded = group_measurements(store.measurements(ids=[i for ids in chosen.values() for i in ids]), "fingerprint")
    by_run = {run.run_id: run for run in usable}
    histories = {}
    for fp in fingerprints:
        of_runs = group_measurements(decoded.get(fp, []), "run_id")
        histories[fp] = CaseHistory(
            of_runs[latest[fp]] if fp in latest else None,
            [(by_run[run_id], of_runs[run_id]) for run_id in reversed(good[fp])],
        )
    return histories


def _usable_runs(store: Store, cand: Run, allow_mixed: bool) -> tuple[dict[str, Run], list[str]]:
    """The runs a history may hold: started before the candidate, not made side by side, finished, on
    the candidate's kind of host unless ``allow_mixed``; by id, with notes on what was skipped."""
    earlier = [run for run in store.runs() if run.started_at < cand.started_at and run.run_id != cand.run_id]
    sides = [run for run in earlier if runstatus.made_side_by_side(run)]
    notes = []
    if sides:  # other versions (bisect, confirm, pr), half a machine each, planted arms (calibrate)
        earlier = [run for run in earlier if not runstatus.made_side_by_side(run)]
        notes.append(
            f"history skips {plural(len(sides), 'run')} made side by side (ab, calibrate, bisect, "
            "confirm, pr: judge those with compare --group GROUP)"
        )
    earlier, skipped = runstatus.finished_only(store, earlier, "history")
    notes.extend(skipped)
    usable = {run.run_id: run for run in earlier if allow_mixed or matching.same_host(run, cand)}
    if len(usable) < len(earlier):
        notes.append(
            f"history skips {len(earlier) - len(usable)} earlier runs from other hosts "
            f"({matching.HOST_CLASS} when both runs name one, else {', '.join(matching.HOST_IDENTITY)} "
            "differ); --allow-mixed includes them, DASKBENCH_HOST_CLASS names hosts that count as one"
        )
    return usable, notes


def _history_case(of: StoredCase, cand: list[Measurement], history: CaseHistory, rules: Rules) -> list[Verdict]:
    """The verdicts of one case against its good runs, a step in their level said."""
    if history.latest is None:
        return [outcome_verdict(of, "new", [], cand, "no earlier run of this case")]
    status = outcome_change(of, history.latest, cand, rules)
    if status is not None:
        return [status]

    good, accepted = _since_accepted(history.good)
    steps: dict[str, str] = {}

    def values(metric: str) -> tuple[list[float], list[float]]:
        rows = [(run, stats.median(found)) for run, group in good if (found := passed_values(group, metric))]
        step = stats.last_step([value for _, value in rows], rules.floors[metric])
        if step is None:
            return [value for _, value in rows], passed_values(cand, metric)
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
        return [value for _, value in rows], passed_values(cand, metric)

    def decide(metric: str, history: list[float], c: list[float]) -> stats.Decision:
        floor, z, least = rules.floors[metric], rules.z_threshold, rules.min_history
        decision = stats.history_decision(history, c, floor, z_threshold=z, min_history=least)
        said = "; ".join(part for part in (accepted, steps.get(metric, ""), decision.note) if part)
        return replace(decision, note=said)

    found = metric_verdicts(of, values, decide, rules, "")
    return explain.explain_verdicts(found, [m for _, group in good for m in group], cand)


def _since_accepted(good: Past) -> tuple[Past, str]:
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
    """A ``missing`` row per case of the ``reference`` run the candidate lacks (only those decoded)."""
    ids = [row.id for row in store.outcomes([reference.run_id]) if row.fingerprint not in cand_by]
    gone = group_measurements(store.measurements(ids=ids), "fingerprint") if ids else {}
    cases = store.cases(gone)
    note = f"in run {reference.run_id[:8]}, not in the candidate"
    return [outcome_verdict(StoredCase(cases[fp], fp), "missing", ms, [], note) for fp, ms in sorted(gone.items())]
