"""The pytest plugin: daskbench's hooks, one object per job behind them.

As pytest-benchmark splits it: the hooks are here (the settings resolved, the tests collected and planned,
the header, the session's end and summary, a test's report); the fixtures they serve are declared in
`daskbench.plugin.fixtures`, a plugin module this one registers at configure; the ``measure``
fixture's object is `daskbench.plugin.measure_fixture.MeasureFixture`; the sweep (parametrization, test ids, the
settings header) is `daskbench.plugin.sweep`; the session's state (store, run, clusters) is one
`daskbench.plugin.state.DaskbenchSession` kept in ``config.stash``. Bad settings stop the session
with one line before any cluster starts.

Installed, the plugin loads in every pytest run (entry point ``pytest11``), so it stays
out of the way until it is used: settings are resolved only when a daskbench option is
given or a collected test uses a daskbench fixture, and only such runs get the header
line and the summary section. Until then it imports only the options and the fixtures'
names: the measuring side (the session's state, the sweep, the store, distributed) is
imported by the hook or fixture that first needs it, so a run without benchmarks does
not pay for it (tests/test_imports.py checks that it stays unloaded).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import types
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from daskbench import config as cfg
from daskbench.clusters import backend_named, backend_of
from daskbench.errors import DaskbenchError, StoreFault
from daskbench.lockstep import turns
from daskbench.metrics.cost import load_prices
from daskbench.model import SELECT_K, SELECT_M
from daskbench.plugin import fixtures
from daskbench.plugin.fixtures import MEASURE_KEY, SESSION_KEY, TURNS_KEY, WHOLE_KEY, client_fixture
from daskbench.text import plural, wrap_line

if TYPE_CHECKING:
    from daskbench.plugin.state import DaskbenchSession

#: A settings error found while collecting, raised only if a daskbench test is selected.
ERROR_KEY = pytest.StashKey[DaskbenchError]()
#: Whether any collected test (selected or not) uses a daskbench fixture.
SEEN_KEY = pytest.StashKey[bool]()
#: The client fixtures declared (``--client-fixtures``), and those a conftest.py of the suite overrides.
CLIENT_FIXTURES_KEY = pytest.StashKey[tuple[str, ...]]()
SHADOWED_KEY = pytest.StashKey[dict[str, str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("daskbench", "daskbench: Dask benchmarks (pytest -m benchmark)")
    cfg.add_options(group.addoption)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and the fixtures (a plugin module of their own: registered here, not named in
    ``pytest_plugins``, which would have pytest import it again for its assertions and warn that it cannot);
    resolve the settings now only if a daskbench flag was given."""
    config.pluginmanager.register(fixtures, "daskbench-fixtures")
    config.addinivalue_line("markers", "benchmark: a daskbench benchmark (run with pytest -m benchmark)")
    _refuse_side_by_side(config)
    _declare_client_fixtures(config)
    if os.environ.get(turns.ENV_CONTROL):  # a lockstep session: stoppable from its first moment
        fixtures.stop_like_ctrl_c()
    if any(value is not None for value in _flags(config).values()):
        _require_state(config)


def _selects_benchmarks(config: pytest.Config) -> bool:
    markexpr = config.getoption("markexpr", "") or ""
    return "benchmark" in markexpr and "not benchmark" not in markexpr


def _refuse_side_by_side(config: pytest.Config) -> None:
    """Benchmarks under pytest-xdist (``-n N``) would measure side by side on one machine, each
    in the other's load: refused in one line before anything starts."""
    workers = config.getoption("numprocesses", None) if config.pluginmanager.hasplugin("xdist") else None
    if _selects_benchmarks(config) and workers and not hasattr(config, "workerinput"):
        raise pytest.UsageError(
            f"-n {workers} (pytest-xdist) would measure benchmarks side by side, each in the other's load; "
            "run them without -n"
        )


def _declare_client_fixtures(config: pytest.Config) -> None:
    """Declare a fixture of each ``--client-fixtures`` name before any test module is collected (a suite
    written for another harness: `daskbench.plugin.whole`). Only this setting is read now; a bad value stops a
    session that selects benchmarks, and is ignored by one that does not (the plugin stays out of its way)."""
    try:
        pyproject = cfg.load_pyproject(config.rootpath)
        names = cfg.resolve_option("client_fixtures", _flags(config), pyproject=pyproject) or ()
    except DaskbenchError as exc:
        if _selects_benchmarks(config):
            raise pytest.UsageError(cfg.shown_message(str(exc))) from None
        return
    if names:
        holder = types.ModuleType("daskbench_client_fixtures", "The client fixtures --client-fixtures names.")
        for index, name in enumerate(names):
            setattr(holder, f"client_fixture_{index}", client_fixture(name))
        config.pluginmanager.register(holder, "daskbench-client-fixtures")
        config.stash[CLIENT_FIXTURES_KEY] = names


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
        backend, prices = backend_of(settings.cluster), load_prices(settings.prices)
        from daskbench.plugin.state import DaskbenchSession  # after the settings: a bad one is said without it

        state = DaskbenchSession(settings, backend, prices)
    except DaskbenchError as exc:
        config.stash[ERROR_KEY] = exc
        raise
    state.selection = {**_selection(config), **turns.run_tags()}
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
        raise pytest.UsageError(cfg.shown_message(str(exc))) from None


def _uses_daskbench(item: pytest.Item) -> bool:
    """Whether the test needs daskbench's fixtures (a user's own ``size`` fixture does not count)."""
    names = getattr(item, "fixturenames", ())
    return "daskbench_session" in names or "daskbench_cluster_spec" in names


def _measures(item: pytest.Item) -> bool:
    """Whether the test makes measurements: it calls ``measure``, or is measured as a whole."""
    names = getattr(item, "fixturenames", ())
    return "measure" in names or (_uses_daskbench(item) and _whole(item))


def _whole(item: pytest.Item) -> bool:
    declared = item.config.stash.get(CLIENT_FIXTURES_KEY, ())
    if not declared:  # no --client-fixtures: nothing is measured as a whole (and the measuring side stays unloaded)
        return False
    from daskbench.plugin.taking import is_whole_test

    return is_whole_test(getattr(item, "fixturenames", ()), declared)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Note a test that uses daskbench; a test measured as a whole is a benchmark (``-m benchmark`` selects
    it, unmarked as a suite written for another harness is); one whose client fixture the suite's own
    conftest.py overrides is not daskbench's to measure, and the header says so."""
    if _uses_daskbench(item):
        item.config.stash[SEEN_KEY] = True
        if _whole(item):
            item.add_marker(pytest.mark.benchmark)
    elif _whole(item):
        shadowed = item.config.stash.setdefault(SHADOWED_KEY, {})
        declared: tuple[str, ...] = item.config.stash.get(CLIENT_FIXTURES_KEY, ())
        for name in sorted(set(getattr(item, "fixturenames", ())) & set(declared)):
            shadowed.setdefault(name, _defined_where(item, name))


def _defined_where(item: pytest.Item, name: str) -> str:
    """The file that defines the fixture ``name`` this test gets (pytest's fixture lookup), else ``?``."""
    with contextlib.suppress(Exception):
        definitions = item._fixtureinfo.name2fixturedefs[name]  # type: ignore[attr-defined]
        path = inspect.getsourcefile(definitions[-1].func) or "?"
        return os.path.relpath(path, item.config.rootpath)
    return "?"


def shadowed_lines(config: pytest.Config) -> list[str]:
    """One line per client fixture the suite defines itself: its tests are not measured by daskbench."""
    return [
        f"daskbench: {name} is defined in {where}, which wins over daskbench's --client-fixtures {name}: "
        f"tests taking it are not measured (remove or rename that fixture to measure them)"
        for name, where in sorted(config.stash.get(SHADOWED_KEY, {}).items())
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "daskbench_cluster_spec" not in metafunc.fixturenames:
        return
    try:
        session = _state(metafunc.config)
    except DaskbenchError:
        return  # reported in pytest_collection_modifyitems if this test is selected
    from daskbench.plugin import sweep

    sweep.parametrize(metafunc, session)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Resolve the settings if a selected test uses daskbench (before any cluster starts);
    with --interleave, run every case's repeat 0, then every repeat 1, ... (ABAB)."""
    if not any(_uses_daskbench(item) for item in items):
        return
    session = _require_state(config)
    from daskbench.plugin import sweep

    if session.settings.interleave and session.settings.repeat > 1:
        items.sort(key=sweep.repeat_of)
    _lockstep_plan(config, session, items)
    _shard_plan(config, session, items)
    _quiet_pytest_benchmark_table(config)


def _lockstep_plan(config: pytest.Config, session: DaskbenchSession, items: list[pytest.Item]) -> None:
    """In a lockstep ``daskbench ab`` session: agree with the controller on the cases both sides
    have, keep those (in its order) and deselect the rest."""
    try:
        link = turns.Turns.from_env()
    except DaskbenchError as exc:
        raise pytest.UsageError(cfg.shown_message(str(exc))) from None
    if link is None:
        return
    config.stash[TURNS_KEY] = link
    from daskbench.plugin import sweep

    keys = {item: sweep.case_key_of(item, session) for item in items if _measures(item)}
    names: dict[str, str] = {}
    for item, key in keys.items():  # a whole test's rounds are items of one case: named without their -rN
        names.setdefault(key, re.sub(r"-r\d+\]$", "]", item.name) if _whole(item) else item.name)
    order = {key: index for index, key in enumerate(link.plan(list(names), names))}
    dropped = [item for item, key in keys.items() if key not in order]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = sorted(
        (item for item in items if item not in dropped), key=lambda item: order.get(keys.get(item, ""), -1)
    )


def _shard_plan(config: pytest.Config, session: DaskbenchSession, items: list[pytest.Item]) -> None:
    """With ``--shard K/N`` outside a lockstep session: keep this shard's cases (`daskbench.plugin.sharding`),
    deselect the rest, tag the run and say the split in the header."""
    if session.settings.shard is None or config.stash.get(TURNS_KEY, None) is not None:
        return
    from daskbench.plugin import sharding
    from daskbench.shards.plan import suite_name

    names = {item: suite_name(item.nodeid) for item in items if _measures(item)}
    sharded = sharding.split(session.settings.db, sorted(set(names.values())), session.settings.shard)
    dropped = [item for item, name in names.items() if name not in sharded.kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in set(dropped)]
    session.selection.update(sharded.tags())
    session.shard_line = sharded.line()


def _quiet_pytest_benchmark_table(config: pytest.Config) -> None:
    """pytest-benchmark's table (200+ columns, one round per row) only when asked for with
    ``--benchmark-columns``; its JSON (``--benchmark-json``) is written either way."""
    bench_session = getattr(config, "_benchmarksession", None)
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(), *config.getini("addopts")]
    if bench_session is not None and not any(str(arg).startswith("--benchmark-columns") for arg in given):
        bench_session.quiet = True


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
        if any(_measures(item) for item in session.items):
            state.preflight()
        if "data_location" in used:
            state.data_location()
    except DaskbenchError as exc:
        raise pytest.UsageError(cfg.shown_message(str(exc))) from None


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """The settings line, after "collected N items", only when a selected test uses daskbench;
    and, when the run's label fell back to ``local``, why (`DaskbenchSession.label_lines`)."""
    shadowed = shadowed_lines(config) if _selects_benchmarks(config) else []
    state = config.stash.get(SESSION_KEY, None)
    if state is None or not any(_uses_daskbench(item) for item in items):
        return [part for line in shadowed for part in wrap_line(line)]
    from daskbench.plugin import sweep

    plan = sweep.plan_lines(state, [item for item in items if _measures(item)])
    sharded = wrap_line(state.shard_line) if state.shard_line else []
    header = [*sweep.header_lines(state, backend_named(state.backend).fixed_size), *sharded, *plan,
              *state.label_lines()]  # fmt: skip
    return header + [part for line in shadowed for part in wrap_line(line)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, Any, None]:
    """After a test whose measurement lost the scheduler, stop the session with that one line
    (pytest's "Interrupted: ..."): the tests after it are not run against a dead cluster."""
    yield
    state = item.config.stash.get(SESSION_KEY, None)
    if state is not None and state.lost and not item.session.shouldstop:
        item.session.shouldstop = cfg.shown_message(state.lost)
        state.lost_shown = True  # as pytest's "Interrupted: ..." (it checks shouldstop after every test, the last too)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, Any, None]:
    """Note a Ctrl-C that went through the tests, whatever exit status pytest reaches after it: its own report
    of the interrupt may fail (CPython 3.11's ``SystemError`` when the signal landed in a compile), and it then
    ends the session with status 0, which read as a finished run (issue 45)."""
    outcome = yield
    state = session.config.stash.get(SESSION_KEY, None)
    if state is not None and outcome.excinfo is not None and issubclass(outcome.excinfo[0], KeyboardInterrupt):
        state.interrupted = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Record how the run ended; an interrupted session (Ctrl-C, or its ``daskbench ab`` gone: `_orphaned`)
    exits with pytest's code 2 and gets no compare, and so does a session stopped by a lost cluster (whichever
    test it was lost in)."""
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or state.interrupted or _orphaned(session.config, state)
    outcome = state.finish(interrupted=interrupted)
    if outcome == "cluster-lost" or interrupted:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    if interrupted:
        return
    if outcome == "regressed":
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif outcome in ("compare-error", "store-error"):
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _orphaned(config: pytest.Config, state: DaskbenchSession) -> bool:
    """Whether this lockstep session's ``daskbench ab`` went away mid-comparison (its channel closed: killed, or
    stopped while this session was between signals): said in one line; its run was stopped, not finished."""
    link = config.stash.get(TURNS_KEY, None)
    if link is None or not link.gone or state.run is None:
        return False
    state.summary_lines.append(
        f"daskbench: daskbench ab went away mid-comparison (its control channel closed); run {state.run.run_id[:8]} "
        "is recorded as interrupted, what it measured kept"
    )
    return True


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or state.run is None:
        return
    terminalreporter.section("daskbench")
    for line in (part for whole in _stored_lines(state) for part in wrap_line(whole)):
        terminalreporter.write_line(line)
    for line in (part for whole in state.summary_lines for part in wrap_line(cfg.shown_message(whole))):
        terminalreporter.write_line(line)


def _stored_lines(state: DaskbenchSession) -> list[str]:
    """What the store holds of this run, said only of committed rows: after a store fault, its one
    line first, then the measurements committed before it (each commits alone, so they stay)."""
    assert state.run is not None
    run, count = state.run, plural(state.count, "measurement")
    fault = state.store.fault if state.store is not None else None
    if fault is None:
        return [
            f"run {run.run_id} ({run.label}): {count} stored in {state.store_display}",
            f"see them with: daskbench show {run.run_id[:8]}",
        ]
    if not state.count:
        return [f"daskbench: {fault}", f"run {run.run_id[:8]}: nothing stored"]
    kept = f"run {run.run_id} ({run.label}): stored before that in {state.store_display}: {count}"
    return [f"daskbench: {fault}", kept, f"see them with: daskbench show {run.run_id[:8]}"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """A test measured as a whole: its timed region ends with its body, however the body ended."""
    whole = item.stash.get(WHOLE_KEY, None)
    if whole is None:
        return (yield)
    try:
        result = yield
    except BaseException as exc:
        whole.finish(exc)
        raise
    whole.finish(None)
    return result


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A test that fails after ``measure()`` returned judged its own result wrong: flag its
    measurements ``wrong-result`` (append-only), so they are never a baseline or history. A test
    whose measurement the store could not take (`StoreFault`) fails with that one line and stops
    the session: the next measurements would be lost too."""
    outcome = yield
    report = outcome.get_result()
    whole = item.stash.get(WHOLE_KEY, None)
    if whole is not None and call.when == "setup" and call.excinfo is not None:  # a fixture after its client
        whole.finish(call.excinfo.value)
    if call.excinfo is not None and isinstance(call.excinfo.value, StoreFault):  # the store took no more
        report.longrepr = f"daskbench: {call.excinfo.value} (this measurement is not stored)"
        item.session.shouldstop = "daskbench: stopped at the first measurement the store could not take"
        return
    measured = item.stash.get(MEASURE_KEY, None)
    if report.when != "call" or not report.failed or measured is None or measured.returned is None:
        return
    measured.flag_wrong_result(_failure_line(report))


@pytest.hookimpl(hookwrapper=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Generator[None, Any, None]:
    """At normal verbosity a measured test's progress lines say everything: no lone ``.`` after them."""
    outcome = yield
    if SESSION_KEY not in config.stash:  # no daskbench session: nothing measured, nothing imported for it
        return
    from daskbench.plugin.taking import QUIET_KEY

    quiet = config.stash.get(QUIET_KEY, set())
    if report.when == "call" and report.nodeid in quiet and config.get_verbosity() == 0:
        category, _letter, word = outcome.get_result()
        outcome.force_result((category, "", word))


def _failure_line(report: pytest.TestReport) -> str:
    """The failure's first line (``AssertionError: assert (16, 24) == ...``), short enough to store."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return (text.strip().splitlines() or ["the test failed after measure() returned"])[0][:500]
