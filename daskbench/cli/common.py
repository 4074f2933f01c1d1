"""Pieces every subcommand shares: the store option, settings layering, output format."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from daskbench import config
from daskbench.judge.selection import Selection
from daskbench.store import Store
from daskbench.text import terminal_safe, wrap_line


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (which echo the argument given: ``invalid choice: ...``)
    are shown as `config.shown_message` shows every message: secrets hidden, control characters escaped."""

    def error(self, message: str) -> NoReturn:
        super().error(config.shown_message(message))


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


def add_db_option(parser: argparse.ArgumentParser) -> None:
    config.add_options(parser.add_argument, ("db",))


def add_floor_option(parser: argparse.ArgumentParser) -> None:
    """``--floor`` (also ``DASKBENCH_FLOOR`` and ``[tool.daskbench.floors]``); read it with `floors`."""
    config.add_options(parser.add_argument, ("floor",))


def floors(args: argparse.Namespace) -> dict[str, float] | None:
    """The floors of this command: its ``--floor`` over ``DASKBENCH_FLOOR`` over ``[tool.daskbench.floors]``."""
    return settings(args).floor


def add_selection_options(parser: argparse.ArgumentParser, verb: str = "judge", ab: bool = True) -> None:
    """What a command compares: ``--baseline``, ``--candidate``, ``--history``, ``--ab`` (unless
    ``ab`` is False), ``--floor`` and ``--allow-mixed``; read them with `selection`."""
    parser.add_argument("--baseline", metavar="NAME_OR_RUN", help="baseline name or run id (default: main)")
    parser.add_argument("--candidate", metavar="RUN", help=f"run id or prefix to {verb} (default: the latest run)")
    if ab:
        parser.add_argument("--ab", metavar="GROUP", help=f"{verb} an interleaved A/B group (daskbench ab) by its "
                            "rounds: verdicts from per-round ratios B/A, listed in each row's note")  # fmt: skip
    parser.add_argument(
        "--history", metavar="N", type=history_runs, help="compare each case with its last N good runs instead"
    )
    add_floor_option(parser)
    parser.add_argument(
        "--allow-mixed",
        action="store_true",
        help="compare runs from different hosts, or with different cluster specs (cases paired by workload)",
    )
    parser.add_argument(
        "--include-worker-loss",
        action="store_true",
        help="judge a measurement during which a worker died (not for memory) as the workload's failure; "
        "by default it is set aside as the cluster's",
    )


def selection(args: argparse.Namespace) -> Selection:
    """The `Selection` of a command's flags (one `DaskbenchError` line for a mix of modes)."""
    return Selection(
        candidate=args.candidate,
        baseline=args.baseline,
        history=args.history,
        ab_group=getattr(args, "ab", None),
        floors=floors(args) or {},
        allow_mixed=args.allow_mixed,
        include_worker_loss=getattr(args, "include_worker_loss", False),
    )


def add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")


def settings(args: argparse.Namespace) -> config.Settings:
    """Settings from this command's flags layered over env and [tool.daskbench]."""
    flags = {option.name: getattr(args, "daskbench_" + option.name, None) for option in config.OPTIONS}
    return config.resolve(flags, pyproject=config.load_pyproject(Path.cwd()))


#: Subcommands that may create a new store; every other one only reads (or adds to an existing store),
#: so a mistyped --db gives "no daskbench store" instead of leaving an empty database behind.
CREATING_COMMANDS = frozenset({"ab", "calibrate", "import"})


def open_store(args: argparse.Namespace) -> Store:
    return Store(settings(args).db, create=getattr(args, "command", None) in CREATING_COMMANDS)


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A plain aligned text table; numbers right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        print(_aligned(row, widths))


def print_grouped(headers: list[str], groups: Sequence[tuple[str, list[list[str]]]]) -> None:
    """An aligned table within 120 columns: a title wider than its column's values over two lines,
    each group's rows indented under a line naming the group (wrapped, never cut)."""
    rows = [row for _, found in groups for row in found]
    titles = [_two_lines(title, max((len(row[i]) for row in rows), default=0)) for i, title in enumerate(headers)]
    widths = [max(len(part) for part in (*titles[i], *(row[i] for row in rows))) for i in range(len(headers))]
    for line in zip(*titles, strict=True):
        if any(line):
            print_wrapped("  " + _aligned(list(line), widths))
    for label, found in groups:
        print_wrapped(label)
        for row in found:
            print_wrapped("  " + _aligned(row, widths))


def print_wrapped(text: str) -> None:
    """Print ``text`` in lines of at most 120 columns, wrapped between words (never cut)."""
    print("\n".join(wrap_line(text)))


def _two_lines(title: str, room: int) -> tuple[str, str]:
    """A column title on one line, or split at its middle space when it is wider than ``room``."""
    spaces = [i for i, char in enumerate(title) if char == " "]
    if len(title) <= room or not spaces:
        return title, ""
    cut = min(spaces, key=lambda i: abs(len(title) - 2 * i))
    return title[:cut], title[cut + 1 :]


def _aligned(row: list[str], widths: list[int]) -> str:
    """Cells padded to ``widths``: numbers right-aligned, text left-aligned."""
    return "  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()


def _numeric(cell: str) -> bool:
    return cell.replace(".", "", 1).replace("-", "", 1).replace("x", "", 1).isdigit()


def whole_number(low: int, high: int, what: str, example: str) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``, else one line with an example."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number of {what} from {low} to {high} (e.g. {example})"
            )
        return value

    return parse


#: argparse type of --history: a whole number of runs.
history_runs = whole_number(1, 100_000, "runs", "--history 20")
