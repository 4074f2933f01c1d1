"""Interleaved A/B sessions: the same suite in two environments, alternately, in balanced rounds.

Two runs made hours apart are two sessions, and sessions drift (10-21% measured here);
repeats inside one run cannot show that. `run_group` therefore runs short sessions of
side A and side B alternately (round 0: A then B, round 1: B then A, ...: ABBA, so a
trend over the rounds hits both sides alike), tags each session's run in the store with
its group, side and round (and the side's python and the names, never the values, of its
environment variables), and `daskbench.judge.compare.compare_group` judges the per-round
ratios B/A, in which the drift between rounds cancels.

A side is a Python interpreter (default: this one) plus environment variables, so it can
be another virtualenv (another dask version) or another setting (``DASKBENCH_SATURATION``,
any ``DASK_*`` config) of this one.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from daskbench.errors import DaskbenchError
from daskbench.judge.compare import AB_GROUP, AB_ROUND, AB_SIDE, group_rounds
from daskbench.judge.sequential import MIN_ROUNDS
from daskbench.store import Store
from daskbench.text import plural

_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Flags `run_group` sets itself on each session; a user's copy would break the tagging.
RESERVED_FLAGS = ("--db", "--label")
#: pytest exit codes of a session that ran: 0 all passed, 1 some benchmark failed (recorded).
_SESSION_RAN = (0, 1)


@dataclass(frozen=True)
class Side:
    """One side of the comparison: an interpreter and the environment variables it gets (and, for an
    environment rebuilt from a run's record, that run: ``daskbench ab --a-from/--b-from``)."""

    name: str
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)
    env_from: str | None = None  # the run whose recorded versions built ``python``'s environment


@dataclass(frozen=True)
class Session:
    """One finished session of a group."""

    round: int
    side: str
    run_id: str
    seconds: float
    exit_code: int


def parse_env(items: Sequence[str], flag: str) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` -> a mapping; one clear error per malformed item."""
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY.match(key):
            raise DaskbenchError(
                f"{flag} {item!r}: expected KEY=VALUE with a variable name, e.g. {flag} DASKBENCH_SATURATION=inf"
            )
        env[key] = value
    return env


def check_side(side: Side) -> None:
    """Fail before any session starts if the side's interpreter cannot run daskbench's plugin."""
    python = shutil.which(side.python) or side.python
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        raise DaskbenchError(
            f"--{side.name.lower()}-python {side.python}: no such interpreter; give the path to a python"
        )
    probe = subprocess.run([python, "-c", "import daskbench.plugin.hooks"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        raise DaskbenchError(
            f"--{side.name.lower()}-python {side.python} cannot import daskbench; "
            f"install it there: {python} -m pip install daskbench"
        )


def overridden(pytest_args: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """The ``DASKBENCH_*`` variables of ``env`` that a flag in ``pytest_args`` beats: variable -> flag."""
    from daskbench.config import OPTIONS

    given = {arg.split("=", 1)[0] for arg in pytest_args if arg.startswith("--")}
    return {option.env: option.flag for option in OPTIONS if option.env in env and option.flag in given}


def check_sides_differ(sides: Mapping[str, Side], pytest_args: Sequence[str]) -> None:
    """Refuse sides that would measure the same thing because every variable that tells them apart is
    beaten by a flag after ``--`` (flags win over environment variables); an A/A check (sides alike
    on purpose) passes."""
    a, b = sides["A"], sides["B"]
    differing = {key for key in {*a.env, *b.env} if a.env.get(key) != b.env.get(key)}
    if a.python != b.python or not differing:
        return
    beaten = {**overridden(pytest_args, a.env), **overridden(pytest_args, b.env)}
    if differing <= beaten.keys():
        key = sorted(differing)[0]
        raise DaskbenchError(
            f"{key} tells the sides apart, but {beaten[key]} after -- overrides it on both (flags beat "
            f"environment variables): drop {beaten[key]} from the pytest arguments, or give it per side"
        )


def pytest_arguments(args: Sequence[str]) -> list[str]:
    """The arguments after ``--`` for each pytest session; refuses the flags the sessions get from us."""
    given = list(args[1:] if args[:1] == ["--"] else args)
    for arg in given:
        if arg.split("=", 1)[0] in RESERVED_FLAGS:
            raise DaskbenchError(f"daskbench sets {arg.split('=', 1)[0]} on each session itself; give it before --")
    return given


def balanced_order(rounds: int, start: int = 0) -> list[tuple[int, str]]:
    """(round, side) in ABBA order: even rounds run A first, odd rounds B first."""
    return [(r, side) for r in range(start, rounds) for side in (("A", "B") if r % 2 == 0 else ("B", "A"))]


def new_group_name(prefix: str) -> str:
    """``<prefix>-<UTC date-time>``: the default name of an A/B or calibration group."""
    return f"{prefix}-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


@dataclass
class GroupRunner:
    """Runs the sessions of one group, one at a time, and tags their runs."""

    store: Store
    db: str
    group: str
    sides: Mapping[str, Side]
    pytest_args: Sequence[str]
    say: Callable[[str], None] = print
    max_rounds: int | None = None  # --rounds auto: the most rounds, tagged on every run
    log_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="daskbench-ab-")))

    def run(self, rounds: int, until: Callable[[], bool] | None = None, max_rounds: int | None = None) -> list[Session]:
        """Every missing session up to ``rounds``; complete rounds already stored are kept. With
        ``until``, stop after a complete round (from the third on) once it says the group is decided."""
        done = len(group_rounds(self.store, self.group))
        plan = balanced_order(rounds, start=done)
        if done:
            self.say(f"ab: group {self.group} has {plural(done, 'complete round')}; running rounds {done + 1}-{rounds}")
        self.max_rounds = max_rounds
        sessions: list[Session] = []
        started = time.monotonic()
        for index, (number, side) in enumerate(plan):
            self.say(progress_line(index, len(plan), number, rounds, side, time.monotonic() - started))
            sessions.append(self._session(number, side))
            if until is not None and index % 2 == 1 and number + 1 >= MIN_ROUNDS and until():
                self.say(f"ab: every case decided after {number + 1} rounds")
                break
        return sessions

    def _session(self, number: int, side_name: str) -> Session:
        side = self.sides[side_name]
        label = f"{self.group}-{side_name}{number + 1}"  # counted as the progress line counts rounds
        command = session_command(side.python, self.db, label, self.pytest_args)
        log = self.log_dir / f"{label}.log"
        start = time.monotonic()
        code = run_logged(command, {**os.environ, **side.env}, log)
        seconds = time.monotonic() - start
        run_id = self._tag(label, number, side_name)
        if code not in _SESSION_RAN or run_id is None:
            for line in log.read_text(errors="replace").splitlines()[-15:]:
                self.say(f"  {side_name}| {line}"[:120])
            raise DaskbenchError(
                f"side {side_name} round {number + 1} could not run (pytest exit {code}); its log: {log}"
            )
        return Session(number, side_name, run_id, seconds, code)

    def _tag(self, label: str, number: int, side: str) -> str | None:
        found = [run for run in self.store.runs() if run.label == label and not run.tags.get(AB_GROUP)]
        if not found:
            return None
        run_id = found[0].run_id
        chosen = self.sides[side]
        self.store.tag_run(
            run_id,
            {
                AB_GROUP: self.group,
                AB_SIDE: side,
                AB_ROUND: str(number),
                **side_tags(chosen),
                **({"ab_max_rounds": str(self.max_rounds)} if self.max_rounds else {}),
            },
        )
        return run_id


def side_tags(side: Side) -> dict[str, str]:
    """What a side's runs are tagged with: its python, its variables' names (never values), and the run
    its environment was rebuilt from (``ab_env_from``), if any."""
    tags = {"ab_python": side.python, "ab_env_keys": ",".join(sorted(side.env))}
    return {**tags, **({"ab_env_from": side.env_from} if side.env_from else {})}


def session_command(python: str, db: str, label: str, pytest_args: Sequence[str]) -> list[str]:
    """The ``pytest -m benchmark`` session of one side, into ``db`` under ``label``."""
    return [
        python,
        "-m",
        "pytest",
        "-m",
        "benchmark",
        "-p",
        "no:cacheprovider",
        "-q",
        "--db",
        db,
        "--label",
        label,
        *pytest_args,
    ]


def run_logged(command: list[str], env: Mapping[str, str], log: Path) -> int:
    """Run one session with its output in ``log``; Ctrl-C stops it cleanly and propagates."""
    with log.open("w") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True)
        try:
            return child.wait()
        except KeyboardInterrupt:
            stop_session(child)
            raise


def stop_session(child: subprocess.Popen[bytes]) -> None:
    """SIGINT to the session (pytest records it as interrupted and closes its cluster), then SIGKILL."""
    for sig, grace in ((signal.SIGINT, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(child.pid, sig)
            child.wait(timeout=grace)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def progress_line(index: int, total: int, number: int, rounds: int, side: str, elapsed: float) -> str:
    left = f", about {_clock(elapsed / index * (total - index))} left" if index else ""
    return (
        f"ab: round {number + 1}/{rounds}, side {side} (session {index + 1}/{total}; elapsed {_clock(elapsed)}{left})"
    )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
