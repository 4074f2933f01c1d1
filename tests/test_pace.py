"""A session's time estimate (`daskbench.plugin.pace`): the figure measured on this project's machine or the
store's own history, scaled to how fast this machine runs now (its CPU probe, its load), and the time left
re-estimated from what the session has measured. Planted answers, and one reading of real busy loops; no call
here is timed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from daskbench.metrics import probe
from daskbench.model import Measurement
from daskbench.plugin import pace
from daskbench.plugin.pace import Conditions
from daskbench.store import Store
from tests.helpers import HOST, add_results, add_run, cpu_load, make_case

#: This project's machine, quiet, as the documented figures were measured.
QUIET = Conditions(0.022, 1.0, 2)


@pytest.mark.parametrize(("probe", "expected"), [(0.022, 16.4), (0.044, 32.8), (0.011, 8.2)])
def test_an_estimate_without_history_is_the_documented_figure_scaled_by_the_probe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, probe: float, expected: float
) -> None:
    """16.4 s a measurement at small, measured with the probe at 22 ms: a machine as quiet whose probe reads
    44 ms (twice as slow) plans 32.8 s, one at 11 ms 8.2 s; the basis says which figure and which factor."""
    monkeypatch.setattr(pace, "DOCUMENTED", {"small": (16.4, 0.022)})
    now = Conditions(probe, 1.0, 2)
    found = pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "small", "AMD EPYC", now, 2)
    assert found is not None and found.seconds_each == pytest.approx(expected)
    assert found.basis == (
        f"16.4 s a measurement at small as documented, x{probe / 0.022:.1f} by CPU probe {probe * 1000:.0f} ms (was 22)"
    )
    assert pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "medium", "AMD EPYC", now, 2) is None


def test_a_suite_of_its_own_gets_no_documented_estimate(tmp_path: Path) -> None:
    """documented=False (every selected test measured as a whole): no history, no estimate."""
    assert pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "small", "AMD EPYC", QUIET, 2, documented=False) is None


@pytest.mark.parametrize(
    ("load", "cores", "demand", "expected"), [(0.0, 2, 2, 1.0), (1.0, 2, 2, 1.5), (6.0, 2, 2, 4.0), (6.0, 8, 2, 1.0)]
)
def test_contention_is_the_load_and_the_sessions_own_workers_over_the_cores(
    load: float, cores: int, demand: float, expected: float
) -> None:
    """(load + demand) / cores, never below 1: an idle 2-core machine running 2 workers is not contended,
    load 6 makes it 4 times over; 8 cores take the same load in their stride."""
    assert pace.contention(load, cores, demand) == pytest.approx(expected)


def test_a_busier_machine_scales_by_its_contention_not_by_the_probe() -> None:
    """Load 6 on 2 cores against the documented load 1, a session of 2 workers: (6+2)/2 over (1+2)/2 = 2.67x,
    whatever the probe read (it read 12x at load 15 where the contention said 8x)."""
    factor, why = pace.slowdown(Conditions(0.264, 6.0, 2), QUIET, 2)
    assert factor == pytest.approx(8 / 3) and why == "for load 6.0 on 2 cores (was 1.0)"


def test_tiny_sessions_slow_with_the_square_of_the_contention(tmp_path: Path) -> None:
    """At tiny a measurement is restarts and round trips between processes, each waiting for a core: load 6
    on 2 cores (2 workers) is 8/3 the documented contention, so 0.65 s x (8/3)^2 = 4.6 s a measurement."""
    found = pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "tiny", "AMD EPYC", Conditions(0.05, 6.0, 2), 2)
    assert found is not None and found.seconds_each == pytest.approx(0.65 * (8 / 3) ** 2)
    assert found.basis == "0.65 s a measurement at tiny as documented, x7.1 for load 6.0 on 2 cores (was 1.0, squared)"


def test_a_machine_no_busier_than_then_scales_by_its_probe_alone() -> None:
    """Quieter than then (load 0.2 against 1), or a load unknown on either side: the probe's ratio."""
    assert pace.slowdown(Conditions(0.033, 0.2, 2), QUIET, 2) == (pytest.approx(1.5), "by CPU probe 33 ms (was 22)")
    assert pace.slowdown(Conditions(0.044, None, 2), QUIET, 2)[0] == pytest.approx(2.0)
    assert pace.slowdown(Conditions(0.044, 9.0, 2), Conditions(0.022, None, None), 2)[0] == pytest.approx(2.0)
    assert pace.slowdown(Conditions(None, None, None), QUIET, 2) == (1.0, "(this machine's speed unknown)")


def test_the_history_estimate_is_scaled_from_the_conditions_its_runs_recorded(tmp_path: Path) -> None:
    """Two finished runs of small on this CPU, 30 min for 10 measurements each (180 s a measurement), recorded
    at load 1 on 2 cores: now at load 5 a session of 2 workers plans (5+2)/(1+2) x 180 = 420 s."""
    db = f"sqlite:///{tmp_path / 'history.db'}"
    store = Store(db)
    host = {**HOST, "cores": 2, pace.LOAD_KEY: 1.0, pace.PROBE_KEY: 0.022}
    for index in (1, 2):
        case = make_case("ocean_anomaly", size="small")
        add_results(store, add_run(store, index, host=host), case, 1.0, noise=(0.0,) * 10)
    store.close()
    found = pace.estimate(db, "small", str(HOST["cpu_model"]), Conditions(0.022, 5.0, 2), 2)
    assert found is not None and found.seconds_each == pytest.approx(420.0)
    assert found.basis == "180 s a measurement in the last 2 runs of small here, x2.3 for load 5.0 on 2 cores (was 1.0)"


def test_the_history_is_scaled_from_the_load_its_measurements_read_not_the_lagging_one_at_its_start(
    tmp_path: Path,
) -> None:
    """The runs' host records say load 1 (read as the session began: a minute's average lags load that had just
    come), their measurements read 5 while they measured: now at load 5 the plan is their 180 s a measurement
    unscaled (measure/estimate-error under load, 2026-11-28: said 240 s for a session of 85 s)."""
    db = f"sqlite:///{tmp_path / 'history.db'}"
    store = Store(db)
    host = {**HOST, "cores": 2, pace.LOAD_KEY: 1.0, pace.PROBE_KEY: 0.022}
    case = make_case("ocean_anomaly", size="small")
    store.add_case(case)
    for index in (1, 2):
        run = add_run(store, index, host=host)
        for repeat in range(10):
            measured = Measurement.of(run_id=run.run_id, fingerprint=case.fingerprint, repeat=repeat,
                                      outcome="passed", runtime_s=1.0, extra={pace.LOAD_KEY: 5.0})  # fmt: skip
            store.add_measurement(measured)
    store.close()
    found = pace.estimate(db, "small", str(HOST["cpu_model"]), Conditions(0.022, 5.0, 2), 2)
    assert found is not None and found.seconds_each == pytest.approx(180.0)
    assert found.basis.startswith("180 s a measurement in the last 2 runs of small here, x1.0 ")


def test_what_a_run_records_of_its_conditions_is_what_the_history_reads_back() -> None:
    assert pace.recorded(Conditions(0.02213, 3.456, 2)) == {pace.LOAD_KEY: 3.456, pace.PROBE_KEY: 0.0221}
    assert pace.recorded(Conditions(0.022, None, 2)) == {pace.PROBE_KEY: 0.022}


@pytest.mark.parametrize(
    ("done", "elapsed", "each", "expected"),
    [
        (0, 0.0, 5.0, 50.0),  # nothing measured: the estimate, 10 x 5 s
        (1, 10.0, 100.0, 9 * 10**1.5),  # an estimate 10x high: sqrt(100 x 10) = 31.6 s each, 3.2x off
        (9, 90.0, 100.0, 10**1.1),  # after nine: 100^0.1 x 10^0.9 = 12.6 s each, 1.3x off
        (5, 50.0, 10.0, 50.0),  # an estimate that holds stays
        (2, 4.0, None, 16.0),  # no estimate: the session's own pace, 2 s each
    ],
)
def test_the_time_left_moves_from_the_estimate_to_the_sessions_own_pace(
    done: int, elapsed: float, each: float | None, expected: float
) -> None:
    """Of 10 measurements: the per-measurement pace is the geometric mean of the estimate (weight 1) and
    the session's own (weight ``done``), times the measurements left."""
    assert pace.time_left(done, 10, elapsed, each) == pytest.approx(expected)


def test_nothing_is_said_of_the_time_left_before_any_pace_is_known() -> None:
    assert pace.time_left(0, 10, 0.0, None) is None
    assert pace.pace(0, 10, 0.0) == "0/10 measured"
    assert pace.pace(1, 10, 100.0, 100.0) == "1/10 measured, about 15 min left"
    assert pace.pace(10, 10, 100.0, 1.0) == "10/10 measured"


def test_the_runnable_processes_are_read_from_proc_stat_without_the_reader(tmp_path: Path) -> None:
    """``procs_running 5`` counts the process reading it: 4 others. A file without the line says nothing."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3 4\nctxt 99\nprocs_running 5\nprocs_blocked 0\n")
    assert probe.runnable_others(stat) == 4
    stat.write_text("cpu  1 2 3 4\n")
    assert probe.runnable_others(stat) is None
    assert probe.runnable_others(tmp_path / "absent") is None


@pytest.mark.parametrize(
    ("average", "runnable", "expected"),
    [(1.5, [4, 4, 5], 4), (5.2, [1, 0, 2], 5.2), (None, [3, 1, 2], 2), (1.0, [], 1.0), (None, [], None)],
)
def test_the_load_planned_with_is_the_average_or_the_runnable_now_whichever_is_more(
    average: float | None, runnable: list[int], expected: float | None
) -> None:
    """Four busy loops started 20 s ago: the 1-minute average still reads 1.5, the runnable processes 4-5; the
    estimate plans with 4 (the median). Load that just left: the average's 5.2 stands."""
    assert pace.busiest(average, runnable) == expected


def test_a_header_sees_load_that_began_seconds_before_it() -> None:
    """Four busy loops started two seconds before `pace.current()`: the load it reads is at least 3 (the four,
    less one that may be waiting to be counted), where the 1-minute average has seen only a few percent of them.
    The loops run at nice 19: runnable all the same, they leave a timed test beside this one its cores."""
    with cpu_load(4, nice=19):
        time.sleep(2)
        now = pace.current()
    assert now.load is not None and now.load >= 3, now
