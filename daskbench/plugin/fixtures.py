"""The fixtures daskbench gives a test: ``measure``, the cluster and its client, the session's size and data
location, and one client fixture per ``--client-fixtures`` name (`client_fixture`). `daskbench.plugin.hooks`
(the ``pytest11`` entry point) registers this module as a plugin of its own at configure, so pytest
finds them; the hooks read what a test's fixtures left in its stash (the keys below).

What the fixtures give is made elsewhere: the ``measure`` fixture's object is
`daskbench.plugin.measure_fixture.MeasureFixture`, a test measured as a whole is a `daskbench.plugin.whole.WholeTest`,
the cluster is the session's (`daskbench.plugin.state.DaskbenchSession.open`). Those modules are imported by the
fixture that uses them, not here: this module is imported in every pytest run (see `daskbench.plugin.hooks`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from daskbench import config as cfg
from daskbench.clusters import OpenCluster
from daskbench.errors import DaskbenchError
from daskbench.lockstep import turns
from daskbench.model import ClusterSpec
from daskbench.text import wrap_line

if TYPE_CHECKING:
    from daskbench.plugin.measure_fixture import MeasureFixture
    from daskbench.plugin.state import DaskbenchSession
    from daskbench.plugin.whole import WholeTest

#: The session's state, made when its settings are first resolved (`daskbench.plugin.hooks`).
SESSION_KEY: pytest.StashKey[DaskbenchSession] = pytest.StashKey()
#: The link to ``daskbench ab`` in a lockstep session (`daskbench.lockstep.turns`).
TURNS_KEY = pytest.StashKey[turns.Turns]()
#: The test's `MeasureFixture`, so its report can mark a result the test itself found wrong.
MEASURE_KEY: pytest.StashKey[MeasureFixture] = pytest.StashKey()
#: A test measured as a whole (`daskbench.plugin.whole`): its measurement, opened by its client fixture.
WHOLE_KEY: pytest.StashKey[WholeTest] = pytest.StashKey()


def client_fixture(name: str) -> Any:
    """A fixture called ``name`` that gives the test a ``distributed.Client`` on daskbench's cluster."""

    @pytest.fixture(name=name)
    def client(
        request: pytest.FixtureRequest,
        daskbench_session: DaskbenchSession,
        daskbench_cluster: OpenCluster,
        daskbench_repeat: int | None,
    ) -> Any:
        """A distributed.Client on daskbench's cluster for this case (--client-fixtures); a test that takes it
        and does not call measure is measured as a whole, from now to its end (daskbench.plugin.whole)."""
        from daskbench.plugin import sweep, taking
        from daskbench.plugin.whole import WholeTest

        if "measure" in request.fixturenames:  # measure() times what it is given; this is only its client
            return taking.live_cluster(daskbench_session, daskbench_cluster).client
        link = request.config.stash.get(TURNS_KEY, None)
        key = sweep.case_key_of(request.node, daskbench_session) if link is not None else ""
        whole = WholeTest(request.node, daskbench_session, daskbench_cluster, daskbench_repeat or 0, link, key)
        request.node.stash[WHOLE_KEY] = whole
        request.addfinalizer(whole.abandon)  # measured already, unless the session was stopped meanwhile
        return whole.start()

    return client


def stop_like_ctrl_c() -> None:
    """SIGTERM (a CI job cancelled, ``timeout``) ends the session like Ctrl-C, so the run is
    recorded as interrupted and its clusters closed, instead of the process just vanishing. And
    SIGINT is Ctrl-C again when the session inherited it ignored: a shell script's ``cmd &`` starts
    its job that way, and ``daskbench ab``/``pr`` stop their sessions with SIGINT (ignored, a session
    ran on until killed 60 s later, its cut measurement never recorded as interrupted)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)


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
    stop_like_ctrl_c()
    return request.config.stash[SESSION_KEY]


@pytest.fixture(scope="session")
def daskbench_cluster(
    daskbench_cluster_spec: ClusterSpec, daskbench_session: DaskbenchSession, request: pytest.FixtureRequest
) -> Iterator[OpenCluster]:
    """One started cluster per spec, shared by the tests of that spec; a running scheduler of other versions than
    this client's is said at once, before anything is measured on it."""
    try:
        opened = daskbench_session.open(daskbench_cluster_spec)
    except DaskbenchError as exc:
        pytest.exit(cfg.shown_message(f"daskbench: {exc}"), returncode=pytest.ExitCode.USAGE_ERROR)
    if opened.mismatch:
        _say_now(request.config, daskbench_session.mismatch_line())
    yield opened
    daskbench_session.close_cluster()


def _say_now(config: pytest.Config, line: str) -> None:
    """``line`` on the terminal at once, between words at 120 columns, past pytest's capture."""
    reporter, capture = (
        config.pluginmanager.get_plugin("terminalreporter"),
        config.pluginmanager.get_plugin("capturemanager"),
    )
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.line("")
        for part in wrap_line(cfg.shown_message(line)):
            reporter.line(part)


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
    from daskbench.plugin import sweep
    from daskbench.plugin.measure_fixture import MeasureFixture, benchmark_fixture_of

    benchmark = benchmark_fixture_of(request)
    link = request.config.stash.get(TURNS_KEY, None)
    key = sweep.case_key_of(request.node, daskbench_session) if link is not None else ""
    fixture = MeasureFixture(request.node, daskbench_session, daskbench_cluster, daskbench_repeat, benchmark, link, key)
    request.node.stash[MEASURE_KEY] = fixture
    return fixture
