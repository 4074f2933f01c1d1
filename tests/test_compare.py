"""daskbench compare / baseline: verdicts from a real SQLite store, output and exit codes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daskbench.cli import main
from daskbench.config import parse_floors
from daskbench.errors import DaskbenchError
from daskbench.judge import stats
from daskbench.judge.compare import Against, compare_group, compare_runs, effect_size, finish
from daskbench.judge.format import comparison_to_json, format_table, format_verdict, regression_summary
from daskbench.model import JSON_VERSION, Case, ClusterSpec, Run
from daskbench.store import Store
from daskbench.text import WIDTH
from daskbench.verdicts import Comparison, Verdict
from tests.helpers import (
    HOST,
    MIB,
    add_lockstep_group,
    add_results,
    add_run,
    make_case,
    make_measurement,
    make_run,
)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'results.db'}"


@pytest.fixture
def store(db: str) -> Store:
    return Store(db)


def add_history(store: Store, case: Case, runtime: float, runs: int = 3) -> None:
    """Earlier runs of ``case`` at ``runtime`` (+-1% run to run): its run-to-run noise."""
    for index in range(runs):
        run = add_run(store, 0, label=f"history-{case.fingerprint[:6]}-{index}")
        add_results(store, run, case, runtime * (0.99 + 0.01 * index))


def ab_store(store: Store, base_runtime: float, cand_runtime: float, case: Case | None = None) -> tuple[Run, Run]:
    """A baseline run named main and a later candidate run of the same case, after three
    earlier runs at the baseline's level (+-1%) that show the case's run-to-run noise."""
    case = case or make_case("shuffle", size="small")
    add_history(store, case, base_runtime)
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, base_runtime)
    add_results(store, cand, case, cand_runtime)
    store.set_baseline("main", [base.run_id])
    return base, cand


def only(comparison: Comparison, metric: str = "runtime_s") -> Verdict:
    found = [v for v in comparison.verdicts if v.metric == metric]
    assert len(found) == 1, found
    return found[0]


# -- A/B -------------------------------------------------------------------------------------


def test_planted_slowdown_is_regressed_and_exits_1(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A 1.3x slower candidate against baseline main: regressed, effect and evidence shown, exit 1."""
    ab_store(store, 10.0, 13.0)
    assert main(["compare", "--db", db]) == 1
    out, err = capsys.readouterr()
    assert "regressed" in out and "1.30x slower (95% CI" in out and "floor 1.10)" in out
    assert "daskbench: 1 regression against main: 1.30x slower:" in err


def test_unchanged_candidate_exits_0(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The same runtime again is unchanged on every metric and exits 0."""
    ab_store(store, 10.0, 10.0)
    assert main(["compare", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "summary: 2 unchanged" in out


def test_ab_verdict_carries_values_interval_and_method(store: Store) -> None:
    """The verdict holds both sides' repeats, a CI beyond the floor and a paired t method."""
    _, cand = ab_store(store, 10.0, 13.0)
    verdict = only(compare_runs(store, candidate=cand.run_id, baseline="main"))
    assert verdict.verdict == "regressed"
    assert verdict.baseline_values == pytest.approx((9.9, 10.0, 10.1))
    assert verdict.ratio == pytest.approx(1.3, rel=1e-3)
    assert verdict.ci_low is not None and verdict.ci_low > stats.default_floor("runtime_s")
    assert "paired t" in verdict.method


def test_memory_metric_gets_its_own_row(store: Store) -> None:
    """Peak memory is judged separately from runtime (same 1 GiB both sides: unchanged)."""
    ab_store(store, 10.0, 13.0)
    comparison = compare_runs(store)
    assert only(comparison, "peak_memory_above_idle_bytes").verdict == "unchanged"
    assert only(comparison, "runtime_s").verdict == "regressed"


def test_memory_is_judged_above_idle_so_a_lighter_suite_is_not_an_improvement(store: Store) -> None:
    """One case in two suites: the worker's idle footprint differs by 60 MiB, the work adds the same
    60 MiB on both sides. Judged above idle: unchanged (the raw per-worker peaks differ by 24%)."""
    case = make_case("shuffle", size="small")
    store.add_case(case)
    base, cand = add_run(store, 1), add_run(store, 2)
    for run, idle in ((base, 186 * MIB), (cand, 126 * MIB)):
        for repeat in range(3):
            store.add_measurement(make_measurement(
                run, case, repeat, peak_worker_memory_bytes=idle + 60 * MIB, idle_worker_memory_bytes=idle,
                peak_worker_memory_above_idle_bytes=60 * MIB + repeat * MIB))  # fmt: skip
    verdict = only(compare_runs(store, baseline=base.run_id), "peak_worker_memory_above_idle_bytes")
    assert verdict.verdict == "unchanged" and verdict.ratio == pytest.approx(1.0)
    assert "judged on" not in verdict.note


def test_memory_of_runs_recorded_before_idle_was_is_judged_on_the_raw_peak_and_says_so(store: Store) -> None:
    """Older runs have no memory above idle: the raw peak is judged in its place, with a note."""
    ab_store(store, 10.0, 10.0)
    verdict = only(compare_runs(store), "peak_memory_above_idle_bytes")
    assert verdict.verdict == "unchanged" and "judged on peak_memory_bytes" in verdict.note


def test_improvement_reads_as_faster(store: Store) -> None:
    """A 1.3x faster candidate is improved and reads '1.30x faster'."""
    ab_store(store, 13.0, 10.0)
    verdict = only(compare_runs(store))
    assert verdict.verdict == "improved"
    assert format_verdict(verdict).startswith("1.30x faster (95% CI")


def test_baseline_can_be_a_run_id_prefix(store: Store) -> None:
    """--baseline accepts a run id prefix when no baseline has that name."""
    base, cand = ab_store(store, 10.0, 13.0)
    comparison = compare_runs(store, baseline=base.run_id[:6], candidate=cand.run_id)
    assert comparison.mode == "ab" and comparison.baseline_runs == (base,)


def test_single_repeat_runs_without_history_are_inconclusive_with_advice(store: Store) -> None:
    """1 vs 1 repeat and no earlier runs: a 1.5x change is within the assumed run-to-run noise."""
    case = make_case("shuffle", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0, noise=(0.0,))
    add_results(store, cand, case, 15.0, noise=(0.0,))
    verdict = only(compare_runs(store, baseline=base.run_id))
    assert verdict.verdict == "inconclusive"
    assert "run-to-run noise assumed 15% until this case has 3 runs" in verdict.note
    assert "assumed" in verdict.method


def test_single_repeat_runs_with_stable_history_find_a_regression(store: Store) -> None:
    """The nightly case: one repeat a run, but earlier runs show +-1% noise, so 1.5x is regressed."""
    case = make_case("shuffle", size="small")
    add_history(store, case, 10.0)
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0, noise=(0.0,))
    add_results(store, cand, case, 15.0, noise=(0.0,))
    verdict = only(compare_runs(store, baseline=base.run_id))
    assert verdict.verdict == "regressed" and verdict.ci_low is not None and verdict.ci_low > 1.1
    assert "from 4 runs" in verdict.method


def noisy_history_verdict(store: Store, history: tuple[float, ...]) -> Verdict:
    """wordcount's runtime at ``history`` in earlier runs, then 10 s against 11.5 s (3 repeats each)."""
    case = make_case("wordcount", size="small")
    for index, runtime in enumerate(history):
        add_results(store, add_run(store, index, label=f"past-{index}"), case, runtime)
    base, cand = add_run(store, 10), add_run(store, 11)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 11.5)
    return only(compare_runs(store, baseline=base.run_id, candidate=cand.run_id))


def test_a_floor_hint_names_the_real_workload_and_metric_and_the_flag_parses(store: Store) -> None:
    """Runs at 10, 12, 8.5 s: the noise needs a floor above 1.10; the note gives the flag, which --floor accepts."""
    verdict = noisy_history_verdict(store, (10.0, 12.0, 8.5))
    assert verdict.verdict == "inconclusive" and "WORKLOAD:METRIC" not in verdict.note
    flag = verdict.note.split("--floor ")[1].split(";")[0]
    assert flag.startswith("wordcount:runtime_s=")
    ((key, value),) = parse_floors(flag).items()
    assert key == "wordcount:runtime_s" and 1.10 < value <= stats.USEFUL_FLOOR


def test_when_no_floor_would_help_the_note_says_so_plainly(store: Store) -> None:
    """Runs at 10, 30, 4 s: the noise needs a floor above 2; the note says no floor would help, and what would."""
    verdict = noisy_history_verdict(store, (10.0, 30.0, 4.0))
    assert verdict.verdict == "inconclusive" and "--floor" not in verdict.note
    assert "no floor would help: this case's run-to-run noise is " in verdict.note
    assert "use daskbench ab (lockstep) or more repeats" in verdict.note


def test_repeats_that_agree_do_not_hide_run_to_run_noise(store: Store) -> None:
    """A/A drift: repeats agree within a run, runs differ by 15%; a 1.2x run is not a regression."""
    case = make_case("shuffle", size="small")
    for index, level in enumerate((10.0, 11.5, 9.8, 11.2)):
        add_results(store, add_run(store, 0, label=f"drift-{index}"), case, level)
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 12.0)
    assert only(compare_runs(store, baseline=base.run_id)).verdict == "inconclusive"


def test_baseline_of_several_single_repeat_runs_can_find_a_regression(store: Store) -> None:
    """Nightly --repeat 1: naming 5 runs as the baseline gives a spread, so a 1.5x step regresses."""
    case = make_case("shuffle", size="small")
    runs = [add_run(store, i) for i in range(6)]
    for run, wiggle in zip(runs[:5], (-0.02, 0.0, 0.01, 0.02, -0.01), strict=True):
        add_results(store, run, case, 10.0, noise=(wiggle,))
    add_results(store, runs[5], case, 15.0, noise=(0.0,))
    store.set_baseline("main", [run.run_id for run in runs[:5]])
    verdict = only(compare_runs(store))
    assert verdict.verdict == "regressed"
    assert "prediction" in verdict.method


def test_floor_option_widens_what_counts_as_unchanged(store: Store, db: str) -> None:
    """A 1.15x change regresses at the default floor but not with --floor runtime=1.2."""
    ab_store(store, 10.0, 11.5)
    assert main(["compare", "--db", db]) == 1
    assert main(["compare", "--db", db, "--floor", "runtime=1.2"]) == 0
    assert main(["compare", "--db", db, "--floor", "20%"]) == 0


def test_a_workloads_own_floor_applies_to_its_cases_only(store: Store, db: str) -> None:
    """``--floor shuffle:runtime=1.2`` spares that workload's 1.15x; another workload's floor does not."""
    ab_store(store, 10.0, 11.5)
    assert main(["compare", "--db", db, "--floor", "shuffle:runtime=1.2"]) == 0
    assert main(["compare", "--db", db, "--floor", "wordcount:runtime=1.2"]) == 1
    assert main(["compare", "--db", db, "--floor", "runtime=1.2,shuffle:runtime=1.05"]) == 1


def test_floors_table_in_pyproject_is_read_and_a_flag_overrides_it(
    store: Store, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[tool.daskbench.floors]`` sets per-workload floors for every command; ``--floor`` wins over it."""
    ab_store(store, 10.0, 11.5)
    (tmp_path / "pyproject.toml").write_text('[tool.daskbench.floors]\n"shuffle:runtime" = 1.2\n')
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--db", db]) == 0
    assert main(["compare", "--db", db, "--floor", "runtime=1.1"]) == 1


def test_bad_floor_exits_2_with_a_message(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--floor speed=fast is refused with a one-line error and exit 2."""
    ab_store(store, 10.0, 10.0)
    assert main(["compare", "--db", db, "--floor", "speed=1.1"]) == 2
    assert "unknown metric 'speed'" in capsys.readouterr().err
    assert main(["compare", "--db", db, "--floor", ":runtime=1.1"]) == 2
    assert "names no workload before ':'" in capsys.readouterr().err


# -- outcomes, presence ------------------------------------------------------------------------


def test_newly_failing_case_is_a_regression_naming_the_outcome(
    store: Store, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case that passed in the baseline and OOMs now is newly-failing, shows 'oom', exits 1."""
    case = make_case("shuffle", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 0.0, outcome="oom")
    store.set_baseline("main", [base.run_id])
    verdict = only(compare_runs(store))
    assert verdict.verdict == "newly-failing" and verdict.is_regression
    assert "oom x3 in 3 of 3 repeats" in verdict.note and "KilledWorker" in verdict.note
    assert main(["compare", "--db", db]) == 1
    assert "newly failing: oom" in capsys.readouterr().out


def test_case_that_passes_again_is_fixed(store: Store) -> None:
    """A case that hit worker-lost in the baseline and passes now is fixed, not a regression (worker
    loss judged as the workload's, as asked; by default it is set aside: tests/test_cluster_faults.py)."""
    case = make_case("shuffle", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 0.0, outcome="worker-lost")
    add_results(store, cand, case, 10.0)
    verdict = only(compare_runs(store, baseline=base.run_id, include_worker_loss=True))
    assert verdict.verdict == "fixed"
    assert "worker-lost" in verdict.note
    assert not compare_runs(store, baseline=base.run_id, include_worker_loss=True).regressions


def test_new_and_missing_cases(store: Store) -> None:
    """A fingerprint only in the candidate is new; one only in the baseline is missing."""
    old, new, both = (
        make_case("old-workload", size="small"),
        make_case("new-workload", size="small"),
        make_case("shuffle", size="small"),
    )
    add_history(store, both, 10.0)
    base, cand = add_run(store, 1), add_run(store, 2)
    for run, case in ((base, old), (base, both), (cand, new), (cand, both)):
        add_results(store, run, case, 10.0)
    kinds = {
        v.workload: v.verdict for v in compare_runs(store, baseline=base.run_id).verdicts if v.metric == "runtime_s"
    }
    assert kinds == {"old-workload": "missing", "new-workload": "new", "shuffle": "unchanged"}


def test_verdicts_are_sorted_by_effect(store: Store) -> None:
    """Newly failing first, then the biggest ratio, the unchanged last."""
    small, big, failing = (
        make_case("small-change", size="small"),
        make_case("big-change", size="small"),
        make_case("now-failing", size="small"),
    )
    add_history(store, small, 10.0)
    base, cand = add_run(store, 1), add_run(store, 2)
    for case in (small, big, failing):
        add_results(store, base, case, 10.0)
    add_results(store, cand, small, 10.0)
    add_results(store, cand, big, 20.0)
    add_results(store, cand, failing, 0.0, outcome="timeout")
    verdicts = compare_runs(store, baseline=base.run_id).verdicts
    assert [(v.workload, v.metric) for v in verdicts[:2]] == [("now-failing", "runtime_s"), ("big-change", "runtime_s")]
    effects = [effect_size(v) for v in verdicts]
    assert effects == sorted(effects, reverse=True)
    assert verdicts[-1].verdict == "unchanged"


def test_a_cost_that_ties_with_its_runtime_in_all_but_the_last_bits_is_named_after_it() -> None:
    """Cost is runtime times a price: its ratio equals runtime's but for float rounding (here 1e-13 larger).
    Equal effects keep the catalog's order, so a comment's "biggest" is the runtime, not the cost."""
    common: dict[str, Any] = {"fingerprint": "f", "workload": "w", "params": {}, "verdict": "regressed", "floor": 1.1}
    runtime = Verdict(metric="runtime_s", ratio=1.38, ci_low=1.04, ci_high=1.88, **common)
    cost = Verdict(metric="cost_usd", ratio=1.38 * (1 + 1e-13), ci_low=1.04, ci_high=1.88, **common)
    larger = Verdict(metric="cost_usd", ratio=1.39, ci_low=1.04, ci_high=1.88, **common)
    run = make_run()
    for verdicts, first in (([cost, runtime], "runtime_s"), ([runtime, larger], "cost_usd")):
        comparison = finish("ab", Against((run,), "A"), run, verdicts, ())
        assert comparison.verdicts[0].metric == first


# -- refusals and errors -----------------------------------------------------------------------


def test_differing_hosts_are_refused_unless_allow_mixed(
    store: Store, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs on different CPUs: exit 2 naming the difference; --allow-mixed compares them anyway."""
    case = make_case("shuffle", size="small")
    base = add_run(store, 1)
    cand = add_run(store, 2, host={**HOST, "cpu_model": "Other CPU"})
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 10.0)
    store.set_baseline("main", [base.run_id])
    assert main(["compare", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "different hosts" in err and "Other CPU" in err and "--allow-mixed" in err
    assert main(["compare", "--db", db, "--allow-mixed"]) == 0
    assert "cpu_model" in capsys.readouterr().out


def test_differing_cluster_specs_are_refused_unless_allow_mixed(store: Store) -> None:
    """No common fingerprint but the same workload on another cluster: refused; mixed pairs them."""
    add_history(store, make_case("shuffle", n_workers=2, size="small"), 10.0)
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, make_case("shuffle", n_workers=2, size="small"), 10.0)
    add_results(store, cand, make_case("shuffle", n_workers=4, size="small"), 6.0)
    with pytest.raises(DaskbenchError, match=r"cluster spec of shuffle differs \(n_workers 2 -> 4\)"):
        compare_runs(store, baseline=base.run_id)
    verdict = only(compare_runs(store, baseline=base.run_id, allow_mixed=True))
    assert verdict.verdict == "improved"
    assert "cluster differs: n_workers 2 -> 4" in verdict.note


def test_allow_mixed_pairs_a_saturation_sweep_setting_by_setting(store: Store) -> None:
    """Two sweeps on different cluster sizes pair each saturation with the same saturation."""
    for saturation, runtime in ((1.1, 10.0), (float("inf"), 20.0)):
        add_history(store, make_case("shuffle", n_workers=2, saturation=saturation, size="small"), runtime)
    base, cand = add_run(store, 1), add_run(store, 2)
    for saturation, runtime in ((1.1, 10.0), (float("inf"), 20.0)):
        add_results(store, base, make_case("shuffle", n_workers=2, saturation=saturation, size="small"), runtime)
        add_results(store, cand, make_case("shuffle", n_workers=4, saturation=saturation, size="small"), runtime)
    verdicts = [v for v in compare_runs(store, baseline=base.run_id, allow_mixed=True).verdicts]
    assert {v.verdict for v in verdicts} == {"unchanged"}
    assert len(verdicts) == 4


def test_missing_baseline_name_exits_2(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--baseline nope (no such name or run) is a one-line error with exit 2."""
    ab_store(store, 10.0, 10.0)
    assert main(["compare", "--db", db, "--baseline", "nope"]) == 2
    assert "no baseline or run named 'nope'" in capsys.readouterr().err


def test_candidate_inside_its_own_baseline_is_refused(store: Store) -> None:
    """Comparing a run with itself is an error, not a clean A/A."""
    base, _ = ab_store(store, 10.0, 10.0)
    with pytest.raises(DaskbenchError, match="both candidate and baseline"):
        compare_runs(store, candidate=base.run_id, baseline="main")


def test_empty_store_exits_2(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """With no runs at all, compare says to run the suite first."""
    assert main(["compare", "--db", db]) == 2
    assert "pytest -m benchmark" in capsys.readouterr().err


def test_baseline_and_history_together_exit_2(store: Store, db: str) -> None:
    """--baseline and --history are exclusive."""
    ab_store(store, 10.0, 10.0)
    assert main(["compare", "--db", db, "--baseline", "main", "--history", "5"]) == 2


# -- history -----------------------------------------------------------------------------------


def history_store(store: Store, runtimes: list[float], *, candidate: float, failing: set[int] = frozenset()) -> Run:
    """One single-repeat run per runtime (oldest first), then the candidate run; returns it."""
    case = make_case("shuffle", size="small")
    for index, runtime in enumerate(runtimes):
        outcome = "oom" if index in failing else "passed"
        add_results(store, add_run(store, index), case, runtime, noise=(0.0,), outcome=outcome)
    cand = add_run(store, len(runtimes))
    add_results(store, cand, case, candidate, noise=(0.0,))
    return cand


def wobble(n: int, spread: float = 0.02) -> list[float]:
    """n runtimes around 10 s, spread deterministically by +-spread."""
    return [10.0 * (1 + spread * ((i * 7) % 5 - 2) / 2) for i in range(n)]


def test_history_finds_a_planted_step(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """20 nightly runs at 10 s +-2%, then 13 s: regressed with a z-score, exit 1."""
    history_store(store, wobble(20), candidate=13.0)
    assert main(["compare", "--db", db, "--history", "20"]) == 1
    out = capsys.readouterr().out
    assert "daskbench compare (history)" in out and "regressed" in out and "vs 20 runs, floor 1.10)" in out


def test_history_judges_against_an_established_new_level(store: Store) -> None:
    """12 runs at 10 s, then 12 at 13 s (a deliberate change): a candidate at 13 s is unchanged
    against the 12 runs since the step, and the note names the step."""
    cand = history_store(store, wobble(12) + [13.0 * v / 10 for v in wobble(12)], candidate=13.0)
    verdict = only(compare_runs(store, candidate=cand.run_id, history=30))
    assert verdict.verdict == "unchanged" and len(verdict.baseline_values) == 12
    assert "history steps 1.30x at run run012-n: judged against the 12 runs since" in verdict.note


def test_a_recent_step_keeps_counting_until_accepted(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Three nights at 13 s after twenty at 10 s are still a regression, with the accept command
    in the note; ``baseline accept`` on the first 13 s run makes history start there."""
    cand = history_store(store, [*wobble(20), 13.0, 13.0, 13.0], candidate=13.0)
    verdict = only(compare_runs(store, candidate=cand.run_id, history=30))
    assert verdict.verdict == "regressed"
    assert "history steps 1.30x at run run020-n, 3 runs ago; if that is the new normal: " in verdict.note
    assert main(["baseline", "accept", "run020", "--db", db, "--why", "new tokenizer"]) == 0
    assert "accepted run run020-n as the new level of 1 case" in capsys.readouterr().out
    verdict = only(compare_runs(store, candidate=cand.run_id, history=30))
    assert verdict.verdict == "inconclusive" and len(verdict.baseline_values) == 3
    assert "history since run run020-n, accepted as a new level" in verdict.note


def test_accept_with_an_unknown_workload_is_one_line_and_exit_2(
    store: Store, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    history_store(store, wobble(3), candidate=10.0)
    assert main(["baseline", "accept", "run001", "--db", db, "--workload", "nosuch"]) == 2
    assert "has no cases of workload nosuch" in capsys.readouterr().err


def test_history_uses_only_good_runs(store: Store) -> None:
    """Failed earlier runs are not history: 12 good of 15 runs are used."""
    cand = history_store(store, wobble(15), candidate=10.0, failing={2, 5, 8})
    verdict = only(compare_runs(store, candidate=cand.run_id, history=20))
    assert verdict.verdict == "unchanged"
    assert len(verdict.baseline_values) == 12


def test_history_skips_runs_made_side_by_side(store: Store) -> None:
    """Runs of an A/B group (bisect steps on other releases, a confirmation, a pull request's sides) are not
    a case's history: 10 nightly runs at 10 s, then 6 A/B runs at 20 s, then the candidate at 10 s."""
    case = make_case("shuffle", size="small")
    for index, runtime in enumerate(wobble(10)):
        add_results(store, add_run(store, index), case, runtime, noise=(0.0,))
    for index in range(10, 16):
        side = add_run(store, index, label=f"bisect-3-A{index}", tags={"ab_group": "bisect-3", "ab_side": "A"})
        add_results(store, side, case, 20.0, noise=(0.0,))
    cand = add_run(store, 16)
    add_results(store, cand, case, 10.0, noise=(0.0,))
    comparison = compare_runs(store, candidate=cand.run_id, history=20)
    verdict = only(comparison)
    assert verdict.verdict == "unchanged" and len(verdict.baseline_values) == 10
    assert any(note.startswith("history skips 6 runs made side by side") for note in comparison.notes)


def test_history_window_limits_the_lookback(store: Store) -> None:
    """--history 12 looks at the last 12 good runs only."""
    history_store(store, wobble(25), candidate=10.0)
    assert len(only(compare_runs(store, history=12)).baseline_values) == 12


def test_history_is_inconclusive_until_enough_runs(store: Store) -> None:
    """With 4 earlier runs a 2x change is inconclusive and says how much history is needed."""
    history_store(store, wobble(4), candidate=20.0)
    verdict = only(compare_runs(store, history=20))
    assert verdict.verdict == "inconclusive"
    assert f"{stats.MIN_HISTORY} needed" in verdict.note


def test_history_newly_failing_against_the_latest_run(store: Store) -> None:
    """In history mode a candidate failure after a passing run is newly-failing."""
    case = make_case("shuffle", size="small")
    for index in range(3):
        add_results(store, add_run(store, index), case, 10.0, noise=(0.0,))
    add_results(store, add_run(store, 3), case, 0.0, noise=(0.0,), outcome="timeout")
    verdict = only(compare_runs(store, history=20))
    assert verdict.verdict == "newly-failing" and "timeout" in verdict.note


def test_history_reports_missing_cases_of_the_latest_run(store: Store) -> None:
    """A case the previous nightly ran but the candidate did not is missing."""
    kept, dropped = make_case("shuffle", size="small"), make_case("dropped", size="small")
    prev, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, prev, kept, 10.0)
    add_results(store, prev, dropped, 10.0)
    add_results(store, cand, kept, 10.0)
    verdicts = {v.workload: v.verdict for v in compare_runs(store, history=20).verdicts if v.metric == "runtime_s"}
    assert verdicts["dropped"] == "missing"


def test_history_skips_runs_from_other_hosts_and_says_so(store: Store) -> None:
    """Earlier runs on another CPU are left out of history, and a note counts them."""
    case = make_case("shuffle", size="small")
    add_results(store, add_run(store, 0, host={**HOST, "cores": 64}), case, 10.0, noise=(0.0,))
    add_results(store, add_run(store, 1), case, 10.0, noise=(0.0,))
    add_results(store, add_run(store, 2), case, 10.0, noise=(0.0,))
    comparison = compare_runs(store, history=20)
    assert len(only(comparison).baseline_values) == 1
    assert any("skips 1 earlier runs from other hosts" in note for note in comparison.notes)
    assert len(only(compare_runs(store, history=20, allow_mixed=True)).baseline_values) == 2


def test_without_baseline_main_compare_falls_back_to_history(
    store: Store, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No baseline named main: history mode, and the output says so and how to set one."""
    history_store(store, wobble(12), candidate=10.0)
    assert main(["compare", "--db", db]) == 0
    out = " ".join(capsys.readouterr().out.split())  # a note wraps at 120 columns
    assert "no baseline named 'main'" in out and "daskbench baseline set main" in out
    assert "daskbench compare (history)" in out


# -- output ------------------------------------------------------------------------------------


def test_json_output_has_the_verdict_fields(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json is a versioned object whose verdicts have fingerprint, params, metric, ratio, CI, values..."""
    ab_store(store, 10.0, 13.0)
    assert main(["compare", "--db", db, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == JSON_VERSION and isinstance(data["verdicts"], list)
    verdict = next(v for v in data["verdicts"] if v["metric"] == "runtime_s")
    expected = {"fingerprint", "workload", "params", "metric", "verdict", "ratio", "ci_low", "ci_high"}
    assert expected | {"baseline_values", "candidate_values", "floor", "method", "note", "cluster"} <= verdict.keys()
    assert verdict["verdict"] == "regressed" and verdict["params"] == {"size": "small"}
    assert verdict["cluster"]["n_workers"] == 2 and len(verdict["candidate_values"]) == 3
    whole = comparison_to_json(compare_runs(store))
    assert whole["regressed"] is True and whole["mode"] == "ab"


def test_json_never_holds_infinity_or_nan(store: Store) -> None:
    """An infinite z (constant history) and an inf saturation serialise as "inf", strictly valid JSON."""
    case = make_case("shuffle", saturation=float("inf"), size="small")
    for index in range(11):
        add_results(store, add_run(store, index), case, 10.0, noise=(0.0,))
    cand = add_run(store, 11, dask_config={"distributed.scheduler.worker-saturation": float("inf")})
    add_results(store, cand, case, 12.0, noise=(0.0,))
    data = comparison_to_json(compare_runs(store, history=20))
    text = json.dumps(data, allow_nan=False)
    verdict = next(v for v in data["verdicts"] if v["metric"] == "runtime_s")
    assert verdict["score"] == "inf" and verdict["cluster"]["worker_saturation"] == "inf"
    assert '"inf"' in text


def test_table_shows_version_and_config_differences(store: Store) -> None:
    """The table ends with the versions and dask config that differ between the sides."""
    case = make_case("shuffle", size="small")
    base = add_run(store, 1, versions={"dask": "2025.1.0", "numpy": "2.0"}, dask_config={"a": {"b": 1}})
    cand = add_run(store, 2, versions={"dask": "2025.2.0", "numpy": "2.0"}, dask_config={"a": {"b": 2}})
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 10.0)
    comparison = compare_runs(store, baseline=base.run_id)
    assert comparison.version_diff == {"dask": ("2025.1.0", "2025.2.0")}
    assert comparison.config_diff == {"a.b": (1, 2)}
    table = format_table(comparison)
    assert "dask  2025.1.0 -> 2025.2.0" in table and "a.b  1 -> 2" in table and "host: same on both sides" in table


def test_format_verdict_states_effect_and_evidence() -> None:
    """The phrase reads '1.31x slower (95% CI 1.22-1.40, floor 1.10)'; history shows z instead."""
    common: dict[str, Any] = {"fingerprint": "f", "workload": "w", "params": {}, "metric": "runtime_s", "floor": 1.1}
    ab = Verdict(verdict="regressed", ratio=1.31, ci_low=1.22, ci_high=1.40, **common)
    assert format_verdict(ab) == "1.31x slower (95% CI 1.22-1.40, floor 1.10)"
    memory = Verdict(
        **{**common, "metric": "peak_memory_bytes"}, verdict="improved", ratio=0.5, ci_low=0.4, ci_high=0.625
    )
    assert format_verdict(memory) == "2.00x less memory (95% CI 1.60-2.50, floor 1.10)"
    history = Verdict(verdict="regressed", ratio=1.31, score=6.24, baseline_values=(1.0,) * 20, **common)
    assert format_verdict(history) == "1.31x slower (z 6.2 vs 20 runs, floor 1.10)"


def test_an_interval_wider_than_half_to_double_is_too_noisy_to_tell(store: Store) -> None:
    """Four erratic A/B rounds: not "1.2x slower (95% CI 0.1-14)" but "too noisy to tell (4 rounds)", the
    interval in the row's note."""
    case, group = make_case("shuffle", size="small"), "ab-noisy"
    for number, b_runtime in enumerate((30.0, 4.0, 25.0, 5.0)):
        for offset, (side, runtime) in enumerate((("A", 10.0), ("B", b_runtime))):
            tags = {"ab_group": group, "ab_side": side, "ab_round": str(number)}
            add_results(store, add_run(store, 2 * number + offset, label=f"{group}-{side}{number}", tags=tags), case,
                        runtime, noise=(0.0,))  # fmt: skip
    comparison = compare_group(store, group)
    runtime = next(v for v in comparison.verdicts if v.metric == "runtime_s")
    assert runtime.verdict == "inconclusive" and runtime.ci_low is not None and runtime.ci_low < 0.5
    assert format_verdict(runtime) == "too noisy to tell (4 rounds)"
    table = format_table(comparison)
    row = next(line for line in table.splitlines() if "too noisy to tell (4 rounds) [" in line)
    number = row.rsplit("[", 1)[1].rstrip("]")
    note = " ".join(table.split()).split(f"[{number}] runtime: ")[1]  # the note, wrapped over lines
    assert note.split(" [")[0].count("95% CI") == 1 and "wider than 0.5x-2x after 4 rounds" in note, table


def sweep_store(store: Store, changed: dict[int, float], cases: int = 12) -> Run:
    """Three earlier runs of ``cases`` cases at 10 s (+-1%), a baseline ``main`` and a candidate
    in which case ``i`` takes ``10 * changed[i]`` s (the others 10 s); returns the baseline run."""
    made = [make_case(f"work{i:02d}", size="small") for i in range(cases)]
    for case in made:
        add_history(store, case, 10.0)
    base, cand = add_run(store, 1), add_run(store, 2)
    for index, case in enumerate(made):
        add_results(store, base, case, 10.0)
        add_results(store, cand, case, 10.0 * changed.get(index, 1.0))
    store.set_baseline("main", [base.run_id])
    return base


def test_table_leads_with_what_changed_and_counts_the_unchanged_in_one_line(store: Store) -> None:
    """One slower and one faster case of twelve: only their runtime rows are listed; the other
    22 verdicts are one count line; ``every_row`` lists all 24."""
    sweep_store(store, {3: 1.5, 7: 0.6})
    comparison = compare_runs(store)
    kinds = [v.verdict for v in comparison.verdicts]
    assert kinds.count("regressed") == kinds.count("improved") == 1 and kinds.count("unchanged") == 22
    lines = format_table(comparison).splitlines()
    rows = [line.split()[:2] for line in lines if line.startswith("  ") and not line.startswith("  verdict")]
    assert rows == [["improved", "runtime"], ["regressed", "runtime"]]  # the biggest effect first
    assert [line for line in lines if line.startswith("work")] == [
        "work07[size=small] local 2w/1t 4GiB sat=1.1 (2 slots)", "work03[size=small] local 2w/1t 4GiB sat=1.1 (2 slots)"
    ]  # fmt: skip
    assert "22 unchanged (daskbench compare --all shows every row)" in lines
    every = format_table(comparison, every_row=True).splitlines()
    assert sum(line.startswith("work") for line in every) == 12
    assert not any("shows every row" in line for line in every)
    assert sum(line.split()[:1] == ["unchanged"] for line in every) == 22


def test_compare_all_prints_every_row_and_json_keeps_every_verdict(
    store: Store, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare`` hides unchanged rows, ``compare --all`` prints them; ``--format json`` always has every verdict."""
    sweep_store(store, {0: 0.6})
    assert main(["compare", "--db", db]) == 0
    short = capsys.readouterr().out
    assert main(["compare", "--db", db, "--all"]) == 0
    full = capsys.readouterr().out
    assert short.count("\n  unchanged ") == 0 and full.count("\n  unchanged ") == 23
    assert "23 unchanged (daskbench compare --all shows every row)" in short and "shows every row" not in full
    assert main(["compare", "--db", db, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["verdicts"]) == 24 and data["summary"]["unchanged"] == 23


def test_regression_line_counts_plainly_and_never_cuts_a_figure(store: Store) -> None:
    """Many regressions: '3 regressions against main', the biggest named with whole figures, <= 120 columns."""
    case_of = {i: 1.5 + i / 10 for i in range(3)}
    sweep_store(store, case_of, cases=3)
    line = regression_summary(compare_runs(store))
    assert line.startswith("daskbench: 3 regressions against main (every one is in the output above); the biggest: ")
    assert "regression(s)" not in line and "more above" not in line and len(line) <= WIDTH
    long = Verdict(fingerprint="f", workload="w" * 60, params={"size": "small", "path": "p" * 30}, metric="runtime_s",
                   verdict="regressed", ratio=1.5, cluster={"backend": "local", "n_workers": 2,
                   "threads_per_worker": 1, "memory_per_worker": int(11.8 * 2**30), "worker_saturation": 1.1})  # fmt: skip
    cut = regression_summary(replace(compare_runs(store), verdicts=(long,)))
    assert len(cut) <= WIDTH and cut.endswith(" ...") and "11.8G" not in cut.replace("11.8GiB", "")


def test_baseline_of_many_runs_is_one_line_naming_a_few(store: Store) -> None:
    """A baseline of eight runs: the header names three, says how many more and where to see all."""
    case = make_case("shuffle", size="small")
    runs = [add_run(store, index, label=f"a-rather-long-label-{index}") for index in range(8)]
    for run in runs:
        add_results(store, run, case, 10.0)
    add_results(store, cand := add_run(store, 9), case, 10.0)
    store.set_baseline("main", [run.run_id for run in runs])
    table = format_table(compare_runs(store, candidate=cand.run_id))
    (line,) = [line for line in table.splitlines() if line.startswith("baseline:")]
    assert line == "baseline:  main (8 runs: run000-a, run001-a, run002-a and 5 more; all: --format json)"
    assert all(len(line) <= WIDTH for line in table.splitlines())


def test_an_ab_groups_baseline_lines_fit_and_name_a_few_of_its_runs(store: Store) -> None:
    """Eight interleaved rounds of ``daskbench ab``: side A's runs are three ids and a count, every line <= 120."""
    case, group = make_case("shuffle", size="small"), "ab-2026-01-01-120000-a-long-group-name"
    for number in range(8):
        for offset, side in enumerate("AB"):
            tags = {"ab_group": group, "ab_side": side, "ab_round": str(number)}
            add_results(
                store, add_run(store, 2 * number + offset, label=f"{group}-{side}{number}", tags=tags), case, 10.0
            )
    table = format_table(compare_group(store, group))
    assert all(len(line) <= WIDTH for line in table.splitlines())
    baseline = " ".join(table.split("baseline:")[1].split("\nsummary:")[0].split())
    assert baseline.endswith("side A (8 runs: run000-a, run002-a, run004-a and 5 more; all: --format json)")


def test_a_stored_groups_calibration_round_is_set_aside_only_when_its_runs_say_so(store: Store) -> None:
    """A wild first round of one call (3x), then 11 rounds of 8 calls about 1.0: a group whose sessions set the
    loops' calibration aside (tag ``ab_set_aside``) is judged on the 11 and is unchanged; an older group, untagged,
    judges the wild round with them, as it was judged when measured."""
    case, looped = make_case("shuffle", size="small"), [1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.0]
    calls = (1, *[8] * len(looped))
    add_lockstep_group(store, "new", [(case, [[3.0, *looped]])], calls=calls, tags={"ab_set_aside": "calibration"})
    add_lockstep_group(store, "old", [(case, [[3.0, *looped]])], calls=calls, first=10)
    new, old = (next(v for v in compare_group(store, g).verdicts if v.metric == "runtime_s") for g in ("new", "old"))
    assert (len(new.candidate_values), new.verdict) == (11, "unchanged")
    assert len(old.candidate_values) == 12 and old.verdict == "inconclusive"


def test_a_case_line_wider_than_the_table_wraps_between_whole_items(store: Store) -> None:
    """A case with long params and a config key: every item of its label is printed whole, within 120 columns."""
    spec = ClusterSpec("local", 2, 1, int(11.8 * 2**30), 1.1,
                       scheduler_config=(("distributed.worker.memory.target", "0.6"),))  # fmt: skip
    case = Case("a_workload_with_a_long_name", {"size": "small", "input": "s3://bucket/" + "x" * 50}, spec)
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 30.0)
    table = format_table(compare_runs(store, baseline=base.run_id))
    assert all(len(line) <= WIDTH for line in table.splitlines())
    assert "11.8GiB" in table and "memory.target=0.6" in table and "..." not in table


# -- baseline command --------------------------------------------------------------------------


def test_baseline_set_and_list(store: Store, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """baseline set resolves prefixes and prints the runs; baseline list shows it, also as JSON."""
    first, second = add_run(store, 1), add_run(store, 2)
    assert main(["baseline", "set", "main", first.run_id[:6], second.run_id, "--db", db]) == 0
    assert "baseline 'main' -> run001-n, run002-n" in capsys.readouterr().out
    assert main(["baseline", "list", "--db", db]) == 0
    assert "main  run001-n run002-n" in capsys.readouterr().out
    assert main(["baseline", "list", "--db", db, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"main": [first.run_id, second.run_id]}


def test_baseline_set_with_unknown_run_exits_2(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Naming a run that does not exist is exit 2 with the store's message."""
    Store(db).close()  # an existing store: `baseline` never creates one
    assert main(["baseline", "set", "main", "nosuchrun", "--db", db]) == 2
    assert "no run 'nosuchrun'" in capsys.readouterr().err


def test_memory_needs_less_history_than_time_to_be_called_unchanged(store: Store) -> None:
    """Without history, equal runs are unchanged on memory (3% assumed noise) but not on time (15%)."""
    case = make_case("shuffle", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 10.0)
    kinds = {v.metric: v.verdict for v in compare_runs(store, baseline=base.run_id).verdicts}
    assert kinds["peak_memory_above_idle_bytes"] == "unchanged"
    assert kinds["runtime_s"] == "inconclusive"


def test_an_ab_group_asked_about_a_metric_not_compared_by_default_judges_it_too(tmp_path: Path) -> None:
    """A lockstep group run with ``--metric task_cpu_s`` (tagged ``ab_metric``; bisect and confirm judge
    their steps by it): compare_group gives that metric a verdict though it is not among the compared
    ones, so a step is never 'no case measured on both sides with task_cpu_s'."""
    from daskbench.judge.compare import compare_group

    store = Store(f"sqlite:///{tmp_path / 'metric.db'}")
    case = make_case("wordcount")
    store.add_case(case)
    tags = {"ab_group": "g", "ab_round": "0", "ab_mode": "lockstep", "ab_max_rounds": "30", "ab_metric": "task_cpu_s"}
    a = add_run(store, 0, label="g-A1", tags={**tags, "ab_side": "A"})
    b = add_run(store, 1, label="g-B1", tags={**tags, "ab_side": "B"})
    for repeat in range(8):
        store.add_measurement(make_measurement(a, case, repeat, task_cpu_s=1.0 + 0.01 * (repeat % 3)))
        store.add_measurement(make_measurement(b, case, repeat, task_cpu_s=2.0 + 0.01 * (repeat % 2)))
    found = {v.metric: v.verdict for v in compare_group(store, "g").verdicts}
    assert found["task_cpu_s"] == "regressed" and "runtime_s" in found
