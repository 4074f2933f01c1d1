"""`daskbench` command line: one module per command, named for it, each with ``register``.

What commands share lives in four modules, each defined once: `app` (exit codes, the parser, running a
command), `common_args` (the shared options and their readers), `output` (printers) and `values` (whole
numbers, durations). A command module imports from those, never from another command module. Exit codes
mean one thing each, for every command:

- 0: ok, nothing regressed (or nothing to do);
- 1: a regression: found (compare, alert, ab, pr), confirmed side by side (confirm), or its first bad
  release or commit named (bisect, culprit);
- 2: the command could not run: bad input (a usage error too), a missing baseline or run, an unusable
  store, a failed build;
- 3: measured but undecided: a bisection step still inconclusive at ``--rounds-cap`` (``--group NAME``
  continues it);
- 130: interrupted (Ctrl-C); what was finished is kept.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from daskbench.cli.app import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNDECIDED,
    Parser,
    inert_output,
    run_command,
    stop_on_sigterm,
)

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_REGRESSION", "EXIT_UNDECIDED", "build_parser", "main"]

#: The command modules under daskbench.cli, each named for its command; each has register(subparsers).
SUBCOMMAND_MODULES = (
    "runs", "show", "baseline", "compare", "ab", "calibrate", "report", "data", "init", "export", "import_", "alert",
    "publish", "gc", "advise", "env", "bisect", "confirm", "pr", "merge", "culprit",
)  # fmt: skip


#: The module of `SUBCOMMAND_MODULES` that adds each command: ``daskbench COMMAND`` imports that module alone,
#: so a command's start-up pays only for what it uses (``daskbench --help`` imports them all; a test keeps this
#: table equal to what the modules add).
COMMAND_MODULES = {
    "runs": "runs", "show": "show", "baseline": "baseline", "compare": "compare", "ab": "ab",
    "calibrate": "calibrate", "report": "report", "data": "data", "init": "init", "export": "export",
    "import": "import_", "alert": "alert", "publish": "publish", "gc": "gc", "advise": "advise", "env": "env",
    "bisect": "bisect", "confirm": "confirm", "pr": "pr", "merge": "merge", "culprit": "culprit",
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
    """Run one command; everything it prints passes `terminal_safe` (`app.inert_output`), and an error
    line `config.shown_message` (secrets hidden)."""
    given = sys.argv[1:] if argv is None else list(argv)
    module = COMMAND_MODULES.get(given[0]) if given else None
    stop_on_sigterm()
    with inert_output():
        return run_command(build_parser([module] if module else None).parse_args(given))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
