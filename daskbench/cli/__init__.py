"""`daskbench` command line: one module per group of subcommands, each with ``register``.

Exit codes mean one thing each: 0 success (nothing regressed), 1 a comparison found a
regression, 2 the command could not run (bad input, missing baseline, unusable store).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from daskbench.cli.common import Parser, inert_output
from daskbench.config import shown_message
from daskbench.errors import DaskbenchError, RegressionFound

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2

#: Modules under daskbench.cli that add subcommands; each has register(subparsers).
SUBCOMMAND_MODULES = (
    "runs", "compare", "ab", "calibrate", "report", "prepare", "init", "exchange", "alert", "publish", "gc", "advise", "env",
    "bisect", "confirm", "pr",
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="daskbench",
        description="Inspect, compare and report daskbench results. Run the suite with: pytest -m benchmark",
        epilog="exit codes: 0 ok, 1 regression found, 2 could not run (bad input, missing baseline, bad store)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"daskbench.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"daskbench.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; everything it prints passes `terminal_safe` (`inert_output`), and an error
    line `config.shown_message` (secrets hidden)."""
    with inert_output():
        return _run(build_parser().parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or EXIT_OK)
    except DaskbenchError as exc:
        print(f"error: {shown_message(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except RegressionFound as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_REGRESSION
    except KeyboardInterrupt:
        # Decided: exit 130. A Ctrl-C arriving later, while the interpreter shuts down (its default
        # handler back), would kill the process by SIGINT instead; seen in CI after `ab` stopped its sessions.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`daskbench runs | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
