"""Compare a candidate run with what it is judged against: verdicts from the store, and what differs beside them.

`compare(store, selection)` is the one dispatch; three modes, a module each (the statistics and their
defaults live in `daskbench.judge.stats`):

- **baseline** (`baseline.py`): ``baseline`` is a baseline name (``daskbench baseline set``) or a run
  id/prefix; the repeats of each case in the baseline run(s) against those in the candidate run.
- **history** (`history.py`): each case of the candidate against its own last N good runs (runs started
  before the candidate, on the same kind of host unless ``allow_mixed``).
- **A/B group** (`group.py`): an interleaved group from ``daskbench ab``, judged by its rounds.

With none of ``baseline``, ``history`` and ``ab_group``, the baseline named ``main`` is used if it
exists; otherwise compare falls back to history mode (``DEFAULT_HISTORY`` runs) and says
so in ``Comparison.notes``, because a first nightly set-up has history before anyone has
named a baseline.

Every mode makes one case's verdict rows the same way (`verdicts.py`) and returns a `Comparison`
assembled by `comparison.finish`. The names the rest of daskbench uses are imported from here (the
package's face), never from its modules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from daskbench.judge import stats
from daskbench.judge.compare.baseline import DEFAULT_BASELINE, compare_baseline
from daskbench.judge.compare.comparison import Against, Candidate, effect_size, finish
from daskbench.judge.compare.group import (
    AB_GROUP,
    AB_ROUND,
    AB_SIDE,
    compare_group,
    group_parts,
    group_questions,
    group_rounds,
    lockstep_rounds,
)
from daskbench.judge.compare.history import compare_history
from daskbench.judge.compare.verdicts import CASE_METRIC, OUTCOME_METHOD, Rules, set_aside_note
from daskbench.judge.selection import Selection
from daskbench.model import INTERRUPTED, Run
from daskbench.store import Store, runstatus
from daskbench.text import plural
from daskbench.verdicts import Comparison


def compare(store: Store, selection: Selection) -> Comparison:
    """The verdicts ``selection`` asks for: the one dispatch of every command that compares (its readers
    share one run list: `Store.snapshot`)."""
    with store.snapshot():
        return _compare(store, selection)


def _compare(store: Store, selection: Selection) -> Comparison:
    if selection.ab_group is not None:
        return compare_group(
            store, selection.ab_group, floors=selection.floors, include_worker_loss=selection.include_worker_loss
        )
    rules = Rules.of_selection(selection)
    plain = selection.baseline is None and selection.history is None
    try:
        candidate = _candidate(store, selection.candidate, rules)
    except runstatus.NoFinishedRun as none:  # the first run was cut short: nothing to compare yet, as with one run
        if not plain:
            raise
        return finish("history", Against((), "nothing yet"), none.newest, [], _unfinished(store, none))
    if plain:
        alone = _alone(store, candidate.run, defaulted=not selection.candidate)
        if alone:
            return finish("history", Against((), "nothing yet"), candidate.run, [], [*candidate.notes, *alone])
        selection, candidate = _default_reference(store, selection, candidate)
    if selection.history is not None:
        return compare_history(store, selection, candidate, rules)
    return compare_baseline(store, selection, candidate, rules)


def compare_runs(store: Store, **selection: Any) -> Comparison:
    """`compare` with the `Selection` given as keywords (``candidate=``, ``baseline=``, ``history=``...)."""
    return compare(store, Selection(**selection))


def _candidate(store: Store, named: str | None, rules: Rules) -> Candidate:
    """The run to judge and notes on it: a named run whatever its status (warned if it did not
    finish), by default the newest finished run; and its measurements no rule judges, counted."""
    if named:
        run = store.run(named)
        notes = runstatus.partial_notes(store, [run], "candidate")
    else:
        run, notes = runstatus.latest_finished(store)
    measurements = tuple(store.measurements([run.run_id]))
    return Candidate(run, measurements, tuple(notes)).noted(*set_aside_note(measurements, rules))


def _default_reference(store: Store, selection: Selection, candidate: Candidate) -> tuple[Selection, Candidate]:
    """The baseline named ``main`` if there is one, else history mode (said in the candidate's notes)."""
    if DEFAULT_BASELINE in store.baselines():
        return replace(selection, baseline=DEFAULT_BASELINE), candidate
    said = (
        f"no baseline named {DEFAULT_BASELINE!r}: comparing each case with its last {stats.DEFAULT_HISTORY} good "
        f"runs (name one with: daskbench baseline set {DEFAULT_BASELINE} <run-id>)"
    )
    return replace(selection, history=stats.DEFAULT_HISTORY), candidate.noted(said)


def _unfinished(store: Store, none: runstatus.NoFinishedRun) -> list[str]:
    """Why there is nothing to compare when no run has finished yet (the first run was interrupted), and what
    to do, in words every command that compares can show (compare, report, alert)."""
    run = none.newest
    finished = [m for m in store.measurements([run.run_id]) if m.outcome != INTERRUPTED]  # the one Ctrl-C cut short
    measured = plural(len(finished), "measurement")
    return [
        f"no run in {store.display_url} has finished yet: the newest, run {run.run_id[:8]} ({run.label}), is "
        f"{none.status} after {measured}: nothing to compare yet",
        "only a run that ran to its end is judged: run the benchmarks again (pytest -m benchmark --size tiny is "
        "a quick first look), then once more after a change",
        f"what the {none.status} run measured: daskbench show {run.run_id[:8]}",
    ]


def _alone(store: Store, cand: Run, *, defaulted: bool) -> list[str]:
    """Why a plain ``daskbench compare`` has nothing to judge yet (one run; or the newest run
    is the baseline), with how to get a second run; empty when there is something to compare."""
    main = set(store.baselines().get(DEFAULT_BASELINE, ()))
    others, skipped = runstatus.finished_only(store, [run for run in store.runs() if run.run_id != cand.run_id], "")
    if not others and not main - {cand.run_id}:  # a baseline set with --force on an unfinished run is judged against
        only = "the only finished run" if skipped else "the only run"
        reason = f"run {cand.run_id[:8]} is {only} in {store.display_url}"
    elif defaulted and main == {cand.run_id}:
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
    "Against",
    "compare",
    "compare_group",
    "compare_runs",
    "effect_size",
    "finish",
    "group_parts",
    "group_questions",
    "group_rounds",
    "lockstep_rounds",
]
