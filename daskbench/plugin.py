"""The pytest plugin: options, the sweep, one cluster per spec, and the ``measure`` fixture.

Every test that uses ``measure`` is parametrized over worker-saturation x cluster size
through a session-scoped fixture, so pytest groups the tests of one cluster spec and
starts each cluster once. State for the session lives in one `DaskbenchSession` kept in
``config.stash``. Bad settings stop the session with one line before any cluster starts.

Installed, the plugin loads in every pytest run (entry point ``pytest11``), so it stays
out of the way until it is used: settings are resolved only when a daskbench option is
given or a collected test uses a daskbench fixture, and only such runs get the header
line and the summary section.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from daskbench import config as cfg
from daskbench.clusters import OpenCluster, backend_named, backend_of
from daskbench.clusters.common import busy_message, wait_until_idle
from daskbench.errors import DaskbenchError
from daskbench.measure import call_once, failed_measurement
from daskbench.metrics.cost import load_prices
from daskbench.model import INTERRUPTED, SELECT_K, SELECT_M, WRONG_RESULT, Case, ClusterSpec, Measurement, now_iso
from daskbench.redact import redact_url
from daskbench.session import DaskbenchSession
from daskbench.text import compact_bytes, config_key_short, format_bytes, saturation_text, slots_text

SESSION_KEY = pytest.StashKey["DaskbenchSession"]()
#: A settings error found while collecting, raised only if a daskbench test is selected.
ERROR_KEY = pytest.StashKey[DaskbenchError]()
#: Whether any collected test (selected or not) uses a daskbench fixture.
SEEN_KEY = pytest.StashKey[bool]()
#: The test's `_Measure`, so its report can mark a result the test itself found wrong.
MEASURE_KEY = pytest.StashKey["_Measure"]()
#: Node ids that wrote daskbench progress lines: pytest's own ``.``/``F`` for them is dropped.
QUIET_KEY = pytest.StashKey[set[str]]()
#: Terminal width every daskbench line fits in.
_COLUMNS = 120


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("daskbench", "daskbench: Dask benchmarks (pytest -m benchmark)")
    cfg.add_options(group.addoption)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; resolve the settings now only if a daskbench flag was given."""
    config.addinivalue_line("markers", "benchmark: a daskbench benchmark (run with pytest -m benchmark)")
    if any(value is not None for value in _flags(config).values()):
        _require_state(config)


def _flags(config: pytest.Config) -> dict[str, Any]:
    return {option.name: config.getoption("daskbench_" + option.name) for option in cfg.OPTIONS}


def _state(config: pytest.Config) -> DaskbenchSession:
    """The session state, its settings resolved on first use; raises `DaskbenchError` on a bad value."""
    if SESSION_KEY in config.stash:
        return config.stash[SESSION_KEY]
    if ERROR_KEY in config.stash:
        raise config.stash[ERROR_KEY]
    try:
        settings = cfg.resolve(_flags(config), pyproject=cfg.load_pyproject(config.rootpath))
        state = DaskbenchSession(settings, backend_of(settings.cluster), load_prices(settings.prices))
    except DaskbenchError as exc:
        config.stash[ERROR_KEY] = exc
        raise
    state.selection = _selection(config)
    config.stash[SESSION_KEY] = state
    return state


def _selection(config: pytest.Config) -> dict[str, str]:
    """``-k``/``-m`` as run tags; plain ``-m benchmark`` selects every benchmark, so it is no subset."""
    keyword = (config.getoption("keyword", "") or "").strip()
    marks = (config.getoption("markexpr", "") or "").strip()
    found = {SELECT_K: keyword} if keyword else {}
    return found | ({SELECT_M: marks} if marks and marks != "benchmark" else {})


def _require_state(config: pytest.Config) -> DaskbenchSession:
    """`_state`, with a bad setting turned into pytest's one-line usage error."""
    try:
        return _state(config)
    except DaskbenchError as exc:
        raise pytest.UsageError(str(exc)) from None


def _uses_daskbench(item: pytest.Item) -> bool:
    """Whether the test needs daskbench's fixtures (a user's own ``size`` fixture does not count)."""
    names = getattr(item, "fixturenames", ())
    return "daskbench_session" in names or "daskbench_cluster_spec" in names


def pytest_itemcollected(item: pytest.Item) -> None:
    if _uses_daskbench(item):
        item.config.stash[SEEN_KEY] = True


def spec_id(spec: ClusterSpec, settings: cfg.Settings) -> str:
    """The test id of a spec: ``sat=1.1-workers=2``, plus threads and memory when swept (more
    than one value) and every ``--config`` key (``-threads=2-memory=4GiB-memory.target=0.6``),
    so ``-k`` can pick any of them."""
    parts = [f"sat={saturation_text(spec.worker_saturation)}", f"workers={spec.n_workers}"]
    if len(settings.threads_per_worker) > 1:
        parts.append(f"threads={spec.threads_per_worker}")
    if len(settings.memory_per_worker) > 1:
        parts.append(f"memory={compact_bytes(spec.memory_per_worker)}")
    parts += [f"{config_key_short(key)}={value}" for key, value in spec.scheduler_config]
    return "-".join(parts)


def slots_lines(settings: cfg.Settings) -> list[str]:
    """What the saturations mean in task slots per worker (ceil(saturation x threads)), per
    thread count; and, when two saturations give the same slots, that they do."""
    lines = []
    for threads in settings.threads_per_worker:
        slots = {sat: ClusterSpec("local", 1, threads, None, sat).task_slots for sat in settings.saturation}
        listed = ", ".join(f"{saturation_text(sat)} -> {slots_text(n)}" for sat, n in slots.items())
        lines.append(f"daskbench: task slots per worker at {threads} thread(s): {listed}")
        by_slots: dict[int | None, list[float]] = {}
        for sat, n in slots.items():
            by_slots.setdefault(n, []).append(sat)
        for n, same in by_slots.items():
            if len(same) > 1:
                names = " and ".join(saturation_text(sat) for sat in same)
                lines.append(
                    f"daskbench: note: saturation {names} give {slots_text(n)} slots at {threads} thread(s): "
                    "the same schedule, so their cases differ only by noise"
                )
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "daskbench_cluster_spec" not in metafunc.fixturenames:
        return
    try:
        session = _state(metafunc.config)
    except DaskbenchError:
        return  # reported in pytest_collection_modifyitems if this test is selected
    specs = session.requested_specs()
    ids = [spec_id(spec, session.settings) for spec in specs]
    metafunc.parametrize("daskbench_cluster_spec", specs, ids=ids, indirect=True, scope="session")
    if session.settings.interleave and session.settings.repeat > 1 and "daskbench_repeat" in metafunc.fixturenames:
        repeats = list(range(session.settings.repeat))
        metafunc.parametrize("daskbench_repeat", repeats, ids=[f"r{r}" for r in repeats], indirect=True)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Resolve the settings if a selected test uses daskbench (before any cluster starts);
    with --interleave, run every case's repeat 0, then every repeat 1, ... (ABAB)."""
    if not any(_uses_daskbench(item) for item in items):
        return
    session = _require_state(config)
    if session.settings.interleave and session.settings.repeat > 1:
        items.sort(key=lambda item: _repeat_of(item))
    _quiet_pytest_benchmark_table(config)


def _quiet_pytest_benchmark_table(config: pytest.Config) -> None:
    """pytest-benchmark's table (200+ columns, one round per row) only when asked for with
    ``--benchmark-columns``; its JSON (``--benchmark-json``) is written either way."""
    bench_session = getattr(config, "_benchmarksession", None)
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(), *config.getini("addopts")]
    if bench_session is not None and not any(str(arg).startswith("--benchmark-columns") for arg in given):
        bench_session.quiet = True


def _repeat_of(item: pytest.Item) -> int:
    callspec = getattr(item, "callspec", None)
    return int(callspec.params.get("daskbench_repeat", 0)) if callspec else 0


def pytest_collection_finish(session: pytest.Session) -> None:
    """Check what needs the network (coiled, data location) once, before any cluster starts."""
    markexpr = session.config.getoption("markexpr", "") or ""
    seen = session.config.stash.get(SEEN_KEY, False)
    if seen and not session.items and "benchmark" in markexpr and "not benchmark" not in markexpr:
        keyword = session.config.getoption("keyword", "") or ""
        raise pytest.UsageError(
            f"no benchmark matches{f' -k {keyword!r}' if keyword else ''}; "
            "list them with: pytest -m benchmark --collect-only -q"
        )
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    used = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    try:
        if "measure" in used:
            state.preflight()
        if "data_location" in used:
            state.data_location()
    except DaskbenchError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """The settings line, after "collected N items", only when a selected test uses daskbench."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None or not any(_uses_daskbench(item) for item in items):
        return []
    s = state.settings
    saturations = ",".join(saturation_text(v) for v in s.saturation)
    fixed = backend_named(state.backend).fixed_size
    workers = "as the scheduler has" if fixed else ",".join(map(str, s.workers))
    axes = "" if fixed else _axes_text(s)
    return [
        f"daskbench: cluster={s.cluster} workers={workers}{axes} saturation={saturations} "
        f"size={s.size} repeat={s.repeat} db={redact_url(s.db)}",
        *([] if fixed else slots_lines(s)),
    ]


def _axes_text(s: cfg.Settings) -> str:
    """The swept axes beyond workers and saturation, as ``threads=1,2 memory=2GiB,4GiB config ...``."""
    text = ""
    if s.threads_per_worker != (1,):
        text += f" threads={','.join(map(str, s.threads_per_worker))}"
    if s.memory_per_worker != (None,):
        text += f" memory={','.join(compact_bytes(m) for m in s.memory_per_worker)}"
    for key, values in s.config or ():
        text += f" {key}={','.join(values)}"
    return text


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Record how the run ended; an interrupted session keeps pytest's exit code 2 and gets no compare."""
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    outcome = state.finish(interrupted=interrupted)
    if interrupted:
        return
    if outcome == "regressed":
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif outcome in ("compare-error", "store-error"):
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _interrupt_on_sigterm() -> None:
    """SIGTERM (a CI job cancelled, ``timeout``) ends the session like Ctrl-C, so the run is
    recorded as interrupted and its clusters closed, instead of the process just vanishing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGTERM, interrupt)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or state.run is None:
        return
    terminalreporter.section("daskbench")
    terminalreporter.write_line(
        f"run {state.run.run_id} ({state.run.label}): {state.count} measurement(s) stored in {state.store_display}"
    )
    terminalreporter.write_line(f"see them with: daskbench show {state.run.run_id[:8]}")
    for line in state.summary_lines:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def daskbench_cluster_spec(request: pytest.FixtureRequest) -> ClusterSpec:
    """The requested cluster spec of this parametrization (saturation x workers)."""
    return request.param


@pytest.fixture
def daskbench_repeat(request: pytest.FixtureRequest) -> int | None:
    """With --interleave: which repeat this test item is; otherwise None (all repeats)."""
    return getattr(request, "param", None)


@pytest.fixture(scope="session")
def daskbench_session(request: pytest.FixtureRequest) -> DaskbenchSession:
    _interrupt_on_sigterm()
    return request.config.stash[SESSION_KEY]


@pytest.fixture(scope="session")
def daskbench_cluster(
    daskbench_cluster_spec: ClusterSpec, daskbench_session: DaskbenchSession
) -> Iterator[OpenCluster]:
    """One started cluster per spec, shared by the tests of that spec."""
    try:
        opened = daskbench_session.open(daskbench_cluster_spec)
    except DaskbenchError as exc:
        pytest.exit(f"daskbench: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    yield opened
    daskbench_session.close_cluster()


@pytest.fixture
def daskbench_client(daskbench_cluster: OpenCluster, daskbench_session: DaskbenchSession) -> Any:
    """The distributed Client of the current benchmark cluster (restarted after a harness error)."""
    return (daskbench_session.cluster or daskbench_cluster).client


@pytest.fixture(scope="session")
def size(daskbench_session: DaskbenchSession) -> str:
    """The workload size of this session: tiny, small, medium or large."""
    return daskbench_session.settings.size


@pytest.fixture(scope="session")
def data_location(daskbench_session: DaskbenchSession) -> Any:
    """Where workload inputs live (a daskbench.inputs.DataLocation)."""
    return daskbench_session.data_location()


@pytest.fixture
def measure(
    request: pytest.FixtureRequest,
    daskbench_session: DaskbenchSession,
    daskbench_cluster: OpenCluster,
    daskbench_repeat: int | None,
) -> Callable[..., Any]:
    """``measure(target, *, name=None, params=None, prepare=None)``: time and record ``target``.

    ``target`` is a Dask collection or a zero-argument callable (a callable returning a
    collection is the graph-build phase; the collection is then computed, timed). Returns
    the last repeat's result so the test can check it.
    """
    benchmark = _pytest_benchmark_fixture(request)
    measurer = _Measure(request.node, daskbench_session, daskbench_cluster, daskbench_repeat, benchmark)
    request.node.stash[MEASURE_KEY] = measurer
    return measurer


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A test that fails after ``measure()`` returned judged its own result wrong: flag its
    measurements ``wrong-result`` (append-only), so they are never a baseline or history."""
    outcome = yield
    report = outcome.get_result()
    measured = item.stash.get(MEASURE_KEY, None)
    if report.when != "call" or not report.failed or measured is None or measured.returned is None:
        return
    measured.flag_wrong_result(_failure_line(report))


@pytest.hookimpl(hookwrapper=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Generator[None, Any, None]:
    """At normal verbosity a measured test's progress lines say everything: no lone ``.`` after them."""
    outcome = yield
    quiet = config.stash.get(QUIET_KEY, set())
    if report.when == "call" and report.nodeid in quiet and config.get_verbosity() == 0:
        category, _letter, word = outcome.get_result()
        outcome.force_result((category, "", word))


def _failure_line(report: pytest.TestReport) -> str:
    """The failure's first line (``AssertionError: assert (16, 24) == ...``), short enough to store."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return (text.strip().splitlines() or ["the test failed after measure() returned"])[0][:500]


def _pytest_benchmark_fixture(request: pytest.FixtureRequest) -> Any:
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
        return None if bench.disabled else bench
    return None


@dataclass
class _Measure:
    node: pytest.Item
    session: DaskbenchSession
    cluster: OpenCluster
    only_repeat: int | None
    benchmark: Any
    used: bool = False
    prepare_seconds: float | None = None
    #: The measured case's fingerprint once ``measure()`` returned with every repeat passed.
    returned: str | None = None

    def __repr__(self) -> str:  # a failing test's traceback shows this: keep it one short line
        return f"<daskbench measure of {self.node.name}>"

    @property
    def _cluster(self) -> OpenCluster:
        """The session's live cluster (a fresh one after a harness error), else the fixture's."""
        return self.session.cluster or self.cluster

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
        case = Case(name or getattr(self.node, "originalname", self.node.name).removeprefix("test_"), dict(params or {}), self._cluster.spec,
                    info={"test": self.node.nodeid})  # fmt: skip
        phases = self._prepare(case, prepare)
        repeats = [self.only_repeat] if self.only_repeat is not None else list(range(self.session.settings.repeat))
        return self._run(case, target, repeats, phases)

    def _prepare(self, case: Case, prepare: Callable[[], Any] | None) -> dict[str, float]:
        phases = {"cluster_start": round(self._cluster.start_seconds, 6)}
        if prepare is not None:
            self.prepare(prepare)
        if self.prepare_seconds is not None:
            phases["prepare"] = self.prepare_seconds
        return phases

    def _run(self, case: Case, target: Any, repeats: list[int], phases: dict[str, float]) -> Any:
        results: list[Measurement] = []
        last: Any = None
        for repeat in repeats:
            measurement, last = self._one(case, target, repeat, phases)
            results.append(measurement)
            self._progress(case, measurement)
            if not measurement.ok:
                break
        self._feed_pytest_benchmark(results)
        failed = [m for m in results if not m.ok]
        if failed:
            pytest.fail(f"{failed[0].outcome}: {failed[0].message} (recorded in the store)", pytrace=False)
        self.returned = case.fingerprint
        return last

    def flag_wrong_result(self, detail: str) -> None:
        """Mark this case's measurements in this run ``wrong-result`` and say so on the terminal."""
        store, run = self.session.ensure_run()
        assert self.returned is not None
        try:
            count = store.flag_measurements(run.run_id, self.returned, WRONG_RESULT, detail)
        except DaskbenchError as exc:  # the test has failed anyway; say what the store did not take
            self._write(f"daskbench: could not record {self.node.name} as {WRONG_RESULT}: {exc}"[:_COLUMNS])
            return
        self._write(
            f"daskbench: {count} measurement(s) of {self.node.name} recorded as {WRONG_RESULT}: {detail}"[:_COLUMNS]
        )

    def _one(self, case: Case, target: Any, repeat: int, phases: dict[str, float]) -> tuple[Measurement, Any]:
        measurer = self.session.measurer
        assert measurer is not None
        extra = {"test": self.node.nodeid, "requested_saturation": saturation_text(self._requested_saturation())}
        busy = self._shared_cluster_busy()
        if busy is not None and self.session.settings.allow_busy_cluster:  # told to: measured, and marked
            extra["shared_cluster_busy"] = busy
        elif busy is not None:  # another client's work would be in the figures: not measured, recorded
            measurement = failed_measurement(measurer.run_id, case, repeat, DaskbenchError(busy), phases)
            self.session.record(case, measurement)
            return measurement, None
        try:
            measurement, result = measurer.measure(case, repeat, target, phases, extra, _modules_to_preload(self.node))
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

    def _shared_cluster_busy(self) -> str | None:
        """On a running scheduler: None once it is idle (waiting up to --wait-idle), else why not."""
        if not backend_named(self.session.backend).fixed_size:
            return None
        wait = self.session.settings.wait_idle
        busy = wait_until_idle(self._cluster.client, wait)
        return busy_message(self.session.settings.cluster, busy, wait) if busy else None

    def _progress(self, case: Case, measurement: Measurement) -> None:
        """One line per measurement on the terminal (not captured), so long sweeps show progress."""
        self._write(_progress_line(case, measurement))

    def _write(self, line: str) -> None:
        """Write a whole line without resetting pytest's file header (which would repeat per test)."""
        plugins = self.node.config.pluginmanager
        reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
        if reporter is None or self.node.config.get_verbosity() < 0:
            return
        self.node.config.stash.setdefault(QUIET_KEY, set()).add(self.node.nodeid)
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            if self.node.config.get_verbosity() > 0:  # -v: pytest then rewrites "test id PASSED" below
                reporter.write_line(line)
                return
            if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
                reporter.line("")
            reporter.line(line)

    def _requested_saturation(self) -> float:
        callspec = getattr(self.node, "callspec", None)
        spec = callspec.params.get("daskbench_cluster_spec") if callspec else None
        return spec.worker_saturation if spec is not None else math.nan

    def _feed_pytest_benchmark(self, results: list[Measurement]) -> None:
        """Hand the measured compute-phase times to pytest-benchmark (its table, --benchmark-json).

        pytest-benchmark times a callable itself, which would put our restart and
        collectors inside its timer; instead its stats object is filled with the times we
        measured. ``_make_stats``/``_mode`` are its internals (stable since 3.x); if they
        are gone, pytest-benchmark simply shows nothing for daskbench tests.
        """
        bench = self.benchmark
        if bench is None or not hasattr(bench, "_make_stats"):
            return
        bench._mode = "daskbench measure(...)"
        passed = [m for m in results if m.ok and m.runtime_s is not None]
        if not passed:
            return
        stats = bench._make_stats(1)
        for m in passed:
            stats.update(m.runtime_s)
        bench.extra_info.update(_extra_info(passed[-1]))


#: Libraries a workload commonly uses; preloaded on workers only if the client imported them.
_LIBRARIES = ("numpy", "pandas", "pyarrow", "dask.array", "dask.dataframe", "dask.bag", "xarray", "s3fs")


def _modules_to_preload(node: pytest.Item) -> tuple[str, ...]:
    """The benchmark's module, the loaded workload modules and libraries, to import on fresh workers."""
    module = getattr(node, "module", None)
    names = [name for name in sys.modules if name == "daskbench.workloads" or name.startswith("daskbench.workloads.")]
    names += [name for name in _LIBRARIES if name in sys.modules]
    return tuple(dict.fromkeys([*names, *([module.__name__] if module is not None else [])]))


def interrupted_measurement(run_id: str, case: Case, repeat: int, phases: Mapping[str, float]) -> Measurement:
    """The measurement Ctrl-C cut short: outcome ``interrupted``, nothing measured, never judged."""
    return Measurement(run_id=run_id, fingerprint=case.fingerprint, repeat=repeat, outcome=INTERRUPTED,
                       message="interrupted (Ctrl-C or SIGTERM) while it ran; nothing measured",
                       phases=dict(phases), recorded_at=now_iso())  # fmt: skip


def _progress_line(case: Case, m: Measurement) -> str:
    """``daskbench: <workload> <params> sat=.. w=.. r0 passed 1.23s peak/worker 1.1 GiB``, <= 120 columns."""
    memory = format_bytes(m.peak_worker_memory_bytes)
    runtime = f"{m.runtime_s:.2f}s" if m.runtime_s is not None else "-"
    spec = case.cluster
    threads = f" t={spec.threads_per_worker}" if spec.threads_per_worker > 1 else ""
    tail = (
        f" sat={saturation_text(spec.worker_saturation)} w={spec.n_workers}{threads} r{m.repeat} "
        f"{m.outcome} {runtime} peak/worker {memory}"
    )
    swept = [f"{config_key_short(k)}={v}" for k, v in spec.scheduler_config]
    head = f"daskbench: {case.workload} " + " ".join([*(f"{k}={v}" for k, v in sorted(case.params.items())), *swept])
    room = _COLUMNS - len(tail)
    return (head if len(head) <= room else head[: max(room - 3, 0)] + "...") + tail


def _extra_info(m: Measurement) -> dict[str, Any]:
    return {
        "peak_memory_bytes": m.peak_memory_bytes,
        "peak_worker_memory_bytes": m.peak_worker_memory_bytes,
        "spilled_bytes": m.spilled_bytes,
        "cost_usd": m.cost_usd,
        "fingerprint": m.fingerprint,
    }
