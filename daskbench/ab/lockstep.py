"""Lockstep A/B: one session per side, alive for the whole comparison, measuring in turn.

The controller (this module, inside ``daskbench ab``) starts a pytest session for side A and
one for side B, each with its cluster started once, and a Unix socket between them and it
(`daskbench.ab.turns` has the protocol). For every case both sides have, it lets them measure
alternately, A B then B A (ABBA, so a trend within a round hits both alike), seconds apart and
never at the same time, and after each round reads the sequential verdict
(`daskbench.judge.sequential`): a case stops as soon as it is decided, or at ``max_rounds``,
or when its time is up. The sessions store their measurements as any session does (a round is
a repeat); `daskbench.judge.compare.compare_group` judges the group from the store.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daskbench.ab import turns
from daskbench.ab.sessions import Side, session_command, stop_session
from daskbench.errors import DaskbenchError
from daskbench.judge import sequential
from daskbench.judge.stats import Decision
from daskbench.text import first_few, plural

#: Seconds both sessions get to collect their tests and connect.
CONNECT_SECONDS = 600.0


@dataclass
class Link:
    """One side's connection, read a message at a time with one message of lookahead."""

    name: str
    stream: Any
    pending: dict[str, Any] | None = None
    closed: bool = False

    def peek(self) -> dict[str, Any] | None:
        """The next message (None once the session has closed the connection)."""
        if self.pending is None and not self.closed:
            line = self.stream.readline()
            self.closed = not line
            self.pending = json.loads(line) if line else None
        return self.pending

    def take(self) -> dict[str, Any] | None:
        found, self.pending = self.peek(), None
        return found

    def send(self, message: Mapping[str, Any]) -> None:
        self.stream.write(json.dumps(message) + "\n")
        self.stream.flush()


@dataclass
class CaseResult:
    """One case's rounds in this part: the pairs measured and why it stopped."""

    key: str
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0


@dataclass
class Lockstep:
    """Runs one part of a lockstep group: two sessions, every common case until decided."""

    sides: Mapping[str, Side]
    command: Callable[[Side], list[str]]  # the pytest command line of a side
    environment: Callable[[Side], dict[str, str]]  # and its environment
    floor: float
    max_rounds: int
    max_seconds: float
    log_dir: Path
    say: Callable[[str], None] = print
    exact: bool = False  # --rounds N: every case runs exactly max_rounds rounds
    rounds_said: bool = True  # a line per round; False: only the line that ends a case
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run(self) -> list[CaseResult]:
        """Start both sessions, agree on the cases, run each in turn; returns what was measured."""
        path = self.log_dir / "control.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(path))
            server.listen(2)
            try:
                self._start(path)
                links = self._connect(server)
                results = [self._case(key, links) for key in self._plan(links)]
                self._wait()
            except BaseException:
                self.stop()
                raise
        return results

    def _start(self, path: Path) -> None:
        for name, side in self.sides.items():
            env = {**self.environment(side), turns.ENV_CONTROL: str(path), turns.ENV_SIDE: name}
            with (self.log_dir / f"{name}.log").open("w") as log:
                self.children[name] = subprocess.Popen(
                    self.command(side), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )

    def _connect(self, server: socket.socket) -> dict[str, Link]:
        """Both sessions' connections, named by the side each says it is; a session that ends
        first is one error line with the end of its log."""
        links: dict[str, Link] = {}
        deadline = time.monotonic() + CONNECT_SECONDS
        while len(links) < len(self.sides):
            self._check_alive()
            if time.monotonic() > deadline:
                raise DaskbenchError(f"the sessions did not start within {CONNECT_SECONDS:.0f} s; logs: {self.log_dir}")
            if select.select([server], [], [], 1.0)[0]:
                conn, _ = server.accept()
                link = Link("?", conn.makefile("rw", encoding="utf-8", buffering=1))
                hello = link.peek() or {}
                link.name = str(hello.get("side", "?"))
                links[link.name] = link
        return links

    def _check_alive(self) -> None:
        for name, child in self.children.items():
            if child.poll() is not None:
                log = self.log_dir / f"{name}.log"
                for line in log.read_text(errors="replace").splitlines()[-12:]:
                    self.say(f"  {name}| {line}"[:120])
                raise DaskbenchError(
                    f"side {name}'s session ended before it could measure (pytest exit {child.returncode}); its log: {log}"
                )

    def _plan(self, links: Mapping[str, Link]) -> list[str]:
        """The cases both sides have, in A's order; the rest is said once and not measured."""
        plans = {name: [str(key) for key in (link.take() or {}).get("plan", [])] for name, link in links.items()}
        common = [key for key in plans["A"] if key in set(plans["B"])]
        for name, keys in plans.items():
            alone = [key for key in keys if key not in common]
            if alone:
                self.say(f"ab: {plural(len(alone), 'case')} only side {name} has, not measured: {first_few(alone, 2)}")
        if not common:
            raise DaskbenchError("sides A and B have no benchmark in common; check the arguments after --")
        for link in links.values():
            link.send({"plan": common})
        return common

    def _case(self, key: str, links: Mapping[str, Link]) -> CaseResult:
        """Rounds of ``key`` until decided, out of rounds or out of time; then both sides move on."""
        result = CaseResult(key)
        started = time.monotonic()
        while not result.stopped:
            order = ("A", "B") if len(result.a) % 2 == 0 else ("B", "A")
            values: dict[str, float] = {}
            for name in order:
                values[name] = self._turn(links[name], key, len(result.a), result)
                if result.stopped:
                    break
            if result.stopped:  # a side could not measure this round: said, and the case ends here
                self.say(f"ab: {key.split('::', 1)[-1][:60]}: {result.stopped}"[:120])
                break
            result.a.append(values["A"])
            result.b.append(values["B"])
            result.seconds = time.monotonic() - started
            decision = sequential.sequential_decision(result.a, result.b, self.floor, self.max_rounds)
            result.stopped = self._why_stop(result, decision)
            if self.rounds_said or result.stopped:
                self.say(round_line(result, decision))
        for link in links.values():
            if _ready_for(link.peek(), key):
                link.take()
                link.send({"go": False})
        return result

    def _turn(self, link: Link, key: str, round_: int, result: CaseResult) -> float:
        """One measurement of ``key`` by one side; sets ``result.stopped`` when it cannot count."""
        if not _ready_for(link.peek(), key, round_):
            result.stopped = f"side {link.name} left this case (its test ended or failed before measuring)"
            return 0.0
        link.take()
        link.send({"go": True})
        done = link.peek() or {}
        if done.get("done") != key:  # its test ended without measuring (an error before it): not consumed
            result.stopped = f"side {link.name} ended this case without a measurement in round {round_ + 1}"
            return 0.0
        link.take()
        value, outcome = done.get("value"), str(done.get("outcome", "lost"))
        if outcome != "passed" or not isinstance(value, int | float):
            result.stopped = f"side {link.name} {outcome} in round {round_ + 1}"
            return 0.0
        return float(value)

    def _why_stop(self, result: CaseResult, decision: Decision) -> str:
        if self.exact:
            return f"{self.max_rounds} rounds, as asked" if len(result.a) >= self.max_rounds else ""
        if sequential.is_decided(decision):
            return f"decided after {len(result.a)} rounds"
        if len(result.a) >= self.max_rounds:
            return f"not decided: --max-rounds {self.max_rounds} reached"
        if result.seconds >= self.max_seconds:
            return f"not decided: --max-time reached after {len(result.a)} rounds"
        return ""

    def _wait(self) -> None:
        for name, child in self.children.items():
            code = child.wait()
            if code not in (0, 1):
                raise DaskbenchError(
                    f"side {name}'s session ended with pytest exit {code}; its log: {self.log_dir / f'{name}.log'}"
                )

    def stop(self) -> None:
        """Ctrl-C or an error: both sessions stop as pytest does on Ctrl-C (the cut measurement is
        recorded as interrupted; every finished one is kept)."""
        for child in self.children.values():
            if child.poll() is None:
                stop_session(child)


def _ready_for(message: Mapping[str, Any] | None, key: str, round_: int | None = None) -> bool:
    """Whether ``message`` asks to measure ``key`` (in round ``round_``, when given)."""
    if not message or message.get("ready") != key:
        return False
    return round_ is None or message.get("round") == round_


def round_line(result: CaseResult, decision: Decision) -> str:
    """``ab: <case> round 7: B/A 1.043 (0.98-1.11), 1m02s`` and, at the end, why it stopped."""
    shown = f"{decision.ratio:.3f}" if decision.ratio is not None else "-"
    interval = f" ({decision.ci_low:.2f}-{decision.ci_high:.2f})" if decision.ci_low and decision.ci_high else ""
    minutes, seconds = divmod(int(result.seconds), 60)
    tail = f": {decision.verdict}, {result.stopped}" if result.stopped else ""
    name = result.key.split("::", 1)[-1]
    head = f"ab: {name[:60]} round {len(result.a)}: B/A {shown}{interval}, {minutes}m{seconds:02d}s"
    return (head + tail)[:120]


def pytest_command(python: str, db: str, label: str, pytest_args: Sequence[str]) -> list[str]:
    """The pytest session of one side in lockstep: one repeat per turn, the store and label given."""
    return session_command(python, db, label, ["--repeat", "1", *pytest_args])


def run_group(
    group: str,
    sides: Mapping[str, Side],
    db: str,
    pytest_args: Sequence[str],
    *,
    floor: float,
    max_rounds: int,
    max_seconds: float,
    say: Callable[[str], None],
    environ: Mapping[str, str] | None = None,
    wrap: Callable[[Side, list[str]], list[str]] | None = None,
) -> list[CaseResult]:
    """One lockstep group of two interpreters in one part (``bisect``, ``confirm``, ``pr``): the sides'
    sessions labelled ``GROUP-A1`` / ``GROUP-B1``, in ``environ`` (default this process's) with the turn
    variables, each command passed through ``wrap`` when given (e.g. to start it in another folder); a
    line only as each case ends."""
    shared = turns.session_env(group, 0, max_rounds)
    base = dict(os.environ if environ is None else environ)

    def command(side: Side) -> list[str]:
        session = pytest_command(side.python, db, f"{group}-{side.name}1", pytest_args)
        return wrap(side, session) if wrap else session

    return Lockstep(
        sides,
        command=command,
        environment=lambda side: {**base, **shared},
        floor=floor,
        max_rounds=max_rounds,
        max_seconds=max_seconds,
        log_dir=Path(tempfile.mkdtemp(prefix="daskbench-lockstep-")),
        say=say,
        rounds_said=False,
    ).run()
