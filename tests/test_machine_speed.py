"""A slower machine is not slower code: time verdicts between runs whose CPU probes differ beyond
the tolerance are set aside (inconclusive, both speeds named); memory verdicts stand."""

from __future__ import annotations

import pytest

from daskbench.judge import machine
from daskbench.judge.compare import compare_runs
from daskbench.store import Store
from daskbench.verdicts import Verdict
from tests.helpers import GIB, add_run, make_case, make_measurement


def _two_runs(
    store: Store,
    slower_code: float,
    probe: float,
    memory: float = 1.0,
    waiting: float = 0.0,
    cand_waiting: float | None = None,
) -> None:
    """Three baseline runs at probe 30 ms; a candidate whose runtime is ``slower_code`` x and whose probe is ``probe`` s;
    ``waiting`` is the share of each measurement's thread-seconds its tasks spent off the CPU (sleeping), the
    candidate's ``cand_waiting`` when given."""
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    sides = ((1.0, 0.030, 1.0), (1.01, 0.030, 1.0), (0.99, 0.030, 1.0), (slower_code, probe, memory))
    for index, (factor, seconds, mem) in enumerate(sides):
        run = add_run(store, index)
        for repeat in range(3):
            runtime = factor * (1.0 + 0.01 * repeat)
            waited = cand_waiting if index == 3 and cand_waiting is not None else waiting
            breakdown = {"time_breakdown": {"compute-noncpu": waited * runtime}, "thread_seconds": runtime}
            store.add_measurement(make_measurement(run, case, repeat, runtime_s=runtime, cost_usd=runtime / 100,
                                                   cpu_probe_s=seconds, peak_memory_bytes=int(2 * GIB * mem),
                                                   extra=breakdown))  # fmt: skip
    store.set_baseline("main", ["run000-nightly", "run001-nightly", "run002-nightly"])


def _by_metric(store: Store) -> dict[str, Verdict]:
    return {v.metric: v for v in compare_runs(store, candidate="run003-nightly").verdicts}


def test_a_candidate_on_a_1_3x_slower_machine_is_not_a_regression_of_the_code(store: Store) -> None:
    _two_runs(store, slower_code=1.3, probe=0.039, memory=1.5)
    found = _by_metric(store)
    assert found["runtime_s"].verdict == "inconclusive" and found["cost_usd"].verdict == "inconclusive"
    assert (
        "the machine was 1.30x slower during the candidate (CPU probe 39.0 ms against 30.0 ms)"
        in found["runtime_s"].note
    )
    assert found["peak_memory_above_idle_bytes"].verdict == "regressed"  # memory does not depend on the CPU's speed


def test_the_same_machine_speed_leaves_a_real_slowdown_regressed(store: Store) -> None:
    _two_runs(store, slower_code=1.3, probe=0.031)
    assert _by_metric(store)["runtime_s"].verdict == "regressed"


def test_the_guard_needs_both_speeds_and_names_a_faster_machine() -> None:
    assert machine.guard([], [], []) == ([], [])
    assert machine.speed_note(0.040, 0.030).startswith("the machine was 1.33x faster during the candidate")


def test_a_slowdown_on_a_faster_machine_or_beyond_what_the_machine_explains_stands(store: Store) -> None:
    """Code 3x slower while the machine was 1.38x faster (probe 21.7 ms): the machine cannot be why."""
    _two_runs(store, slower_code=3.0, probe=0.0217)
    assert _by_metric(store)["runtime_s"].verdict == "regressed"


def test_a_slowdown_far_beyond_a_slightly_slower_machine_stands(store: Store) -> None:
    """Code 3x slower on a 1.2x slower machine: 3 / 1.2 still clears the floor."""
    _two_runs(store, slower_code=3.0, probe=0.036)
    assert _by_metric(store)["runtime_s"].verdict == "regressed"


def test_a_load_during_one_case_only_sets_that_cases_time_aside_and_leaves_a_real_slowdown_regressed(
    store: Store,
) -> None:
    """The run-level speeds match (most cases ran on a quiet machine), but one case's measurements
    ran 3x slower with its own probe 3x slower: that case is the machine's; another case 3x slower
    at the usual probe is the code's."""
    cases = [make_case("wordcount", n_workers=1, size=size) for size in ("a", "b", "c", "d", "e")]
    for case in cases:
        store.add_case(case)
    for index in range(4):
        run = add_run(store, index)
        for case in cases:
            loaded = index == 3 and case is cases[0]
            slow = 3.0 if index == 3 and case in (cases[0], cases[1]) else 1.0
            for repeat in range(3):
                runtime = slow * (1.0 + 0.01 * repeat)
                store.add_measurement(make_measurement(run, case, repeat, runtime_s=runtime, cost_usd=runtime / 100,
                                                       cpu_probe_s=0.090 if loaded else 0.030))  # fmt: skip
    store.set_baseline("main", ["run000-nightly", "run001-nightly", "run002-nightly"])
    comparison = compare_runs(store, candidate="run003-nightly")
    runtime = {v.params["size"]: v for v in comparison.verdicts if v.metric == "runtime_s"}
    assert runtime["a"].verdict == "inconclusive" and "3.00x slower during the candidate" in runtime["a"].note
    assert runtime["b"].verdict == "regressed"
    assert any("2 time verdicts the speed during its case could explain" in note for note in comparison.notes)


def test_a_sleeping_case_made_slower_on_a_slower_machine_is_the_codes() -> None:
    """A case whose tasks sleep 97% of the time: a 1.36x slower CPU can stretch only the other 3%,
    so a 1.42x slowdown is not the machine's (the e2e workload of test_regression_e2e, planted)."""
    assert machine.reach(1.36, share=0.03) < 1.03
    assert machine.reach(1.36) == 1.36**machine.CONTENTION_EXPONENT


def test_the_cpu_share_is_the_time_not_spent_waiting_inside_tasks(store: Store) -> None:
    run, case = add_run(store, 0), make_case("wordcount")
    sleeping = make_measurement(run, case, extra={"time_breakdown": {"compute-noncpu": 0.9}, "thread_seconds": 1.0})
    unknown = make_measurement(run, case)
    assert round(machine.cpu_share([sleeping]), 6) == 0.1
    assert machine.cpu_share([unknown]) == 1.0  # older runs without a breakdown: the whole time may stretch


def test_a_slowdown_of_sleeping_tasks_on_a_slower_machine_stands(store: Store) -> None:
    _two_runs(store, slower_code=1.4, probe=0.041, waiting=0.97)
    assert _by_metric(store)["runtime_s"].verdict == "regressed"


def test_the_same_slowdown_of_cpu_bound_tasks_on_that_machine_is_set_aside(store: Store) -> None:
    _two_runs(store, slower_code=1.4, probe=0.041, waiting=0.0)
    assert _by_metric(store)["runtime_s"].verdict == "inconclusive"


def test_a_short_case_starved_beyond_its_probe_is_set_aside_when_its_time_moved_to_waiting(store: Store) -> None:
    """As .ci/run 42's word count (interval 4.65-10.69x while the probe read 1.66x slower): 4.5x slower, its tasks'
    CPU share down from 0.9 to 0.44 (waiting for a core reads as waiting). The probe alone reaches 2.58x, too little;
    with the time that moved to waiting, the machine's too, 4.78x."""
    _two_runs(store, slower_code=4.5, probe=0.0498, waiting=0.1, cand_waiting=0.56)
    found = _by_metric(store)["runtime_s"]
    assert found.verdict == "inconclusive" and "1.66x slower during the candidate" in found.note


def test_the_same_starving_with_the_cpu_share_unchanged_stands(store: Store) -> None:
    _two_runs(store, slower_code=4.5, probe=0.0498, waiting=0.1)
    assert _by_metric(store)["runtime_s"].verdict == "regressed"


def test_the_reach_grows_by_the_share_moved_to_waiting_in_the_machines_direction(store: Store) -> None:
    assert machine.reach(1.66, 0.9, waited=0.46) == pytest.approx(machine.reach(1.66, 0.9) / 0.54)
    assert machine.reach(1 / 1.66, 0.9, waited=0.46) == pytest.approx(machine.reach(1 / 1.66, 0.9) * 0.54)
    assert machine.reach(2.0, waited=1.0) == pytest.approx(4.0 / (1 - machine.MOST_MOVED))  # bounded
    run, case = add_run(store, 0), make_case("wordcount")
    computing, waiting = ([make_measurement(run, case, extra={"time_breakdown": {"compute-noncpu": w},
                                                              "thread_seconds": 1.0})] for w in (0.1, 0.56))  # fmt: skip
    assert machine.moved(computing, waiting) == pytest.approx(0.46)
    assert machine.moved(waiting, computing) == 0.0  # the slower side computed more: nothing moved
    assert machine.moved(computing, [make_measurement(run, case)]) == 0.0  # not broken down: unknown, none


def test_the_database_takes_the_same_median_cpu_probe_as_machine_speed(store: Store) -> None:
    """`Store.metric_medians` (what ``daskbench runs`` shows) is `machine.speed` of the run's measurements: odd and
    even counts (the mean of the middle two), zero probes left out, a run without probes absent."""
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    probes = {0: (0.05, 0.03, 0.04), 1: (0.02, 0.10, 0.0, 0.06, 0.04), 2: (0.0,)}
    for index, values in probes.items():
        run = add_run(store, index)
        for repeat, seconds in enumerate(values):
            store.add_measurement(make_measurement(run, case, repeat, cpu_probe_s=seconds))
    ids = [f"run{index:03d}-nightly" for index in probes]
    medians = store.metric_medians(ids, "cpu_probe_s")
    expected = {run_id: machine.speed(store.measurements([run_id])) for run_id in ids}
    assert medians == {run_id: value for run_id, value in expected.items() if value is not None}
    assert medians == pytest.approx({"run000-nightly": 0.04, "run001-nightly": 0.05})
    assert store.metric_medians(None, "cpu_probe_s") == medians  # every run of the store, in one query
