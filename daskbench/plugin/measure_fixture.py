"""The ``measure`` fixture's object: one benchmark test's measurements, their progress lines, and
their times handed to pytest-benchmark's table. The fixture itself is declared in `daskbench.plugin.fixtures`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from daskbench.clusters import OpenCluster
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError
from daskbench.flat import measurement_row
from daskbench.lockstep.turns import Turns
from daskbench.model import WRONG_RESULT, Case, Measurement
from daskbench.plugin import taking
from daskbench.plugin.measuring import call_once, failed_measurement, interrupted_measurement
from daskbench.plugin.state import DaskbenchSession
from daskbench.text import plural, saturation_text

#: The fields of a measurement's flat row (`daskbench.flat.measurement_row`, what ``show`` prints) handed to
#: pytest-benchmark's extra info (its --benchmark-json), of the last passed repeat.
EXTRA_INFO = ("peak_memory_bytes", "peak_worker_memory_bytes", "spilled_bytes", "cost_usd", "fingerprint")
#: What pytest-benchmark's table says measured a daskbench test.
MODE = "daskbench measure(...)"


def benchmark_fixture_of(request: pytest.FixtureRequest) -> Any:
    """pytest-benchmark's fixture to show our times in its table, or None.

    None when pytest-benchmark is absent (``-p no:benchmark``), skipping its benchmarks
    (``--benchmark-skip``: its fixture would skip this test) or disabled
    (``--benchmark-disable``): the daskbench measurement runs and is stored either way.
    """
    if not request.config.pluginmanager.has_plugin("benchmark"):
        return None
    bench_session = getattr(request.config, "_benchmarksession", None)
    if bench_session is None or getattr(bench_session, "skip", False) or getattr(bench_session, "disabled", False):
        return None
    with contextlib.suppress(pytest.FixtureLookupError):
        bench = request.getfixturevalue("benchmark")
        if bench.disabled:
            return None
        # Ours from now on: a case that measured nothing (skipped, failed before its first repeat) would
        # otherwise get pytest-benchmark's "Benchmark fixture was not used at all in this test!" warning.
        bench._mode = MODE
        return bench
    return None


@dataclass
class MeasureFixture:
    """What a test gets as ``measure``: it measures a target on the session's cluster (through the
    session's `Measurer`), writes the progress lines and records each repeat."""

    node: pytest.Item
    session: DaskbenchSession
    cluster: OpenCluster
    only_repeat: int | None
    benchmark: Any
    #: In a lockstep ``daskbench ab`` session: the link to the controller, and this case's key there.
    turns: Turns | None = None
    key: str = ""
    used: bool = False
    prepare_seconds: float | None = None
    #: The measured case's fingerprint once ``measure()`` returned with every repeat passed.
    returned: str | None = None

    def __repr__(self) -> str:  # a failing test's traceback shows this: keep it one short line
        return f"<daskbench measure of {self.node.name}>"

    @property
    def _cluster(self) -> OpenCluster:
        """The session's live cluster (a fresh one after a harness error), else the fixture's."""
        return taking.live_cluster(self.session, self.cluster)

    def prepare(self, fn: Callable[[], Any]) -> Any:
        """Run data preparation once, timed as the ``prepare`` phase; returns its value.

        For inputs the case's parameters depend on (their location, their size in bytes):
        ``tables = measure.prepare(lambda: inputs.prepare(...))``, then ``measure(...)``.
        """
        try:
            value, seconds = call_once(fn, self.session.settings.timeout)
        except TimeoutError as exc:  # nothing measured yet: the test fails with one line
            pytest.fail(f"timeout: {exc}; nothing measured", pytrace=False)
        self.prepare_seconds = (self.prepare_seconds or 0.0) + (seconds or 0.0)
        self.session.one_off_seconds += seconds or 0.0  # the time left is not extrapolated from input generation
        return value

    def __call__(
        self,
        target: Any,
        *,
        name: str | None = None,
        params: Mapping[str, Any] | None = None,
        prepare: Callable[[], Any] | None = None,
    ) -> Any:
        if self.used:
            raise DaskbenchError("measure() can be called once per test; parametrize the test for more cases")
        self.used = True
        case = Case(
            name or getattr(self.node, "originalname", self.node.name).removeprefix("test_"),
            dict(params or {}),
            self._cluster.spec,
            info={"test": self.node.nodeid},
        )
        phases = self._prepare(case, prepare)
        return self._run(case, target, taking.repeats(self.session, self.only_repeat, self.turns, self.key), phases)

    def _prepare(self, case: Case, prepare: Callable[[], Any] | None) -> dict[str, float]:
        phases = {"cluster_start": round(self._cluster.start_seconds, 6)}
        if prepare is not None:
            self.prepare(prepare)
        if self.prepare_seconds is not None:
            phases["prepare"] = self.prepare_seconds
        return phases

    def _run(self, case: Case, target: Any, repeats: Iterator[tuple[int, int]], phases: dict[str, float]) -> Any:
        results: list[Measurement] = []
        last: Any = None
        for repeat, loops in repeats:
            began = time.perf_counter()
            measurement, last = self._one(case, target, (repeat, loops), phases)
            results.append(measurement)
            taking.progress(self.node, self.session, case, measurement)
            if self.turns is not None:  # what it measured, and what the turn cost (stored and said included)
                self.turns.done(self.key, repeat, measurement, time.perf_counter() - began)
            if not measurement.ok:
                break
        if not results and self.turns is not None:  # the comparison gave this case no turn (its budget ended)
            pytest.skip("daskbench ab gave this case no turn in this part (its budget or deadline came first)")
        self._feed_pytest_benchmark(case, results)
        failed = [m for m in results if not m.ok]
        if failed:
            pytest.fail(
                shown_message(f"{failed[0].outcome}: {failed[0].message} (recorded in the store)"), pytrace=False
            )
        self.returned = case.fingerprint
        return last

    def flag_wrong_result(self, detail: str) -> None:
        """Mark this case's measurements in this run ``wrong-result`` and say so on the terminal."""
        store, run = self.session.ensure_run()
        assert self.returned is not None
        try:
            count = store.flag_measurements(run.run_id, self.returned, WRONG_RESULT, detail)
        except DaskbenchError as exc:  # the test has failed anyway; say what the store did not take
            taking.write(self.node, f"daskbench: could not record {self.node.name} as {WRONG_RESULT}: {exc}")
            return
        taking.write(
            self.node,
            f"daskbench: {plural(count, 'measurement')} of {self.node.name} recorded as {WRONG_RESULT}: {detail}",
        )

    def _one(self, case: Case, target: Any, turn: tuple[int, int], phases: dict[str, float]) -> tuple[Measurement, Any]:
        """One measurement, ``turn`` its repeat and how many calls of ``target`` it makes; stored."""
        (repeat, loops), measurer = turn, self.session.measurer
        assert measurer is not None
        taking.claim_or_fail(
            self.session, self.node, case, repeat, "give one of them another name= or params= in measure()"
        )
        extra = {
            "test": self.node.nodeid,
            "requested_saturation": saturation_text(taking.requested_saturation(self.node)),
        }
        busy = taking.shared_cluster_busy(self.session, self.cluster)
        if busy is not None and self.session.settings.allow_busy_cluster:  # told to: measured, and marked
            extra["shared_cluster_busy"] = busy
        elif busy is not None:  # another client's work would be in the figures: not measured, recorded
            measurement = failed_measurement(measurer.run_id, case, repeat, DaskbenchError(busy), phases)
            self.session.record(case, measurement)
            return measurement, None
        try:
            measurement, result = measurer.measure(
                case, repeat, target, phases, extra, taking.modules_to_preload(self.node), loops
            )
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM mid-measurement: the record says so, then pytest stops
            self.session.record(case, interrupted_measurement(measurer.run_id, case, repeat, phases))
            raise
        except Exception as exc:  # the cluster could not restart: a harness error, still recorded
            measurement, result = failed_measurement(measurer.run_id, case, repeat, exc, phases), None
            self.session.record(case, measurement)
            self.session.recover()
            return measurement, result
        self.session.record(case, measurement)
        return measurement, result

    def _feed_pytest_benchmark(self, case: Case, results: list[Measurement]) -> None:
        """Hand the measured compute-phase times to pytest-benchmark (its table, --benchmark-json).

        pytest-benchmark times a callable itself, which would put our restart and
        collectors inside its timer; instead its stats object is filled with the times we
        measured. ``_make_stats``/``_mode`` are its internals (stable since 3.x); if they
        are gone, pytest-benchmark simply shows nothing for daskbench tests.
        """
        bench = self.benchmark
        if bench is None or not hasattr(bench, "_make_stats"):
            return
        passed = [m for m in results if m.ok and m.runtime_s is not None]
        if not passed:
            return
        stats = bench._make_stats(1)
        for m in passed:
            stats.update(m.runtime_s)
        row = measurement_row(passed[-1], case)
        bench.extra_info.update({key: row[key] for key in EXTRA_INFO})
