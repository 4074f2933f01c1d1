"""A suite written for another harness, brought as it is (issue 42): tests that take a client fixture named in
``client-fixtures`` and compute are measured as a whole on daskbench's cluster, end to end on real local
clusters: the example folder docs/workloads-and-metrics.md shows, outcomes and repeats, and a lockstep A/B."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from daskbench.model import Case, Measurement
from daskbench.plugin import pace
from daskbench.plugin.whole import WholeTest, checked
from daskbench.store import Store
from tests.helpers import LOCKSTEP_SESSION, make_case, make_measurement, make_run, run_ab, run_pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "existing-suite"
#: The example's command, as docs/workloads-and-metrics.md shows it (one cluster setting, so it is quick).
EXAMPLE_ARGS = ("-m", "benchmark", "--workers", "1", "--saturation", "inf")
PYPROJECT = '[tool.daskbench]\nclient-fixtures = ["small_client"]\n'
OUTCOMES = """
import os

import dask
import pytest


def test_passes(small_client):
    assert small_client.submit(sum, [1, 2]).result() == 3


def test_checks(small_client):
    assert small_client.submit(sum, [1, 2]).result() == 4


def test_breaks(small_client):
    small_client.submit(divmod, 1, 0).result()


def test_skips(small_client):
    pytest.skip("nothing to measure here")


@pytest.mark.parametrize("n", [2])
def test_sized(small_client, size, n):
    assert small_client.submit(sum, range(n)).result() == 1


@pytest.mark.benchmark  # a measure() test is marked, as ever
def test_measures_a_part(measure, small_client):
    assert small_client.submit(sum, [1]).result() == 1
    assert measure(dask.delayed(sum)([1, 2]), name="part", params={}) == 3


def test_not_a_benchmark():
    pass
"""
#: A conftest.py of the suite's own that defines small_client: its tests keep that fixture, unmeasured.
OWN_CONFTEST = """
import pytest


@pytest.fixture
def small_client():
    return "the suite's own"
"""
OWN_TEST = """
def test_own(small_client):
    assert small_client == "the suite's own"
"""


def _whole_test(timeout: float) -> WholeTest:
    session: Any = SimpleNamespace(settings=SimpleNamespace(timeout=timeout))
    return WholeTest(node=None, session=session, cluster=None, repeat=0)  # type: ignore[arg-type]


def test_a_whole_test_is_timed_as_a_target_and_judged_by_the_same_rules() -> None:
    """The body's seconds are the compute phase; past --timeout (the body is never cut short) it is a timeout;
    a failed check is no failed compute; any other error is the compute's."""
    passed = _whole_test(900).attempt(None, 12.5)
    assert passed.error is None and passed.phases == {"compute": 12.5}
    late = _whole_test(900).attempt(None, 1000.0).error
    assert isinstance(late, TimeoutError) and str(late) == "the test ran 1000 s, past --timeout 900 s"
    assert _whole_test(900).attempt(AssertionError("assert 3 == 4"), 1.0).error is None
    broken = ZeroDivisionError("division by zero")
    assert _whole_test(900).attempt(broken, 1.0).error is broken


def test_a_check_that_failed_after_the_work_ran_makes_a_passed_measurement_a_wrong_result() -> None:
    run, case = make_run(), make_case()
    measurement = make_measurement(run, case)
    wrong = checked(measurement, AssertionError("assert 3 == 4"))
    assert (wrong.outcome, wrong.message) == ("wrong-result", "AssertionError: assert 3 == 4")
    assert wrong.runtime_s == measurement.runtime_s is not None  # the work ran to its end: its runtime is kept
    assert checked(measurement, None) is measurement
    lost = make_measurement(run, case, outcome="worker-lost", message="1 worker died")
    assert checked(lost, AssertionError("x")) is lost


def test_a_bad_client_fixtures_value_stops_only_a_benchmark_session(tmp_path: Path) -> None:
    """DASKBENCH_CLIENT_FIXTURES=small-client: plain pytest runs the project's tests as if daskbench were not
    there; `pytest -m benchmark` stops in one line naming the variable, before anything starts."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    env = {"DASKBENCH_CLIENT_FIXTURES": "small-client"}
    plain = run_pytest(tmp_path, "-q", env=env)
    assert plain.returncode == 0 and "1 passed" in plain.stdout, plain.stdout + plain.stderr
    stopped = run_pytest(tmp_path, "-m", "benchmark", env=env)
    assert stopped.returncode == 4
    assert "DASKBENCH_CLIENT_FIXTURES: 'small-client' is not a fixture name" in stopped.stderr
    assert "Traceback" not in stopped.stdout + stopped.stderr


def _run_of(db: str) -> tuple[dict[str, Case], list[Measurement]]:
    store = Store(db)
    measurements = store.measurements([store.latest_run().run_id])
    return store.cases({m.fingerprint for m in measurements}), measurements


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, subprocess.CompletedProcess[str]]:
    """The example folder, copied as it is, run with the documented command into a store of its own."""
    folder = tmp_path_factory.mktemp("example") / "existing-suite"
    shutil.copytree(EXAMPLE, folder)
    db = f"sqlite:///{folder / 'results.db'}"
    return db, run_pytest(folder, *EXAMPLE_ARGS, "--db", db, timeout=900)


def test_the_example_suite_runs_unchanged_and_each_test_is_a_case_in_the_store(
    example: tuple[str, subprocess.CompletedProcess[str]],
) -> None:
    """Every test of examples/existing-suite (array, dataframe, futures, work stealing; no daskbench import in
    them) passes under `pytest -m benchmark` and is one case, named after its function, its parametrize
    values as params, measured as a whole with the collectors' memory figures."""
    db, result = example
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    cases, measurements = _run_of(db)
    named = sorted((case.workload, sorted(case.params.items())) for case in cases.values())
    assert named == [("chained_futures", []), ("filter", []), ("groupby_mean", [("split_out", 1)]),
                     ("groupby_mean", [("split_out", 2)]), ("many_futures", []), ("single_future", []),
                     ("sum_of_squares", []), ("transpose_mean", []), ("uneven_tasks", [])]  # fmt: skip
    assert {m.outcome for m in measurements} == {"passed"} and len(measurements) == 9
    assert all(m.runtime_s is not None and m.runtime_s > 0 and m.peak_worker_memory_bytes for m in measurements)
    assert all(m.extra["measured"] == "whole test" and "restart" in m.phases for m in measurements)
    assert "daskbench: uneven_tasks w=1" in result.stdout and "9 measurements stored" in result.stdout


def test_a_suite_of_its_own_gets_no_estimate_from_the_bundled_suites_figures(
    example: tuple[str, subprocess.CompletedProcess[str]],
) -> None:
    """The documented seconds a measurement are the bundled workloads': the header of a whole-test suite
    without history says the progress lines will tell the time left instead; the run records the load and CPU
    probe it planned at, for later sessions to scale their history from."""
    db, result = example
    assert "daskbench: 9 measurements planned; each progress line says the time left" in result.stdout
    host = Store(db).latest_run().host
    assert host[pace.LOAD_KEY] >= 0 and host[pace.PROBE_KEY] > 0


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, subprocess.CompletedProcess[str]]:
    """A suite of every outcome, with a folder whose conftest.py defines small_client itself, at --repeat 2."""
    folder = tmp_path_factory.mktemp("outcomes")
    (folder / "pyproject.toml").write_text(PYPROJECT)
    (folder / "test_outcomes.py").write_text(OUTCOMES)
    (folder / "own").mkdir()
    (folder / "own" / "conftest.py").write_text(OWN_CONFTEST)
    (folder / "own" / "test_own.py").write_text(OWN_TEST)
    db = f"sqlite:///{folder / 'results.db'}"
    return db, run_pytest(folder, *EXAMPLE_ARGS, "--repeat", "2", "--size", "tiny", "--db", db, timeout=900)


def test_each_repeat_of_a_whole_test_is_a_test_call_of_its_own(
    outcomes: tuple[str, subprocess.CompletedProcess[str]],
) -> None:
    """--repeat 2: a whole test is collected once per repeat (ids ending -r0, -r1), each measured once; a
    test that calls measure keeps its repeats inside one call and measures only what it gives measure."""
    db, result = outcomes
    assert result.stdout.count("daskbench: passes w=1") == 2
    cases, measurements = _run_of(db)
    by_name = {case.workload: fingerprint for fingerprint, case in cases.items()}
    assert sorted(m.repeat for m in measurements if m.fingerprint == by_name["passes"]) == [0, 1]
    assert sorted(m.repeat for m in measurements if m.fingerprint == by_name["part"]) == [0, 1]
    assert "measures_a_part" not in by_name and "not_a_benchmark" not in result.stdout


def test_a_whole_test_outcome_is_read_as_measure_reads_a_target(
    outcomes: tuple[str, subprocess.CompletedProcess[str]],
) -> None:
    """A failed assert after the work ran is wrong-result (its runtime kept, never judged), an error in the
    work failed, a test that skipped itself measured nothing; the failing tests fail in pytest too."""
    db, result = outcomes
    cases, measurements = _run_of(db)
    seen = {(cases[m.fingerprint].workload, m.repeat): m for m in measurements}
    assert {seen["checks", r].outcome for r in (0, 1)} == {"wrong-result"}
    assert seen["checks", 0].runtime_s is not None and "assert 3 == 4" in seen["checks", 0].message
    assert {seen["breaks", r].outcome for r in (0, 1)} == {"failed"} and "ZeroDivisionError" in seen[
        "breaks", 0
    ].message
    assert "skips" not in {case.workload for case in cases.values()}
    assert dict(cases[seen["sized", 0].fingerprint].params) == {"n": 2, "size": "tiny"}
    assert "4 failed" in result.stdout and "2 skipped" in result.stdout, result.stdout[-1500:]


def test_a_client_fixture_the_suite_defines_itself_is_left_to_it_and_named_in_the_header(
    outcomes: tuple[str, subprocess.CompletedProcess[str]],
) -> None:
    """own/conftest.py's small_client wins over daskbench's (pytest's rule): that test is no benchmark, and
    the header says why it was not measured and how to measure it."""
    _, result = outcomes
    assert "daskbench: small_client is defined in own/conftest.py, which wins over daskbench's" in result.stdout
    assert "test_own" not in result.stdout


LOCKSTEP_SUITE = """
import os


def test_steady(small_client):
    assert small_client.submit(sum, [1, 2]).result() == 3


def test_checked_on_b(small_client):
    assert small_client.submit(sum, [1, 2]).result() == 3 and not os.environ.get("SUITE_BREAK")
"""


def test_whole_tests_take_turns_in_lockstep_and_a_case_ended_early_skips_its_later_rounds(tmp_path: Path) -> None:
    """daskbench ab --rounds 3 over whole tests: each round of a case is a test call of its own, in turn
    with the other side; the case side B finds wrong in round 1 ends there on both sides (their later
    rounds skipped without asking), and the steady case gets its 3 rounds."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "test_lockstep_suite.py").write_text(LOCKSTEP_SUITE)
    db = f"sqlite:///{tmp_path / 'ab.db'}"
    done = run_ab(tmp_path, db, "--group", "whole", "--rounds", "3", "--b-env", "SUITE_BREAK=1", *LOCKSTEP_SESSION)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "side B wrong-result in round 1" in done.stderr
    store = Store(db)
    for run in store.runs():
        measured = store.measurements([run.run_id])
        cases = store.cases({m.fingerprint for m in measured})
        counts = {
            name: sum(cases[m.fingerprint].workload == name for m in measured) for name in ("steady", "checked_on_b")
        }
        assert counts == {"steady": 3, "checked_on_b": 1}, (run.tags["ab_side"], counts)
    verdicts = {v["workload"] for v in json.loads(done.stdout)["verdicts"]}
    assert "steady" in verdicts
