"""Lockstep A/B: one session per side, alive for the whole comparison, measuring in turn.

The controller (this module, inside ``daskbench ab``) starts a pytest session for side A and
one for side B, each with its cluster started once, and a Unix socket between them and it
(`daskbench.lockstep.turns` has the protocol). For every case both sides have, it lets them measure
alternately, A B then B A (ABBA, so a trend within a round hits both alike), seconds apart and
never at the same time, and after each round reads the sequential verdict of the question asked
(`daskbench.judge.sequential.Question`: a metric against the floor, or a bisection step's boundary): a
case stops as soon as it is decided, or at its most rounds, or when its time is up. The sessions store
their measurements as any session does (a round is a repeat); `daskbench.judge.compare.compare_group`
judges the group from the store.

A comparison may come in parts (`Part`): a pair of sessions per part, each part measuring only some cases
(``only``) up to a number of rounds each (``targets``), carrying on from the rounds earlier parts measured
(``prior``) and stopping at the comparison's deadline: `daskbench.lockstep.parts` spends one budget over a
whole suite that way. Every turn's cost is added up (`daskbench.lockstep.cost.RoundCost`).
"""

from __future__ import annotations

import contextlib
import json
import math
import select
import socket
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.judge import repeat, suite
from daskbench.judge.sequential import Question
from daskbench.lockstep import loops, turns
from daskbench.lockstep.case import CaseResult, round_line
from daskbench.lockstep.sessions import Side, ended, log_cause, session_command, stop_sessions
from daskbench.text import first_few, plural

#: Seconds both sessions get to collect their tests and connect.
CONNECT_SECONDS = 600.0


#: pytest's exit code when it collected no test (``pytest.ExitCode.NO_TESTS_COLLECTED``).
NO_TESTS_COLLECTED = 5


@dataclass
class Link:
    """One side's connection, read a message at a time with one message of lookahead."""

    name: str
    stream: Any
    pending: dict[str, Any] | None = None
    closed: bool = False

    def peek(self) -> dict[str, Any] | None:
        """The next message (None once the session has closed the connection); one line for a message that
        is not the protocol's (a JSON object a line)."""
        if self.pending is None and not self.closed:
            try:
                line = self.stream.readline()
            except OSError:  # reset: the session died with our last message unread
                line = ""
            self.closed = not line
            self.pending = _message(line, self.name) if line else None
        return self.pending

    def take(self) -> dict[str, Any] | None:
        found, self.pending = self.peek(), None
        return found

    def send(self, message: Mapping[str, Any]) -> None:
        """Send ``message``; to a session that is gone (killed), nothing: its case ends as left, and how it
        ended is said when it is waited for (a BrokenPipeError would read as our stdout closed: exit 0)."""
        if self.closed:
            return
        try:
            self.stream.write(json.dumps(message) + "\n")
            self.stream.flush()
        except OSError:
            self.closed = True


@dataclass(frozen=True)
class Part:
    """Which cases one pair of sessions measures and how far: ``only`` these keys (None: every common case),
    each up to ``targets[key]`` rounds in all (else ``rounds``; None: the question's most rounds), carrying
    on from ``prior``; nothing after ``deadline`` (a ``time.monotonic()``; None: none). ``number`` counts
    from 0."""

    number: int = 0
    only: Collection[str] | None = None
    targets: Mapping[str, int] = field(default_factory=dict)
    rounds: int | None = None
    prior: Mapping[str, CaseResult] = field(default_factory=dict)
    deadline: float | None = None


@dataclass
class Lockstep:
    """Runs one part of a lockstep group: two sessions, every case of the part until decided."""

    sides: Mapping[str, Side]
    command: Callable[[Side], list[str]]  # the pytest command line of a side
    environment: Callable[[Side], dict[str, str]]  # and its environment
    question: Question
    max_seconds: float
    log_dir: Path
    say: Callable[[str], None] = print
    exact: bool = False  # --rounds N: every case runs exactly the question's most rounds
    rounds_said: bool = True  # a line per round; False: only the line that ends a case
    part: Part = field(default_factory=Part)
    #: Which of the cases both sides have this comparison measures (a shard's: `daskbench.shards.plan.selector`),
    #: given their keys and what side A calls each; None: every one. The family of false alarms still counts all.
    pick: Callable[[Sequence[str], Mapping[str, str]], Sequence[str]] | None = None
    #: Seconds of compute a measurement aims at (`daskbench.lockstep.loops`; 0: one call per measurement).
    loop_target: float = field(default_factory=loops.target_from_env)
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # what side A calls each case (its pytest name)
    #: Seconds from starting the sessions to the end of the part, and in its cases' rounds.
    wall: float = 0.0
    in_rounds: float = 0.0

    @property
    def startup(self) -> float:
        """The part's time outside its cases' rounds: sessions starting, clusters starting, tests set up."""
        return max(self.wall - self.in_rounds, 0.0)

    def run(self) -> list[CaseResult]:
        """Start both sessions, agree on the cases, run each in turn; returns what was measured."""
        path = self.log_dir / "control.sock"
        began = time.monotonic()
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
            finally:
                self.wall = time.monotonic() - began
        self._tidy(path)
        return results

    def _tidy(self, socket_path: Path) -> None:
        """After a part that ended well, its sessions' logs and socket go, and their folder when that leaves it empty:
        only an error line names them (a nightly's thousands of parts left thousands of folders in the temp dir)."""
        for made in (socket_path, *(self.log_dir / f"{name}.log" for name in self.sides)):
            made.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.log_dir.rmdir()

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
                if link.name in links or link.name not in self.sides:
                    raise DaskbenchError(
                        f"a session said it is side {link.name!r}: twice, or no side of this comparison "
                        f"({', '.join(self.sides)}); the sessions' logs: {self.log_dir}"
                    )
                links[link.name] = link
        return links

    def _check_alive(self) -> None:
        """One line, the session's own words in it, when a side's session ended before it connected."""
        for name, child in self.children.items():
            if child.poll() is not None:
                log = self.log_dir / f"{name}.log"
                if child.returncode == NO_TESTS_COLLECTED:
                    raise DaskbenchError(
                        f"side {name}'s session found no benchmark to measure (pytest exit 5): run it in the "
                        f"folder that holds your benchmarks, or name them after --; its log: {log}"
                    )
                raise DaskbenchError(
                    f"side {name}'s session ended before it could measure ({ended(child.returncode)}: "
                    f"{log_cause(log)}); its log: {log}"
                )

    def _plan(self, links: Mapping[str, Link]) -> list[str]:
        """The cases both sides have, in A's order; the rest is said once and not measured."""
        messages = {name: link.take() or {} for name, link in links.items()}
        plans = {name: [str(key) for key in message.get("plan", [])] for name, message in messages.items()}
        found = messages["A"].get("names")
        self.names = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
        common = [key for key in plans["A"] if key in set(plans["B"])]
        for name, keys in plans.items():
            alone = [key for key in keys if key not in common]
            if alone and self.part.number == 0:
                self.say(f"ab: {plural(len(alone), 'case')} only side {name} has, not measured: {first_few(alone, 2)}")
        if not common:
            raise DaskbenchError("sides A and B have no benchmark in common; check the arguments after --")
        chosen = self._chosen(common)
        for link in links.values():
            link.send({"plan": chosen})
        return chosen

    def _chosen(self, common: list[str]) -> list[str]:
        """The cases this part measures, of the ``common`` ones: this comparison's (``pick``: a shard's), this
        part's (``only``). False alarms are counted over every common case, in every metric judged."""
        family = self.question.family
        if family.alpha is not None:
            counted = suite.family_size(len(common), suite.metrics_judged(self.question.metric))
            self.question = replace(self.question, family=family.at_least(counted))
        chosen = common if self.pick is None else [key for key in common if key in set(self.pick(common, self.names))]
        if self.pick is not None and self.part.number == 0:
            self.say(f"ab: {plural(len(chosen), 'case')} of the {len(common)} both sides have are this comparison's")
        return chosen if self.part.only is None else [key for key in chosen if key in set(self.part.only)]

    def _case(self, key: str, links: Mapping[str, Link]) -> CaseResult:
        """Rounds of ``key`` until decided, at its target, out of rounds or out of time; then both sides move on."""
        prior = self.part.prior.get(key)
        result = prior.carried() if prior is not None else CaseResult(key, self.names.get(key, ""))
        offset, counted = result.rounds, result.measured  # the sessions count this part's rounds from 0
        started, before = time.monotonic(), result.seconds
        result.stopped = self._out_of_time(result)
        while not result.stopped:
            dones = self._round(key, links, result, counted)
            if result.stopped:  # a side could not measure this round: said, and the case ends here
                result.failed = True
                self.say(f"ab: {result.shown[:60]}: {result.stopped}"[:120])
                break
            judging = time.monotonic()
            result.seconds = before + judging - started
            if result.set_aside_calibration():
                self.say(
                    f"ab: {result.shown[:60]}: its first round (one call a side) set aside, not judged: it "
                    f"calibrated {result.calls} calls a measurement"[:120]
                )
            result.judged = repeat.judge(self.question, result.parts(), result.busy_parts())
            result.stopped = self._why_stop(result, offset)
            if self.rounds_said or result.stopped:
                self.say(round_line(result, result.judged.decision))
            result.loops = loops.next_loops(result, dones, self.loop_target)
            result.cost.add_wall(time.monotonic() - judging)
        result.seconds = before + time.monotonic() - started
        self.in_rounds += result.seconds - before
        for link in links.values():
            if _ready_for(link.peek(), key):
                link.take()
                link.send({"go": False})
        return result

    def _round(self, key: str, links: Mapping[str, Link], result: CaseResult, counted: int) -> list[Mapping[str, Any]]:
        """One round of ``key``, ABBA, each side making ``result.loops`` calls: its values appended to ``result``,
        the sides' "done" messages returned; a side that could not measure sets ``result.stopped``. ``counted``:
        the rounds it had measured before this part (the sessions count this part's from 0)."""
        order = ("A", "B") if result.measured % 2 == 0 else ("B", "A")
        values: dict[str, float] = {}
        dones: list[Mapping[str, Any]] = []
        began = time.monotonic()
        for name in order:
            values[name], done = self._turn(links[name], key, result.measured - counted, result)
            dones.append(done)
            if result.stopped:
                return dones
        result.a.append(values["A"])
        result.b.append(values["B"])
        read = [float(done["others"]) for done in dones if isinstance(done.get("others"), (int, float))]
        result.others.append(sum(read) / len(read) if read else None)
        result.calls = min(loops.ran(done) for done in dones)
        result.timed.append((result.calls, time.monotonic() - began))
        return dones

    def _turn(self, link: Link, key: str, round_: int, result: CaseResult) -> tuple[float, Mapping[str, Any]]:
        """One measurement of ``key`` by one side (its ``round_`` of this part), ``result.loops`` calls of it; its
        value and "done" message. Sets ``result.stopped`` when it cannot count. The value is the question's
        metric (the runtime when the side does not say it), per call."""
        if not _ready_for(link.peek(), key, round_):
            result.stopped = f"side {link.name} left this case (its test ended or failed before measuring)"
            return 0.0, {}
        link.take()
        said = time.monotonic()
        link.send({"go": True, "loops": result.loops})
        done = link.peek() or {}
        if done.get("done") != key:  # its test ended without measuring (an error before it): not consumed
            result.stopped = f"side {link.name} ended this case without a measurement in round {result.measured + 1}"
            return 0.0, {}
        link.take()
        result.cost.add_turn(done, time.monotonic() - said)
        value, outcome = _value(done, self.question.metric), str(done.get("outcome", "lost"))
        if outcome != "passed" or value is None:
            why = outcome if outcome != "passed" else f"measured no {self.question.metric}"
            result.stopped = f"side {link.name} {why} in round {result.measured + 1}"
            return 0.0, done
        return value, done

    def _why_stop(self, result: CaseResult, offset: int) -> str:
        """Why ``result`` (whose rounds before ``offset`` came from earlier parts) gets no more rounds here."""
        most, judged = self.question.max_rounds, result.judged
        if self.exact:
            return f"{most} rounds, as asked" if result.rounds >= most else ""
        if result.decided:
            return f"decided after {result.rounds} rounds"
        if judged is not None and judged.settled:
            return f"the sessions disagree after {result.rounds} rounds"
        if judged is not None and judged.repeating and judged.first > offset:
            return "to repeat in fresh sessions"
        if result.plan_rounds >= most:
            return f"not decided: --max-rounds {most} reached"
        if result.seconds >= self.max_seconds:
            return f"not decided: --max-time reached after {result.rounds} rounds"
        return self._out_of_time(result)

    def _out_of_time(self, result: CaseResult) -> str:
        """Why this part gives ``result`` no more rounds now: its target reached, or the deadline passed."""
        target = self.part.targets.get(result.key, self.part.rounds)
        if target is not None and result.rounds >= target and not self.exact:
            return f"not decided yet: this part's {plural(target, 'round')} reached"
        if self.part.deadline is not None and time.monotonic() >= self.part.deadline:
            return f"not decided: the budget ended after {plural(result.rounds, 'round')}"
        return ""

    def _wait(self) -> None:
        for name, child in self.children.items():
            code = child.wait()
            if code not in (0, 1):
                log = self.log_dir / f"{name}.log"
                raise DaskbenchError(f"side {name}'s session ended ({ended(code)}: {log_cause(log)}); its log: {log}")

    def stop(self) -> None:
        """Ctrl-C or an error: both sessions stop as pytest does on Ctrl-C (the cut measurement is
        recorded as interrupted; every finished one is kept)."""
        stop_sessions(list(self.children.values()))  # one that ended already: what is left of its group (its cluster)


def _ready_for(message: Mapping[str, Any] | None, key: str, round_: int | None = None) -> bool:
    """Whether ``message`` asks to measure ``key`` (in round ``round_``, when given)."""
    if not message or message.get("ready") != key:
        return False
    return round_ is None or message.get("round") == round_


def _value(done: Mapping[str, Any], metric: str) -> float | None:
    """The value of ``metric`` a turn measured: from its metrics, or its runtime (``value``, what every
    daskbench session says) when the metric is the runtime."""
    found = done.get("metrics")
    metrics: Mapping[str, Any] = found if isinstance(found, dict) else {}
    value = metrics.get(metric, done.get("value") if metric == "runtime_s" else None)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None  # no value at all (NaN, infinite, text): never judged
    declared = catalog.get(metric) if catalog.is_declared(metric) else None
    return None if declared is not None and declared.non_negative and value < 0 else float(value)


def _message(line: str, side: str) -> dict[str, Any]:
    """One line of the control channel as its JSON object; one line naming the side for anything else."""
    try:
        found = json.loads(line)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        who = "a session" if side == "?" else f"side {side}"
        raise DaskbenchError(
            f"{who} said what is not daskbench's protocol ({line.strip()[:80]!r}); is its daskbench this one?"
        )
    return found


def pytest_command(python: str, db: str, label: str, pytest_args: Sequence[str]) -> list[str]:
    """The pytest session of one side in lockstep: one repeat per turn, the store and label given."""
    return session_command(python, db, label, ["--repeat", "1", *pytest_args])
