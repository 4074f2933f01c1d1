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

The verdicts of one case are made in `verdicts`; each mode in its module: `baseline`, `history`, `group`.
"""

from __future__ import annotations

from typing import Any

from daskbench.errors import DaskbenchError
from daskbench.judge import stats
from daskbench.judge.compare.baseline import _ab_comparison, _resolve_baseline
from daskbench.judge.compare.group import AB_GROUP, AB_ROUND, AB_SIDE, compare_group, group_rounds
from daskbench.judge.compare.history import _history_comparison
from daskbench.judge.compare.verdicts import (
    CASE_METRIC,
    OUTCOME_METHOD,
    _finish,
    _merge_floors,
    _Rules,
    _set_aside_note,
    effect_size,
)
from daskbench.judge.selection import Selection
from daskbench.model import Comparison, Run
from daskbench.store import Store, runstatus

DEFAULT_BASELINE = "main"


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


__all__ = [
    "AB_GROUP",
    "AB_ROUND",
    "AB_SIDE",
    "CASE_METRIC",
    "DEFAULT_BASELINE",
    "OUTCOME_METHOD",
    "compare",
    "compare_group",
    "compare_runs",
    "effect_size",
    "group_rounds",
]
