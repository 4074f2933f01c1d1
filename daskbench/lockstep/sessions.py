"""Interleaved A/B sessions: the same suite in two environments, alternately, in balanced rounds.

Two runs made hours apart are two sessions, and sessions drift (10-21% measured here);
repeats inside one run cannot show that. `GroupRunner` therefore runs short sessions of
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

import contextlib
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
#: What a side's sessions import, tried in order by `check_side` in the side's interpreter: the first that
#: fails is named (exit `_PROBE_FAILED`, ``module: Error: message`` on stderr); else `_PROBE_OK` is printed.
_PROBED = ("dask", "distributed", "daskbench.plugin.hooks")
_PROBE_OK, _PROBE_FAILED = "daskbench-side-ok", 3
_PROBE = (
    "import importlib, sys\n"
    f"for name in {_PROBED!r}:\n"
    "    try:\n        importlib.import_module(name)\n"
    "    except BaseException as exc:\n"
    "        said = (str(exc).splitlines() or [''])[0]\n"
    "        print(f'{name}: {type(exc).__name__}: {said}', file=sys.stderr)\n"
    f"        sys.exit({_PROBE_FAILED})\n"
    f"print({_PROBE_OK!r})"
)


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
    """Fail before any session starts (so before any run row is written) if the side's interpreter, with
    the side's variables, cannot run daskbench's plugin: no such file, not a python (it must print
    `_PROBE_OK`), or a module the sessions import that fails (named, with its error's first line)."""
    flag = f"--{side.name.lower()}-python {side.python}"
    python = shutil.which(side.python) or side.python
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        raise DaskbenchError(f"{flag}: no such interpreter; give the path to a python")
    try:
        environment = {**os.environ, **side.env}
        probe = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env=environment,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DaskbenchError(f"{flag} cannot be run ({getattr(exc, 'strerror', None) or exc})") from None
    failed = probe.stderr.strip().splitlines()[-1:] if probe.returncode == _PROBE_FAILED else []
    if failed and failed[0].partition(":")[0] in _PROBED:
        module, _, why = failed[0].partition(": ")
        package = "daskbench" if module.startswith("daskbench") else module
        raise DaskbenchError(
            f"side {side.name}: {flag} cannot import {module} ({why[:200]}); install it there: "
            f"{python} -m pip install {package}"
        )
    if probe.returncode != 0 or probe.stdout.strip().splitlines()[-1:] != [_PROBE_OK]:
        said = (probe.stderr.strip().splitlines() or [f"exit {probe.returncode}, nothing said"])[-1][:200]
        raise DaskbenchError(
            f"side {side.name}: {flag} is not a python that can run daskbench ({said}); give the path to a python "
            "with daskbench installed"
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
        with contextlib.suppress(OSError):  # empty once every session ran: nothing left to name
            self.log_dir.rmdir()
        return sessions

    def _session(self, number: int, side_name: str) -> Session:
        side = self.sides[side_name]
        label = f"{self.group}-{side_name}{number + 1}"  # counted as the progress line counts rounds
        command = session_command(side.python, self.db, label, self.pytest_args)
        self.log_dir.mkdir(exist_ok=True)  # a later call of `run` after the last one tidied it away
        log = self.log_dir / f"{label}.log"
        start = time.monotonic()
        code = run_logged(command, {**os.environ, **side.env}, log)
        seconds = time.monotonic() - start
        run_id = self._tag(label, number, side_name)
        if code not in _SESSION_RAN or run_id is None:
            raise DaskbenchError(
                f"side {side_name} round {number + 1} could not run ({ended(code)}: {log_cause(log)}); its log: {log}"
            )
        log.unlink(missing_ok=True)  # only the line of a session that could not run names its log
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
    """SIGINT to the session (pytest records it as interrupted and closes its cluster), then SIGKILL; then
    SIGKILL to what is left of its process group (its own session: a cluster's processes outliving a
    session that was killed)."""
    stop_sessions([child])


def stop_sessions(children: Sequence[subprocess.Popen[bytes]], grace: float = 60.0) -> None:
    """`stop_session` for several sessions at once: SIGINT to all, so each is stopped as Ctrl-C stops it while the
    others still are (none waits out another's stop, none sees the comparison end first and finishes as if it
    had run to its end), up to ``grace`` seconds for all; then SIGKILL to each one left and to their groups."""
    for child in children:
        _signal_group(child, signal.SIGINT)
    deadline = time.monotonic() + grace
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            _signal_group(child, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=10)
    for child in children:
        _signal_group(child, signal.SIGKILL)


def _signal_group(child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """``sig`` to the process group of ``child`` (its session's own); nothing when the group is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, sig)


def ended(code: int) -> str:
    """How a session's process ended, as a line says it: ``pytest exit 4``, ``killed by SIGKILL``."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"pytest exit {code}"


def log_cause(log: Path) -> str:
    """The line of a session's log that says why it ended: pytest's ``ERROR:`` line (a usage error), else
    the last exception line (``E   ModuleNotFoundError: ...``, a conftest that failed), else its last line."""
    try:
        lines = [line.rstrip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError as exc:
        return f"its log cannot be read ({exc.strerror or exc})"
    chosen = [line for line in lines if line.startswith(("ERROR:", "error:"))][:1]
    chosen = chosen or [line[1:].strip() for line in lines if line.startswith("E ")][-1:] or lines[-1:]
    return chosen[0].strip()[:200] if chosen else "it printed nothing"


def progress_line(index: int, total: int, number: int, rounds: int, side: str, elapsed: float) -> str:
    left = f", about {_clock(elapsed / index * (total - index))} left" if index else ""
    return (
        f"ab: round {number + 1}/{rounds}, side {side} (session {index + 1}/{total}; elapsed {_clock(elapsed)}{left})"
    )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
