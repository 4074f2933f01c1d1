"""A session's side of a lockstep A/B comparison: wait for its turn, say what it measured.

``daskbench ab`` (`daskbench.lockstep.engine`) starts one pytest session per side and talks to
each over a Unix socket named in ``DASKBENCH_AB_CONTROL``, one JSON object per line:

    session -> ab   {"side": "A", "plan": [key, ...],        after collection: the cases it has, and
                     "names": {key: name}}                   what a person calls each (its pytest name)
    ab -> session   {"plan": [key, ...]}                     the cases both sides have, in order
    session -> ab   {"ready": key, "round": n}               before each measurement of a case
    ab -> session   {"go": true, "loops": n} | {"go": false} measure now, n calls | this case is done
    session -> ab   {"done": key, "round": n, "value": s, "outcome": o, "metrics": {...}, "phases": {...},
                     "busy": s, "loops": n, "others": c}

so the two sides measure each case alternately (A B, B A, A B ... per round), seconds apart,
each while the other's cluster is idle, and a case stops as soon as its verdict is decided.
A key names a case the same way on both sides (`case_key`), so side B may run other settings
(another saturation, another dask) of the same benchmark. ``value`` is the measurement's runtime;
``metrics`` all its metrics (the controller may judge another one: ``--metric``), ``phases`` its phases
(restart, warm-up, collectors, compute...) and ``busy`` the seconds the whole turn took on the session's side
(stored and its progress line written): where a round's time went (`daskbench.lockstep.engine.RoundCost`).
``loops`` is how many calls of the benchmark one measurement makes (`daskbench.lockstep.loops`): asked by the
controller (1 when it does not say: an older one), and made by the session, which says how many it made (a
test measured as a whole makes one); ``value``, ``metrics`` and the compute phase's share of them are per call.
``others`` is how many cores other work used during the measurement (``extra["others_cores"]``; absent when not
read): a change read on a busy machine must clear a wider factor to count without a repeat (`daskbench.judge.repeat`).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from daskbench.clusters.common import MACHINE_SHARE_ENV
from daskbench.errors import DaskbenchError
from daskbench.model import SET_ASIDE_TAG, Measurement, calls_said

if TYPE_CHECKING:  # the plugin imports this module, and loads no verdicts (tests/test_imports.py)
    from daskbench.judge.sequential import Question

#: The controller's socket, the side's name and the group: set by ``daskbench ab`` on each session.
ENV_CONTROL, ENV_SIDE, ENV_GROUP = "DASKBENCH_AB_CONTROL", "DASKBENCH_AB_SIDE", "DASKBENCH_AB_GROUP"
#: The part of a group this pair of sessions is (a resumed group adds parts) and its most rounds.
ENV_PART, ENV_MAX_ROUNDS = "DASKBENCH_AB_PART", "DASKBENCH_AB_MAX_ROUNDS"
#: The question the controller asks of each case: the metric whose rounds decide, and a bisection step's
#: boundary (tagged on the runs, so `compare_group` judges the group later as it was judged then).
ENV_METRIC, ENV_BOUNDARY = "DASKBENCH_AB_METRIC", "DASKBENCH_AB_BOUNDARY"
#: Within what factor of 1 a change verdict is repeated in fresh sessions (`daskbench.judge.repeat`), tagged
#: likewise; a group without it (older, or ``--rounds N``) pools its rounds.
ENV_REPEAT = "DASKBENCH_AB_REPEAT_WITHIN"
#: The error an unchanged suite's verdicts share (`daskbench.judge.suite`) and the fewest verdicts it is spent
#: over (a shard's whole suite), tagged likewise; a group without them judges each case on its own.
ENV_SUITE_ALPHA, ENV_FAMILY = "DASKBENCH_AB_SUITE_ALPHA", "DASKBENCH_AB_FAMILY"
#: How many clusters share this machine while the sessions run (each side's auto memory is a share).
ENV_SHARE = MACHINE_SHARE_ENV


def shown_name(key: str) -> str:
    """A case key without its file, for a case whose side sent no name: ``test[params]#setting``."""
    return key.split("::", 1)[-1]


def case_key(module: str, test: str, params: Mapping[str, Any], spec_index: int) -> str:
    """The name of one case both sides agree on: the benchmark, its own parameters and the
    position of its cluster setting in the side's sweep (A's first setting pairs with B's first)."""
    shown = ",".join(f"{name}={value!r}" for name, value in sorted(params.items()))
    return f"{module}::{test}[{shown}]#{spec_index}"


@dataclass
class Turns:
    """The connection of one session to the ``daskbench ab`` controller."""

    side: str
    stream: Any  # a socket file, line-buffered in both directions
    gone: bool = False  # the controller went away: every turn from now on is "no", the run reads interrupted

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Turns | None:
        """Connected to the controller named in the environment; None outside ``daskbench ab``."""
        address = environ.get(ENV_CONTROL)
        if not address:
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(address)
        except OSError as exc:
            raise DaskbenchError(f"cannot reach daskbench ab at {address} ({exc.strerror or exc})") from None
        return cls(environ.get(ENV_SIDE, "?"), sock.makefile("rw", encoding="utf-8", buffering=1))

    def plan(self, keys: Sequence[str], names: Mapping[str, str] | None = None) -> list[str]:
        """Send this side's cases (and the name a person knows each by: its pytest name); returns the ones
        both sides have, in the order to run them."""
        self._send({"side": self.side, "plan": list(keys), "names": dict(names or {})})
        return [str(key) for key in self._receive().get("plan", [])]

    def wait(self, key: str, round_: int) -> int:
        """Block until it is this side's turn to measure ``key`` again: how many calls the measurement makes
        (at least 1); 0 when the case is done."""
        self._send({"ready": key, "round": round_})
        answer = self._receive()
        if not answer.get("go"):
            return 0
        return calls_said(answer)

    def done(self, key: str, round_: int, measurement: Measurement, busy: float) -> None:
        """Say what this turn measured and how long it took on this side."""
        self._send(
            {
                "done": key,
                "round": round_,
                "value": measurement.runtime_s,
                "outcome": measurement.outcome,
                "metrics": dict(measurement.metrics),
                "phases": dict(measurement.phases),
                "busy": round(busy, 6),
                "loops": measurement.loops,
                **({"others": measurement.extra["others_cores"]} if "others_cores" in measurement.extra else {}),
            }
        )

    def _send(self, message: Mapping[str, Any]) -> None:
        if self.gone:
            return
        try:
            self.stream.write(json.dumps(message) + "\n")
            self.stream.flush()
        except OSError:  # the controller went away (killed): nothing more to measure in lockstep
            self.gone = True

    def _receive(self) -> dict[str, Any]:
        if self.gone:
            return {}
        try:
            line = self.stream.readline()
        except OSError:
            line = ""
        if not line:  # the controller went away: nothing more to measure in lockstep (the run was stopped)
            self.gone = True
            return {}
        found = json.loads(line)
        return found if isinstance(found, dict) else {}


def session_env(group: str, part: int, question: Question) -> dict[str, str]:
    """What ``daskbench ab`` (and ``calibrate``) set on both lockstep sessions besides the socket:
    the group, the part, and the ``question`` (the most rounds, the metric, a bisection's boundary, the repeat, the
    suite's error and the fewest verdicts it is spent over), and that two clusters share this machine."""
    asked = {ENV_METRIC: question.metric}
    if question.boundary is not None:
        asked[ENV_BOUNDARY] = repr(question.boundary)
    if question.repeat_within is not None:
        asked[ENV_REPEAT] = repr(question.repeat_within)
    if question.family.alpha is not None:
        asked.update({ENV_SUITE_ALPHA: repr(question.family.alpha), ENV_FAMILY: str(question.family.verdicts)})
    fixed = {ENV_GROUP: group, ENV_PART: str(part), ENV_MAX_ROUNDS: str(question.max_rounds), ENV_SHARE: "2"}
    return {**fixed, **asked}


def run_tags(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The tags of a lockstep session's run: group, side, part, mode, most rounds, the question asked and that its
    cases' calibration rounds are set aside; {} otherwise."""
    if not environ.get(ENV_CONTROL) or not environ.get(ENV_GROUP):
        return {}
    return {
        "ab_group": environ[ENV_GROUP],
        "ab_side": environ.get(ENV_SIDE, "?"),
        "ab_round": environ.get(ENV_PART, "0"),
        "ab_mode": "lockstep",
        "ab_max_rounds": environ.get(ENV_MAX_ROUNDS, ""),
        **({"ab_metric": environ[ENV_METRIC]} if environ.get(ENV_METRIC) else {}),
        **({"ab_boundary": environ[ENV_BOUNDARY]} if environ.get(ENV_BOUNDARY) else {}),
        **({"ab_repeat_within": environ[ENV_REPEAT]} if environ.get(ENV_REPEAT) else {}),
        **({"ab_suite_alpha": environ[ENV_SUITE_ALPHA]} if environ.get(ENV_SUITE_ALPHA) else {}),
        **({"ab_family": environ[ENV_FAMILY]} if environ.get(ENV_FAMILY) else {}),
        **SET_ASIDE_TAG,
    }
