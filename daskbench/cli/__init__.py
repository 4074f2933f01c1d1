"""`daskbench` command line: one module per group of subcommands, each with ``register``.

Shared pieces (flags, value parsers, printers, the progress writer) live in `daskbench.cli.common`;
a command module never imports another. Exit codes mean one thing each, for every command:

- 0: ok, nothing regressed (or nothing to do);
- 1: a regression: found (compare, alert, ab, pr), confirmed side by side (confirm), or its first bad
  release or commit named (bisect);
- 2: the command could not run: bad input (a usage error too), a missing baseline or run, an unusable
  store, a failed build;
- 3: measured but undecided: a bisection step still inconclusive at ``--rounds-cap`` (``--resume``);
- 130: interrupted (Ctrl-C); what was finished is kept.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from daskbench.cli.common import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNDECIDED,
    Parser,
    inert_output,
    say,
)
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError, RegressionFound

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_REGRESSION", "EXIT_UNDECIDED", "build_parser", "main"]

#: Modules under daskbench.cli that add subcommands; each has register(subparsers).
SUBCOMMAND_MODULES = (
    "runs", "compare", "ab", "calibrate", "report", "prepare", "init", "exchange", "alert", "publish", "gc", "advise",
    "env", "bisect", "confirm", "pr",
)  # fmt: skip


#: The module of `SUBCOMMAND_MODULES` that adds each command: ``daskbench COMMAND`` imports that module alone,
#: so a command's start-up pays only for what it uses (``daskbench --help`` imports them all; a test keeps this
#: table equal to what the modules add).
COMMAND_MODULES = {
    "runs": "runs", "show": "runs", "baseline": "compare", "compare": "compare", "ab": "ab", "calibrate": "calibrate",
    "report": "report", "data": "prepare", "init": "init", "export": "exchange", "import": "exchange",
    "alert": "alert", "publish": "publish", "gc": "gc", "advise": "advise", "env": "env", "bisect": "bisect",
    "confirm": "confirm", "pr": "pr",
}  # fmt: skip


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the subcommands these modules add (all by default); a module of `SUBCOMMAND_MODULES`
    that is missing is an error (a broken install), never a command silently left out."""
    parser = Parser(
        prog="daskbench",
        description="Inspect, compare and report daskbench results. Run the suite with: pytest -m benchmark",
        epilog=EXIT_CODES,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES if modules is None else modules:
        importlib.import_module(f"daskbench.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; everything it prints passes `terminal_safe` (`inert_output`), and an error
    line `config.shown_message` (secrets hidden)."""
    given = sys.argv[1:] if argv is None else list(argv)
    module = COMMAND_MODULES.get(given[0]) if given else None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)  # a CI job cancelled, `kill PID`: stopped as Ctrl-C stops it
    with inert_output():
        return _run(build_parser([module] if module else None).parse_args(given))


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM: what a Ctrl-C does (sessions and clusters this command started are stopped, exit 130)."""
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or EXIT_OK)
    except DaskbenchError as exc:
        say(f"error: {shown_message(str(exc))}", wrap=exc.wrap)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
