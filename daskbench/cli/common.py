"""Pieces every subcommand shares, each defined once: the parser (its ``-- pytest args``), the exit
codes, the progress writer, the flags several commands take (store, selection, floor, A/B group, output
file, budget, build options) and their value parsers (whole numbers, durations), and the printers.

A command module imports from here, never from another command module (a test checks it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from daskbench import config, envs
from daskbench.errors import DaskbenchError, RegressionFound
from daskbench.judge.format import comparison_to_json, format_table, regression_summary
from daskbench.model import Comparison
from daskbench.store import Store
from daskbench.text import say, terminal_safe, wrap_line

if TYPE_CHECKING:
    from daskbench.judge.selection import Selection

#: Exit codes, one meaning each (`daskbench --help` lists them, as the package's docstring does).
EXIT_OK = 0
#: A regression: found (compare, alert, ab, pr), confirmed (confirm), or its first bad release named (bisect).
EXIT_REGRESSION = 1
#: The command could not run: bad input, a missing baseline or run, an unusable store, a failed build.
EXIT_ERROR = 2
#: Measured, but not decided: a bisection step still inconclusive at --rounds-cap (--resume continues).
EXIT_UNDECIDED = 3
#: Interrupted (Ctrl-C); what was finished is kept.
EXIT_INTERRUPTED = 130
EXIT_CODES = (
    "exit codes: 0 ok (nothing regressed), 1 a regression found, confirmed or bisected, 2 could not run (bad "
    "input, missing baseline, unusable store), 3 undecided (a bisection step inconclusive), 130 interrupted"
)


def print_wrapped(text: str) -> None:
    """Print ``text`` on stdout in lines of at most 120 columns, wrapped between words (never cut), flushed."""
    print("\n".join(wrap_line(text)), flush=True)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (which echo the argument given: ``invalid choice: ...``)
    are shown as `config.shown_message` shows every message: secrets hidden, control characters escaped.

    A command given `add_pytest_args` takes everything after the first ``--`` for pytest, whatever
    stands before it: options before or after the positionals, ``--`` right after them."""

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


def add_pytest_args(parser: argparse.ArgumentParser, what: str = "arguments for pytest -m benchmark") -> None:
    """``[-- PYTEST_ARGS ...]``: what follows the first ``--`` goes to each pytest session (``args.pytest_args``),
    split off before argparse reads the rest (`split_pytest_args`)."""
    if not isinstance(parser, Parser):
        raise TypeError(f"add_pytest_args needs a daskbench.cli.common.Parser, got {type(parser).__name__}")
    parser.takes_pytest_args = True
    parser.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARGS", help=f"after --: {what}")


class OldSpelling(argparse.Action):
    """An old spelling of a flag (hidden from --help): it sets what the flag sets, and says so in one line
    on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        say(f"daskbench: {option_string} is the old spelling of {self.new}; it still works")
        setattr(namespace, self.dest, values)


def add_old_spellings(parser: argparse.ArgumentParser, flag: str, *old: str) -> None:
    """``old`` flags setting what ``flag`` (already added) sets, with its type; each says it is old."""
    action = next(a for a in parser._actions if flag in a.option_strings)
    new = "/".join(action.option_strings)
    for spelling in old:
        kwargs: dict[str, Any] = {"type": action.type} if action.type is not None else {}
        parser.add_argument(spelling, dest=action.dest, action=OldSpelling, new=new, metavar=action.metavar, **kwargs)


def formerly(*old: str) -> str:
    """`` (formerly --ab)``: the end of a renamed flag's help."""
    return f" (formerly {', '.join(old)})" if old else ""


def add_group_option(parser: argparse.ArgumentParser, help: str, *old: str, dest: str = "group") -> None:
    """``--group GROUP``: the A/B group a command runs, continues or reads (``args.group``; a selection's
    group to judge: ``args.ab_group``); ``old`` spellings kept."""
    parser.add_argument("--group", metavar="GROUP", dest=dest, help=help + formerly(*old))
    add_old_spellings(parser, "--group", *old)


def add_output_option(parser: argparse.ArgumentParser, help: str, *old: str, **kwargs: Any) -> None:
    """``-o/--output``: the (main) file a command writes (``args.output``); ``old`` spellings kept."""
    parser.add_argument("-o", "--output", help=help + formerly(*old), **kwargs)
    add_old_spellings(parser, "--output", *old)


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


def add_selection_options(parser: argparse.ArgumentParser, verb: str = "judge", group: bool = True) -> None:
    """What a command compares: ``--baseline``, ``--candidate``, ``--history``, ``--group`` (unless
    ``group`` is False), ``--floor``, ``--allow-mixed`` and ``--include-worker-loss``; read them with `selection`."""
    parser.add_argument("--baseline", metavar="NAME_OR_RUN", help="baseline name or run id (default: main)")
    parser.add_argument("--candidate", metavar="RUN", help=f"run id or prefix to {verb} (default: the latest run)")
    if group:
        add_group_option(
            parser,
            f"{verb} an interleaved A/B group (daskbench ab, pr, confirm, bisect) by its rounds: "
            "verdicts from per-round ratios B/A, listed in each row's note",
            "--ab",
            dest="ab_group",
        )
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
    from daskbench.judge.selection import Selection  # numpy (the rules' thresholds): only for commands that judge

    return Selection(
        candidate=args.candidate,
        baseline=args.baseline,
        history=args.history,
        ab_group=getattr(args, "ab_group", None),
        floors=floors(args) or {},
        allow_mixed=args.allow_mixed,
        include_worker_loss=getattr(args, "include_worker_loss", False),
    )


def print_comparison(
    comparison: Comparison, output: str, extra: Mapping[str, Any] | None = None, every_row: bool = False
) -> int:
    """Print ``comparison`` as a table (every row with ``every_row``) or JSON (with ``extra`` keys);
    a regression raises `RegressionFound` (exit 1)."""
    if output == "json":
        print_json({**comparison_to_json(comparison), **(extra or {})})
    else:
        print(format_table(comparison, every_row))
    sys.stdout.flush()
    if comparison.regressions:
        raise RegressionFound(regression_summary(comparison))
    return EXIT_OK


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
    """An argparse ``type``: a whole number from ``low`` to ``high`` (``what`` it counts), else one line
    with an example."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number from {low} to {high} ({what}; e.g. {example})"
            )
        return value

    return parse


#: argparse type of --history: a whole number of runs.
history_runs = whole_number(1, 100_000, "a number of runs", "--history 20")

#: Seconds in one unit of a duration: ``90s``, ``10m``, ``12h``, ``30d``, ``2w``.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]?)\s*")


def parse_duration(text: str, bare: str | None) -> float | None:
    """Seconds in ``text``: ``90s``, ``10m``, ``12h``, ``30d``, ``2w``, or a bare number in unit ``bare``
    (None: a bare number is no duration); None when ``text`` is no duration."""
    match = _DURATION.fullmatch(text.lower())
    unit = match and (match[2] or bare)
    if not match or unit not in DURATION_UNITS:
        return None
    return float(match[1]) * DURATION_UNITS[unit]


def duration(bare: str, most: float, example: str) -> Callable[[str], float]:
    """An argparse ``type``: a duration above 0 and at most ``most`` (in unit ``bare``), returned in unit
    ``bare``, which a bare number has too (``--max-time 10`` is 10 minutes, as it always was)."""
    unit = _UNIT_NAMES[bare]

    def parse(text: str) -> float:
        seconds = parse_duration(text, bare)
        if seconds is None or not 0 < seconds <= most * DURATION_UNITS[bare]:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration above 0 and at most {most:g} {unit}: "
                f"like 30d, 12h, 10m or 90s, a bare number in {unit} (e.g. {example})"
            )
        return seconds / DURATION_UNITS[bare]

    return parse


def since(text: str, now: datetime | None = None) -> str:
    """An argparse ``type``: ``30d``, ``12h``, ``2w`` (a duration before now) or an ISO date/time, as the
    ISO cutoff the store compares (UTC when no zone is given)."""
    seconds = parse_duration(text, None)
    if seconds is not None:
        return ((now or datetime.now(UTC)) - timedelta(seconds=seconds)).isoformat(timespec="seconds")
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration (30d, 12h, 2w) nor an ISO date (2026-01-31)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat(timespec="seconds")


#: Default time one case may take, in minutes (``--max-time``; its rounds: `sequential.MAX_ROUNDS`).
MAX_MINUTES = 10.0


#: The oldest bokeh the HTML report draws with (``report``, ``publish``, ``pr``). daskbench itself declares
#: bokeh>=2.4.3: the dashboard of distributed before 2023.4 (``--evidence``) needs bokeh<3, and measuring
#: needs no report, so an environment of that era measures and another one reports from the same store.
REPORT_BOKEH = "3.4"


def check_report_bokeh(command: str) -> None:
    """One line before ``command`` writes a report with a bokeh too old for it (or none)."""
    from importlib import metadata

    from packaging.version import Version

    try:
        found = metadata.version("bokeh")
    except metadata.PackageNotFoundError:
        found = None
    if found is None or Version(found) < Version(REPORT_BOKEH):
        have = f"bokeh {found}" if found else "no bokeh"
        raise DaskbenchError(
            f"daskbench {command} needs bokeh>={REPORT_BOKEH}; this environment has {have} (old enough for "
            f"the dashboard of distributed before 2023.4): run it from an environment with pip install "
            f"'bokeh>={REPORT_BOKEH}' (the store is the same)"
        )


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """Where packages come from and where environments live (env, ab --X-from, bisect, confirm, pr);
    read them with `build_options`."""
    parser.add_argument(
        "--index-url", metavar="URL", help="package index instead of the installer's default (a URL or a local folder)"
    )
    parser.add_argument(
        "--find-links",
        metavar="PATH_OR_URL",
        action="append",
        default=[],
        help="also install from this folder of wheels (repeatable)",
    )
    parser.add_argument("--no-index", action="store_true", help="install only from --find-links")
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help=f"where environments live (default ${envs.CACHE_ENV}, else ~/.cache/daskbench/envs)",
    )
    parser.add_argument(
        "--installer", choices=envs.INSTALLERS, default="auto", help="uv or pip (default auto: uv when available)"
    )
    parser.add_argument(
        "--pin",
        metavar="NAME[SPEC]",
        action="append",
        default=[],
        help="a requirement every environment built gets, replacing daskbench's defaults for that package "
        "(the release's era, known incompatibilities), e.g. --pin 'pandas<2.1'; a bare NAME drops the "
        "defaults alone (repeatable)",
    )


def build_options(args: argparse.Namespace) -> dict[str, Any]:
    """`envs.build`'s keywords from `add_build_options`' flags, checked before anything is built."""
    index = envs.Index(args.index_url, tuple(args.find_links), args.no_index)
    index.check()
    envs.choose_installer(args.installer)
    pins = tuple(envs.parse_user_pin(text) for text in args.pin)
    return {"cache": args.cache_dir, "index": index, "installer": args.installer, "extra_pins": pins}
