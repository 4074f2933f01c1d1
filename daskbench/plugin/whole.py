"""A test measured as a whole: a suite written for another harness, brought as it is (issue 42).

Such a suite's tests take a client fixture (``small_client``, ``client``: the names are ``--client-fixtures``)
and compute; that harness timed the whole test. daskbench declares a fixture of each name (`daskbench.plugin.
hooks`) giving a ``distributed.Client`` on its cluster for the case's spec, swept like ``measure``'s tests. A
test that takes one and does not call ``measure`` is one case: named after its function (``test_`` dropped),
its parameters its own ``parametrize`` values (and ``size`` if it takes that fixture). When its fixture is set up
the workers are restarted and warmed up and the collectors started, as for ``measure``; the timed region runs
from there (the cluster ready: any fixture set up after it, then the test's body) to the test's end. Then the
collectors stop and the outcome is classified as ``measure`` classifies a target's: an ``assert`` (or
``pytest.fail``) that fails in the body is ``wrong-result`` (the work ran, its check found it wrong), any other
error ``failed``, ``oom``, ``worker-lost`` or ``timeout`` by the same rules. The body cannot be cut short
safely, so ``--timeout`` is applied when it ends: a test that ran longer is recorded as ``timeout``.

Each repeat is a test call of its own (ids ending ``-r0``, ``-r1``...; fresh fixtures each time, as
``--interleave`` gives ``measure``'s tests); in a lockstep ``daskbench ab`` session there is one per round the
controller may ask for, and those after the case is decided are skipped without measuring. Its body runs once
per test call, so it cannot make the several calls a lockstep controller may ask of a short case
(`daskbench.lockstep.loops`): it makes one, its "done" says so (``extra["loops"]`` 1), and the controller asks
both sides for one call from then on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, NoReturn, cast

import pytest

from daskbench.clusters import OpenCluster
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError
from daskbench.lockstep.turns import Turns
from daskbench.model import WRONG_RESULT, Case, Measurement, Outcome
from daskbench.plugin import taking
from daskbench.plugin.measuring import Attempt, Opened, failed_measurement, interrupted_measurement
from daskbench.plugin.state import DaskbenchSession
from daskbench.text import one_line, saturation_text

#: What a failure in a test's body means: its own check of the result (``wrong-result``), not a failed compute.
CHECKS: tuple[type[BaseException], ...] = (AssertionError, pytest.fail.Exception)
#: Parameters stored as they are; anything else by its name (a function, a class) or its text.
SCALARS = (str, int, float, bool, type(None))


def case_of(node: pytest.Item, session: DaskbenchSession, spec: Any) -> Case:
    """The case a whole test measures: its function's name without ``test_``, its own parametrize values (not
    the sweep's), and ``size`` when it takes that fixture."""
    callspec = getattr(node, "callspec", None)
    found = dict(callspec.params) if callspec is not None else {}
    params = {name: _stored(value) for name, value in found.items() if not name.startswith("daskbench_")}
    if "size" in getattr(node, "fixturenames", ()):
        params.setdefault("size", session.settings.size)
    name = getattr(node, "originalname", node.name).removeprefix("test_")
    return Case(name or node.name, params, spec, info={"test": node.nodeid, "measured": "whole test"})


def _stored(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # NaN and inf are no JSON values
        return str(value)
    if isinstance(value, SCALARS):
        return value
    return getattr(value, "__name__", None) or str(value)


@dataclass
class WholeTest:
    """One repeat of one test measured as a whole: opened when its client fixture is set up (`start`),
    closed when its body ends (`finish`)."""

    node: pytest.Item
    session: DaskbenchSession
    cluster: OpenCluster
    repeat: int
    turns: Turns | None = None
    key: str = ""
    case: Case | None = None
    opened: Opened | None = None
    began: float = 0.0
    turn_began: float = 0.0

    def start(self) -> Any:
        """Wait for this case's turn (lockstep), claim the case, restart and warm up the workers, start the
        collectors; returns the client, the timed region beginning now."""
        self._take_turn()
        live = taking.live_cluster(self.session, self.cluster)
        self.case = case = case_of(self.node, self.session, live.spec)
        taking.claim_or_fail(self.session, self.node, case, self.repeat, "rename one of the two test functions")
        phases = {"cluster_start": round(live.start_seconds, 6)}
        busy = taking.shared_cluster_busy(self.session, self.cluster)
        if busy is not None and not self.session.settings.allow_busy_cluster:
            self._failed(case, DaskbenchError(busy), phases)
        extra = {"test": self.node.nodeid, "measured": "whole test"}
        extra["requested_saturation"] = saturation_text(taking.requested_saturation(self.node))
        if busy is not None:
            extra["shared_cluster_busy"] = busy
        self._open(case, phases, extra)
        self.began = time.perf_counter()
        return taking.live_cluster(self.session, self.cluster).client

    def _take_turn(self) -> None:
        """In a lockstep ``daskbench ab`` session: wait for this round's turn; a case the controller ended
        (decided, out of rounds or time) is skipped, and so are its later rounds, without asking again."""
        if self.turns is None:
            return
        if self.key not in self.session.turns_over and self.turns.wait(self.key, self.repeat):
            self.turn_began = time.perf_counter()
            return
        self.session.turns_over.add(self.key)
        pytest.skip("daskbench ab gave this case no more turns (decided, out of rounds, its budget or deadline)")

    def _open(self, case: Case, phases: dict[str, float], extra: dict[str, Any]) -> None:
        measurer = self.session.measurer
        assert measurer is not None
        try:
            opened = measurer.open(case, self.repeat, phases, extra, taking.modules_to_preload(self.node))
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM while the workers restarted: the record says so
            self._settle(interrupted_measurement(measurer.run_id, case, self.repeat, phases))
            raise
        except Exception as exc:  # the cluster could not restart: a harness error, still recorded
            self.session.recover()
            self._failed(case, exc, phases)
        if isinstance(opened, Measurement):  # the scheduler lost before the test began, or its code unimportable there
            self._settle(opened)
            pytest.fail(shown_message(f"{opened.outcome}: {opened.message} (recorded in the store)"), pytrace=False)
        self.opened = opened

    def _failed(self, case: Case, error: BaseException, phases: dict[str, float]) -> NoReturn:
        """Record that the harness could not measure this test (an ``error`` measurement) and fail it."""
        measurer = self.session.measurer
        run_id = measurer.run_id if measurer is not None else self.session.ensure_run()[1].run_id
        measurement = failed_measurement(run_id, case, self.repeat, error, phases)
        self._settle(measurement)
        pytest.fail(shown_message(f"error: {measurement.message} (recorded in the store)"), pytrace=False)

    def finish(self, error: BaseException | None) -> None:
        """End the timed region: ``error`` is what ended the test (None: it passed). A test that skipped
        itself measured nothing; Ctrl-C is recorded as ``interrupted``; a passed test whose measurement is
        not (its workers died, it ran past --timeout) fails with that one line."""
        opened, self.opened = self.opened, None
        if opened is None:  # never opened, or finished already
            return
        measurer = self.session.measurer
        assert measurer is not None
        seconds = time.perf_counter() - self.began
        if isinstance(error, pytest.skip.Exception):
            measurer.abandon(opened)
            return
        if isinstance(error, (KeyboardInterrupt, pytest.exit.Exception)):
            opened.keeping.close()
            self._settle(interrupted_measurement(measurer.run_id, opened.case, self.repeat, opened.phases))
            return
        try:
            measurement = checked(measurer.close(opened, self.attempt(error, seconds)), error)
        except Exception as exc:  # the harness failed ending it: recorded, the tests after it on a fresh cluster
            self._settle(failed_measurement(measurer.run_id, opened.case, self.repeat, exc, opened.phases))
            self.session.recover()
            raise
        self._settle(measurement)
        if error is None and not measurement.ok:
            said = f"{measurement.outcome}: {measurement.message} (recorded in the store)"
            pytest.fail(shown_message(said), pytrace=False)

    def abandon(self) -> None:
        """At teardown: a measurement still open (the session stopped during the test's setup) is closed,
        nothing recorded."""
        opened, self.opened = self.opened, None
        if opened is not None and self.session.measurer is not None:
            with contextlib.suppress(Exception):
                self.session.measurer.abandon(opened)

    def attempt(self, error: BaseException | None, seconds: float) -> Attempt:
        """The timed region as `Measurer.close` reads a target's: the body's seconds as the compute phase;
        a failed check is no failed compute (`checked` marks it); past --timeout is a timeout."""
        timeout = self.session.settings.timeout
        if error is None and seconds > timeout:
            error = TimeoutError(f"the test ran {seconds:.0f} s, past --timeout {timeout:g} s")
        return Attempt(error=None if isinstance(error, CHECKS) else error, phases={"compute": seconds})

    def _settle(self, measurement: Measurement) -> None:
        """Store the measurement, write its progress line, and tell a lockstep controller what it measured."""
        assert self.case is not None
        self.session.record(self.case, measurement)
        taking.progress(self.node, self.session, self.case, measurement)
        if self.turns is not None:
            self.turns.done(self.key, self.repeat, measurement, time.perf_counter() - self.turn_began)


def checked(measurement: Measurement, error: BaseException | None) -> Measurement:
    """A measurement whose test's own check failed (``assert``, ``pytest.fail``) after the work ran to its
    end: ``wrong-result`` with the check's line, never a baseline, history or candidate value."""
    if not isinstance(error, CHECKS) or not measurement.ok:
        return measurement
    return dataclasses.replace(measurement, outcome=cast(Outcome, WRONG_RESULT), message=one_line(error))
