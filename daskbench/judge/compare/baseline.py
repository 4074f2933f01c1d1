"""Baseline mode: the candidate's repeats against those of the baseline run(s) (a baseline name, or a
run id/prefix), with the run-to-run noise of this host.

A/B refuses (`DaskbenchError`) runs from hosts whose cpu model, cores or memory differ,
and runs with no case in common that share workloads whose cluster specs differ. With
``allow_mixed`` such cases are instead paired by workload and parameters (each baseline
case with the candidate case whose cluster spec differs in the fewest fields), which is
how two settings (e.g. worker-saturation 1.1 vs inf) are compared as A and B.
"""

from __future__ import annotations

from collections.abc import Callable

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import machine, matching, stats
from daskbench.judge.compare.comparison import Against, Candidate, finish
from daskbench.judge.compare.verdicts import Decide, Judge, Rules, SideValues, paired_verdicts, passed_values
from daskbench.judge.selection import Selection
from daskbench.model import Case, Measurement, Run, group_measurements
from daskbench.store import Store, runstatus
from daskbench.text import first_few, plural
from daskbench.verdicts import Comparison

#: The baseline of a plain ``daskbench compare``, when a baseline of that name exists.
DEFAULT_BASELINE = "main"


def compare_baseline(store: Store, selection: Selection, candidate: Candidate, rules: Rules) -> Comparison:
    """The candidate against the baseline ``selection`` names (`DEFAULT_BASELINE` when it names none)."""
    label, base_runs = _resolve_baseline(store, selection.baseline or DEFAULT_BASELINE)
    cand, allow_mixed = candidate.run, selection.allow_mixed
    if cand.run_id in {run.run_id for run in base_runs}:
        raise DaskbenchError(f"run {cand.run_id[:8]} is both candidate and baseline {label!r}; pass --candidate")
    if not allow_mixed:
        matching.refuse_mixed_hosts(base_runs, cand)
    base = group_measurements(store.measurements([run.run_id for run in base_runs]), "fingerprint")
    cand_by = group_measurements(candidate.measurements, "fingerprint")
    cases = store.cases({*base, *cand_by})
    taught = _noise_runs(store, cand, base_runs, allow_mixed)
    noise_by = _noise_medians(store, taught, set(base))
    notes = [*candidate.notes, *runstatus.partial_notes(store, base_runs, "baseline"), _noise_note(taught)]
    pooled = {
        metric: stats.pooled_run_noise(list(per_case.values()), stats.default_run_sd(metric))
        for metric, per_case in noise_by.items()
    }

    def rule(base_fp: str, base_side: list[Measurement], cand_side: list[Measurement], own: Rules) -> Judge:
        def noise(metric: str) -> stats.RunNoise:
            default = stats.RunNoise(stats.default_run_sd(metric), 0)
            return stats.case_noise(noise_by.get(metric, {}).get(base_fp, []), pooled.get(metric, default))

        return _ab_rule(base_side, cand_side, noise, own)

    found = paired_verdicts(base, cand_by, cases, allow_mixed, rules, rule)
    base_ms = [m for ms in base.values() for m in ms]
    verdicts, speed_notes = machine.guard(found, base_ms, candidate.measurements)
    named = label in store.baselines()
    apart = _nothing_in_common(
        label if named else "NAME", cand, [cases[fp] for fp in base], [cases[fp] for fp in cand_by]
    )
    return finish("ab", Against(base_runs, label, base_runs), cand, verdicts, [*apart, *notes, *speed_notes])


def _nothing_in_common(label: str, cand: Run, base: list[Case], ours: list[Case]) -> list[str]:
    """The first note when the baseline and the candidate share no case (other sizes, other workloads):
    every row is new or missing, so nothing was judged; what differs, and how to compare like with like."""
    if {case.fingerprint for case in base} & {case.fingerprint for case in ours} or not base or not ours:
        return []
    differ = matching.params_delta(base, ours)
    what = f"they measured other parameters ({', '.join(differ)})" if differ else "they ran other workloads"
    return [
        f"nothing judged: the baseline and the candidate have no case in common, {what}; measure the "
        f"candidate like the baseline, or point the baseline at a run like it: daskbench baseline set {label} "
        f"{cand.run_id[:8]}"
    ]


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


def _noise_runs(store: Store, cand: Run, base_runs: tuple[Run, ...], allow_mixed: bool) -> list[Run]:
    """The runs whose per-run medians show this host's run-to-run noise: the baseline runs when
    there are several, else the newest 20 runs on this host started before the candidate (never
    the candidate, never later runs: a verdict between two runs does not change as runs are added)."""
    if len(base_runs) > 1:
        return list(base_runs)
    earlier = [
        run
        for run in store.runs()
        if run.started_at < cand.started_at
        and not runstatus.made_side_by_side(run)
        and (allow_mixed or matching.same_host(run, cand))
    ]
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
                values = passed_values(ms, metric)
                if values:
                    found.setdefault(metric, {}).setdefault(fingerprint, []).append(stats.median(values))
    return found


def _ab_rule(
    base: list[Measurement], cand: list[Measurement], noise: Callable[[str], stats.RunNoise], rules: Rules
) -> tuple[SideValues, Decide]:
    """How two separate runs are judged (`daskbench.judge.stats.noise`, "Two runs are two sessions").

    ``noise(metric)`` is the run-to-run noise of this case: pooled over the cases of the
    comparison, or its own once it has enough runs. One baseline run: the repeats of both sides,
    the interval widened by that noise. Several baseline runs: the candidate's median against each
    baseline run's median, a t prediction interval with that noise.
    """
    by_run = group_measurements(base, "run_id")

    def values(metric: str) -> tuple[list[float], list[float]]:
        return passed_values(base, metric), passed_values(cand, metric)

    def decide(metric: str, b: list[float], c: list[float]) -> stats.Decision:
        floor = rules.floors[metric]
        if len(by_run) > 1:
            medians = [stats.median(v) for v in (passed_values(ms, metric) for ms in by_run.values()) if v]
            return stats.prediction_decision(medians, stats.median(c), floor, noise(metric))
        paired = len(b) >= 2 and _repeat_set(base, metric) == _repeat_set(cand, metric)
        return stats.ab_decision(b, c, floor, paired=paired, noise=noise(metric))

    return values, decide


def _repeat_set(ms: list[Measurement], metric: str) -> list[int]:
    return sorted(m.repeat for m in ms if m.ok and getattr(m, metric) is not None)
