"""The options commands share, each defined once with its reader: the store, the floor, the format, the
selection of what to judge, the A/B group, the output file, the build options, ``-- pytest args``, and the
round options the five commands that decide by rounds (ab, bisect, calibrate, confirm, pr) take from one
adder, `add_round_options`, worded from one table, `ROUND_COMMANDS`.

One name per idea: a renamed flag's old spelling still works, hidden from ``--help``, and says its new name
once (`add_old_spellings`). A command module imports from here, never from another command module."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from daskbench import config, envs
from daskbench.cli.app import Parser
from daskbench.cli.values import duration, history_runs, whole_number
from daskbench.errors import DaskbenchError
from daskbench.store import Store
from daskbench.text import first_few, say

if TYPE_CHECKING:
    from daskbench.judge.selection import Selection

# -- old spellings --------------------------------------------------------------------------------


class OldSpelling(argparse.Action):
    """An old spelling of a flag (hidden from --help): it does what the flag does (``split``: each part of
    its value, as the flag given once per part), and says the flag's new name once, in one line on stderr."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, target: argparse.Action, split: str | None = None, **kw: Any
    ) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kw)
        self.target, self.split, self.said = target, split, False

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if not self.said:
            self.said = True
            say(f"note: {option} is now {'/'.join(self.target.option_strings)}")
        parts = values.split(self.split) if self.split and isinstance(values, str) else [values]
        for part in parts:
            self.target(parser, namespace, part.strip() if isinstance(part, str) else part, option)


def add_old_spellings(parser: argparse.ArgumentParser, flag: str, *old: str, split: str | None = None) -> None:
    """``old`` flags doing what ``flag`` (already added) does, taking what it takes; each says its new name.
    ``flag``'s help ends by naming them as former (``(formerly --ab)``): how a reader of old scripts finds it."""
    action = next(a for a in parser._actions if flag in a.option_strings)
    action.help = f"{action.help or ''}{formerly(*old)}"
    kwargs: dict[str, Any] = {"nargs": action.nargs, "metavar": action.metavar}
    if action.type is not None and split is None:
        kwargs["type"] = action.type
    for spelling in old:
        parser.add_argument(spelling, dest=action.dest, action=OldSpelling, target=action, split=split, **kwargs)


def formerly(*old: str) -> str:
    """`` (formerly --ab)``: the end of a renamed flag's help."""
    return f" (formerly {', '.join(old)})" if old else ""


# -- the store, settings, floor, format -------------------------------------------------------------------


def add_db_option(parser: argparse.ArgumentParser) -> None:
    config.add_options(parser.add_argument, ("db",))


def settings(args: argparse.Namespace) -> config.Settings:
    """Settings from this command's flags layered over env and [tool.daskbench]."""
    flags = {option.name: getattr(args, "daskbench_" + option.name, None) for option in config.OPTIONS}
    return config.resolve(flags, pyproject=config.load_pyproject(Path.cwd()))


#: Subcommands that may create a new store; every other one only reads (or adds to an existing store),
#: so a mistyped --db gives "no daskbench store" instead of leaving an empty database behind.
CREATING_COMMANDS = frozenset({"ab", "calibrate", "import", "merge"})


def open_store(args: argparse.Namespace) -> Store:
    return Store(settings(args).db, create=getattr(args, "command", None) in CREATING_COMMANDS)


def add_floor_option(parser: argparse.ArgumentParser) -> None:
    """``--floor`` (also ``DASKBENCH_FLOOR`` and ``[tool.daskbench.floors]``); read it with `floors`."""
    config.add_options(parser.add_argument, ("floor",))


def floors(args: argparse.Namespace) -> dict[str, float]:
    """The floors of this command: its ``--floor`` over ``DASKBENCH_FLOOR`` over ``[tool.daskbench.floors]``."""
    return settings(args).floor or {}


def add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")


def add_pytest_args(parser: argparse.ArgumentParser, what: str = "arguments for pytest -m benchmark") -> None:
    """``[-- PYTEST_ARGS ...]``: what follows the first ``--`` goes to each pytest session (``args.pytest_args``),
    split off before argparse reads the rest (`app.split_pytest_args`)."""
    if not isinstance(parser, Parser):
        raise TypeError(f"add_pytest_args needs a daskbench.cli.app.Parser, got {type(parser).__name__}")
    parser.takes_pytest_args = True
    parser.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARGS", help=f"after --: {what}")


# -- what a command names: a group, a file ------------------------------------------------------------


def add_group_option(parser: argparse.ArgumentParser, help: str, *old: str, dest: str = "group") -> None:
    """``--group GROUP``: the A/B group (or bisection) a command runs, continues or reads (``args.group``; a
    selection's group to judge: ``args.ab_group``); ``old`` spellings kept."""
    parser.add_argument("--group", metavar="GROUP", dest=dest, help=help)
    add_old_spellings(parser, "--group", *old)


def add_output_option(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    """``-o/--output``: the file or folder a command exists to write (export, report, publish: ``args.output``);
    a file a command writes beside what it prints has a flag named for what it holds (``--report``)."""
    parser.add_argument("-o", "--output", help=help, **kwargs)


# -- what a command judges ------------------------------------------------------------------------


#: The help of the selection's flags; ``{verb}`` is what the command does with the candidate.
SELECTION_HELP = {
    "--baseline": "baseline name or run id (default: main)",
    "--candidate": "run id or prefix to {verb} (default: the latest run)",
    "--group": "{verb} an interleaved A/B group (daskbench ab, pr, confirm, bisect) by its rounds: verdicts from "
    "per-round ratios B/A, listed in each row's note",
    "--history": "compare each case with its last N good runs instead",
    "--allow-mixed": "compare runs from different hosts, or with different cluster specs (cases paired by workload)",
    "--include-worker-loss": "judge a measurement during which a worker died (not for memory) as the workload's "
    "failure; by default it is set aside as the cluster's",
}


def add_selection_options(
    parser: argparse.ArgumentParser, verb: str = "judge", group: bool = True, floor: bool = True
) -> None:
    """What a command compares: ``--baseline``, ``--candidate``, ``--history``, ``--group`` (unless ``group`` is
    False), ``--floor`` (unless ``floor`` is False: the round options added it), ``--allow-mixed`` and
    ``--include-worker-loss``; read them with `selection`."""
    shown = {flag: text.format(verb=verb) for flag, text in SELECTION_HELP.items()}
    parser.add_argument("--baseline", metavar="NAME_OR_RUN", help=shown["--baseline"])
    parser.add_argument("--candidate", metavar="RUN", help=shown["--candidate"])
    if group:
        add_group_option(parser, shown["--group"], "--ab", dest="ab_group")
    parser.add_argument("--history", metavar="N", type=history_runs, help=shown["--history"])
    if floor:
        add_floor_option(parser)
    parser.add_argument("--allow-mixed", action="store_true", help=shown["--allow-mixed"])
    parser.add_argument("--include-worker-loss", action="store_true", help=shown["--include-worker-loss"])


def selection(args: argparse.Namespace) -> Selection:
    """The `Selection` of a command's flags (one `DaskbenchError` line for a mix of modes)."""
    from daskbench.judge.selection import Selection  # numpy (the rules' thresholds): only for commands that judge

    return Selection(
        candidate=args.candidate,
        baseline=args.baseline,
        history=args.history,
        ab_group=getattr(args, "ab_group", None),
        floors=floors(args),
        allow_mixed=args.allow_mixed,
        include_worker_loss=getattr(args, "include_worker_loss", False),
    )


# -- where packages come from: the build options ----------------------------------------------------------

#: The help of each build option (`add_build_options`; read by `build_options`).
BUILD_HELP = {
    "--index-url": "package index instead of the installer's default (a URL or a local folder)",
    "--find-links": "also install from this folder of wheels (repeatable)",
    "--no-index": "install only from --find-links",
    "--cache-dir": f"where environments live (default ${envs.CACHE_ENV}, else ~/.cache/daskbench/envs)",
    "--installer": "uv or pip (default auto: uv when available)",
    "--pin": "a requirement every environment built gets, replacing daskbench's defaults for that package (the "
    "release's era, known incompatibilities) and its recorded version, e.g. --pin 'pandas<2.1' or --pin "
    "dask==2026.7.0; a bare NAME drops the defaults alone (repeatable)",
}


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """Where packages come from and where environments live (env, ab --X-from, bisect, confirm, pr);
    read them with `build_options`."""
    parser.add_argument("--index-url", metavar="URL", help=BUILD_HELP["--index-url"])
    links = BUILD_HELP["--find-links"]
    parser.add_argument("--find-links", metavar="PATH_OR_URL", action="append", default=[], help=links)
    parser.add_argument("--no-index", action="store_true", help=BUILD_HELP["--no-index"])
    parser.add_argument("--cache-dir", metavar="DIR", help=BUILD_HELP["--cache-dir"])
    parser.add_argument("--installer", choices=envs.INSTALLERS, default="auto", help=BUILD_HELP["--installer"])
    parser.add_argument("--pin", metavar="NAME[SPEC]", action="append", default=[], help=BUILD_HELP["--pin"])


def build_options(args: argparse.Namespace) -> envs.BuildOptions:
    """How `envs.build` builds, from `add_build_options`' flags: made once, checked before anything is built."""
    index = envs.Index(args.index_url, tuple(args.find_links), args.no_index)
    pins = tuple(envs.parse_user_pin(text) for text in args.pin)
    return envs.BuildOptions(args.cache_dir, index, args.installer, pins)


# -- the round options ------------------------------------------------------------------------------

#: Default time one case may take, in minutes (``--max-time``; its rounds: `judge.sequential.MAX_ROUNDS`).
MAX_MINUTES = 10.0
#: The options every command that decides by rounds takes from `add_round_options` (``build``: the build
#: options), unless its `Rounds.lacks` says why not.
ROUND_OPTIONS = ("--max-rounds", "--max-time", "--budget", "--metric", "--group", "--floor", "--format", "build")
#: What a command that prints a verdict table judges as JSON instead (ab); the others point to this.
AS_JSON = "the verdicts as JSON: daskbench compare --group GROUP --format json"


@dataclass(frozen=True)
class Rounds:
    """How one command that decides by rounds words the round options: what ``--max-rounds`` and ``--max-time``
    bound (one ``case``; when: ``when``), what ``--budget`` bounds (``whole``), what ``--metric`` does, what
    ``--group`` names (and its old spellings), and which options it does not take, each with why."""

    group: str
    metric: str = "whose rounds decide when a case may stop"
    case: str = "case"
    when: str = ""
    whole: str = "comparison"
    group_old: tuple[str, ...] = ()
    pytest: str = "arguments for pytest -m benchmark"
    lacks: Mapping[str, str] = field(default_factory=dict)


#: The five commands that decide by rounds, and how each words the options they share.
ROUND_COMMANDS: Mapping[str, Rounds] = {
    "ab": Rounds(
        group="name of the A/B group (default: ab-<date-time>); an existing group is continued",
        metric="whose rounds decide when a case may stop (every metric is judged at the end)",
        when=" with --rounds auto",
    ),
    "bisect": Rounds(
        group="name of the bisection (default: bisect-<date-time>), tagged on its runs and starting its steps' A/B "
        "groups; an existing bisection is continued, its finished steps reused",
        metric="a step is judged by",
        when=" in a step's first attempt",
        whole="bisection",
        group_old=("--name", "--resume"),
        lacks={
            "--format": "it prints each step as it finishes, then the release it names; a step's verdicts as "
            "JSON: daskbench compare --group STEP --format json (STEP: the group its line names)"
        },
    ),
    "calibrate": Rounds(
        group="name of the calibration group (default: calibrate-<date-time>); an existing group is continued",
        case="arm",
        pytest="cluster options for pytest",
        lacks={
            "--budget": "each arm takes the rounds it needs to decide: what calibrate measures (a budget would "
            "measure the budget instead)",
            "--metric": "the planted slowdowns are of CPU time: runtime_s decides",
            "--format": "it prints the table of what this setup detects, to quote as measured",
            "build": "both sides run in this interpreter (side B's tasks burn more CPU): nothing is built",
        },
    ),
    "confirm": Rounds(
        group="name of the A/B group to run (default: confirm-<date-time>); a new one",
        metric="judged side by side (the suspects of that metric are confirmed)",
        group_old=("--name",),
        lacks={
            "--budget": "it runs the suspect cases of one night, each until decided (daskbench.confirm takes no "
            "budget)",
            "--format": f"it prints one line per suspect; {AS_JSON}",
        },
    ),
    "culprit": Rounds(
        group="the side-by-side confirmation to go on from (daskbench confirm --group GROUP)",
        metric="a step is judged by",
        when=" in a step's first attempt",
        whole="hunt, builds included (default $DASKBENCH_CULPRIT_BUDGET, else 60m: one GitHub Actions job)",
        lacks={
            "--format": "it prints each step as it finishes, and writes the culprit's Markdown to the job summary "
            "(--summary) and the issues (--github)"
        },
    ),
    "pr": Rounds(
        group="name of the A/B group (default: pr-<base>-<head>-<random>); a new one",
        lacks={
            "--metric": "its comment and status judge every metric; runtime_s decides when a case stops "
            "(daskbench.pr takes no metric)",
            "--format": f"it prints the pull request comment's Markdown (--markdown FILE keeps it); {AS_JSON}",
        },
    ),
}


class Refused(argparse.Action):
    """An option a command does not take, hidden from --help: one line saying why, exit 2."""

    def __init__(self, option_strings: Sequence[str], dest: str, why: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.why = why

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        parser.error(f"{self.option_strings[0]}: not an option of daskbench {parser.prog.split()[-1]}: {self.why}")


def add_round_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The round options of ``command`` (one of `ROUND_COMMANDS`), then ``-- pytest args``: add it after the
    command's own options. An option the command lacks is refused with why (`Rounds.lacks`)."""
    rounds = ROUND_COMMANDS[command]
    adders: dict[str, Callable[[], None]] = {
        "--max-rounds": lambda: _add_max_rounds(parser, rounds),
        "--max-time": lambda: _add_max_time(parser, rounds),
        "--budget": lambda: _add_budget(parser, rounds),
        "--metric": lambda: _add_metric(parser, rounds),
        "--group": lambda: add_group_option(parser, rounds.group, *rounds.group_old),
        "--floor": lambda: add_floor_option(parser),
        "--format": lambda: add_format_option(parser),
        "build": lambda: add_build_options(parser),
    }
    for option in ROUND_OPTIONS:
        if option in rounds.lacks:
            _refuse(parser, option, rounds.lacks[option])
        else:
            adders[option]()
    add_db_option(parser)
    add_pytest_args(parser, rounds.pytest)


def _refuse(parser: argparse.ArgumentParser, option: str, why: str) -> None:
    flags = list(BUILD_HELP) if option == "build" else [option]
    for flag in flags:
        parser.add_argument(flag, action=Refused, why=why, nargs=0 if flag == "--no-index" else None)


def _add_max_rounds(parser: argparse.ArgumentParser, rounds: Rounds) -> None:
    from daskbench.judge import sequential  # numpy: only for the commands that decide by rounds, not ``runs``

    parser.add_argument(
        "--max-rounds",
        type=whole_number(3, sequential.ROUNDS_LIMIT, "a number of rounds", "--max-rounds 30"),
        default=sequential.MAX_ROUNDS,
        metavar="N",
        help=f"most rounds of one {rounds.case}{rounds.when} (default {sequential.MAX_ROUNDS})",
    )


def _add_max_time(parser: argparse.ArgumentParser, rounds: Rounds) -> None:
    parser.add_argument(
        "--max-time",
        type=duration("--max-time", "m", 24 * 60, "--max-time 10m"),
        default=MAX_MINUTES,
        metavar="TIME",
        help=f"most time of one {rounds.case}{rounds.when}: 10m, 1h, 90s (default {MAX_MINUTES:g}m)",
    )


#: The shortest ``--budget``: both sessions start (3-12 s here) and screen every case once before any verdict
#: (the bundled suite at tiny: 42 cases x 2 sides x 0.3-0.6 s), so less could measure nothing (issue 45).
MIN_BUDGET_S = 60.0


def budget_type(flag: str = "--budget") -> Callable[[str], float]:
    """An argparse ``type``: a duration in minutes (`duration`), refused in one line below `MIN_BUDGET_S`."""
    parse = duration(flag, "m", 7 * 24 * 60, f"{flag} 20m")

    def checked(text: str) -> float:
        minutes = parse(text)
        if minutes * 60 < MIN_BUDGET_S:
            raise argparse.ArgumentTypeError(
                f"{text!r} is too short for one round: both sides' sessions start and screen every case once "
                f"before any verdict; give at least {MIN_BUDGET_S / 60:g}m (e.g. {flag} 20m)"
            )
        return minutes

    return checked


def _add_budget(parser: argparse.ArgumentParser, rounds: Rounds) -> None:
    parser.add_argument(
        "--budget",
        type=budget_type(),
        default=None,
        metavar="TIME",
        help=f"time for the whole {rounds.whole}: every case screened first, then rounds where verdicts are "
        "still open and closest to deciding, until all are decided or the time is used: 20m, 2h (default: no "
        "budget, each case until decided)",
    )


def budget_seconds(args: argparse.Namespace) -> float | None:
    """``--budget`` in seconds (None without it)."""
    minutes = getattr(args, "budget", None)
    return None if minutes is None else float(minutes) * 60


def _add_metric(parser: argparse.ArgumentParser, rounds: Rounds) -> None:
    """``--metric NAME``: the declared metric whose rounds decide (runtime_s by default); checked by `metric_of`."""
    parser.add_argument(
        "--metric",
        default="runtime_s",
        metavar="NAME",
        help=f"the metric {rounds.metric}: runtime_s (default), peak_worker_memory_above_idle_bytes, "
        "peak_memory_above_idle_bytes, cost_usd, or any declared metric (daskbench show --format json lists them)",
    )


#: Short names ``--metric`` takes for declared metrics.
METRIC_ALIASES = {
    "runtime": "runtime_s",
    "memory": "peak_memory_above_idle_bytes",
    "worker-memory": "peak_worker_memory_above_idle_bytes",
    "cost": "cost_usd",
}


def metric_of(args: argparse.Namespace) -> str:
    """``--metric`` as a declared metric's name (short names such as ``runtime`` or ``memory`` accepted), or
    one line naming what is declared."""
    from daskbench import catalog

    given = str(getattr(args, "metric", "runtime_s"))
    names = catalog.names()
    name = METRIC_ALIASES.get(given, given)
    if name not in names:
        raise DaskbenchError(f"--metric {given}: not a declared metric; use one of {first_few(list(names), 8)}")
    return name
