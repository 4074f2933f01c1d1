"""What runs a command: the exit codes (one meaning each), the parser (its ``-- pytest args`` cut and its
usage errors shown safely), the streams every command prints through, and the one place a command's
errors and interrupts become exit codes. `daskbench.cli` builds the parser of the commands from here."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from daskbench import config
from daskbench.errors import DaskbenchError, RegressionFound
from daskbench.text import say, terminal_safe

if TYPE_CHECKING:
    from daskbench.verdicts import Verdict

#: Exit codes, one meaning each (`daskbench --help` lists them, as the package's docstring does).
EXIT_OK = 0
#: A regression: found (compare, alert, ab, pr), confirmed (confirm), or its first bad release named (bisect).
EXIT_REGRESSION = 1
#: The command could not run: bad input, a missing baseline or run, an unusable store, a failed build.
EXIT_ERROR = 2
#: Measured, but not decided: some case undecided or not measured (ab, pr, confirm), a bisection step still
#: inconclusive at --rounds-cap (--group continues it); a comparison that measured nothing is never "ok".
EXIT_UNDECIDED = 3
#: Interrupted (Ctrl-C); what was finished is kept.
EXIT_INTERRUPTED = 130
EXIT_CODES = (
    "exit codes: 0 ok (nothing regressed), 1 a regression found, confirmed or bisected, 2 could not run (bad "
    "input, missing baseline, unusable store), 3 undecided (some case without a verdict, or nothing measured), "
    "130 interrupted"
)


def verdicts_exit(verdicts: Sequence[Verdict], not_measured: int = 0) -> int:
    """The exit code of a side-by-side comparison's verdicts (`daskbench.judge.suite.state`): 1 a regression,
    3 some case undecided or not measured (or none measured at all), 0 every case decided and none regressed."""
    from daskbench.judge.suite import state

    return {"regressed": EXIT_REGRESSION, "undecided": EXIT_UNDECIDED}.get(state(verdicts, not_measured), EXIT_OK)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (which echo the argument given: ``invalid choice: ...``)
    are shown as `config.shown_message` shows every message: secrets hidden, control characters escaped.

    A command given `common_args.add_pytest_args` takes everything after the first ``--`` for pytest,
    whatever stands before it: options before or after the positionals, ``--`` right after them."""

    takes_pytest_args = False

    def error(self, message: str) -> NoReturn:
        super().error(config.shown_message(message))

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self.takes_pytest_args:
            return super().parse_known_args(args, namespace)
        ours, theirs = split_pytest_args(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(ours, namespace)
        stray = [*parsed.pytest_args, *extras]
        if stray:
            self.error(f"unrecognized arguments: {' '.join(stray)} (pytest's arguments go after --, e.g. -- -k ocean)")
        parsed.pytest_args = theirs
        parsed.given_args = ours  # as typed: what a command prints to be typed again (`bisect.again`)
        return parsed, []


def split_pytest_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` cut at its first ``--``: daskbench's arguments before it, pytest's after it (none without)."""
    given = list(argv)
    if "--" not in given:
        return given, []
    cut = given.index("--")
    return given[:cut], given[cut + 1 :]


class InertStream:
    """A text stream that passes everything written through `terminal_safe` (newlines and tabs kept),
    so nothing a command prints, whatever a run, a case or an import holds, acts on the terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_safe(text, keep="\n\t"))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def inert_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as `InertStream` while a command runs; restored after."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def stop_on_sigterm() -> None:
    """SIGTERM (a CI job cancelled, ``kill PID``) stops a command as Ctrl-C does; only the main thread may ask."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM: what a Ctrl-C does (sessions and clusters this command started are stopped, exit 130)."""
    raise KeyboardInterrupt


def run_command(args: argparse.Namespace) -> int:
    """The command ``args`` chose, its outcome as an exit code: an error is one line (exit 2), a regression
    its summary (exit 1), Ctrl-C ``interrupted`` (exit 130)."""
    try:
        return int(args.func(args) or EXIT_OK)
    except DaskbenchError as exc:
        say(f"error: {config.shown_message(str(exc))}", wrap=exc.wrap)
        return EXIT_ERROR
    except RegressionFound as exc:
        say(str(exc), wrap=False)
        return EXIT_REGRESSION
    except KeyboardInterrupt:
        # Decided: exit 130. A Ctrl-C arriving later, while the interpreter shuts down (its default
        # handler back), would kill the process by SIGINT instead; seen in CI after `ab` stopped its sessions.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`daskbench runs | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
