"""One CLI vocabulary: a module per command, named for it; every shared flag defined once in
`daskbench.cli.common_args` and spelt one way in every command, one name per idea (old spellings still work,
hidden, and say their new name once); the five commands that decide by rounds take one set of round options;
one duration syntax (always with its unit), one whole-number parser, one progress writer, exit codes that mean
one thing each, and command modules that never import each other."""

from __future__ import annotations

import argparse
import ast
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import daskbench.cli as cli
from daskbench.cli import build_parser, main
from daskbench.cli.app import EXIT_ERROR, EXIT_UNDECIDED
from daskbench.cli.bisect import EXITS
from daskbench.cli.common_args import ROUND_COMMANDS, ROUND_OPTIONS, budget_seconds, metric_of, settings
from daskbench.cli.values import parse_duration, since
from daskbench.judge.format import MORE_REPEATS, MORE_ROUNDS
from tests.helpers import daskbench_cli

CLI = Path(cli.__file__).parent


def _imported_commands(source: str) -> list[str]:
    """The command modules (of `SUBCOMMAND_MODULES`) that ``source`` imports, however it spells it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "daskbench.cli":
            found += [f"daskbench.cli.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from .ab import x / from . import ab
            found += (
                [f"daskbench.cli.{node.module}"] if node.module else [f"daskbench.cli.{a.name}" for a in node.names]
            )
    commands = {f"daskbench.cli.{name}" for name in cli.SUBCOMMAND_MODULES}
    return [module for module in found if module in commands]


def test_the_import_check_sees_every_spelling_of_a_command_module() -> None:
    """Planted imports of command modules are found in each form; the shared modules and the package are not."""
    planted = "\n".join([
        "from daskbench.cli.ab import add_budget_options",
        "import daskbench.cli.env",
        "from daskbench.cli import compare",
        "from .bisect import EXITS",
        "from . import pr",
        "from daskbench.cli.common_args import add_db_option",
        "from daskbench.cli import main",
    ])  # fmt: skip
    found = _imported_commands(planted)
    expected = ["daskbench.cli.ab", "daskbench.cli.env", "daskbench.cli.compare", "daskbench.cli.bisect"]
    assert found == [*expected, "daskbench.cli.pr"]


def test_no_command_module_imports_another_command_module() -> None:
    """What commands share is in app, common_args, output and values: a command module imports no other."""
    offenders = {
        path.name: found for path in sorted(CLI.glob("*.py")) if (found := _imported_commands(path.read_text()))
    }
    assert offenders == {}


def test_a_missing_subcommand_module_stops_the_parser_instead_of_dropping_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name in SUBCOMMAND_MODULES without its module is an import error naming it, not a silent gap."""
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", (*cli.SUBCOMMAND_MODULES, "nosuchcommand"))
    with pytest.raises(ModuleNotFoundError, match=r"daskbench\.cli\.nosuchcommand"):
        build_parser()


def test_the_command_table_names_the_module_that_adds_each_command() -> None:
    """`COMMAND_MODULES`, which lets ``daskbench COMMAND`` import one command module, is what the modules add."""
    added = {}
    for module in cli.SUBCOMMAND_MODULES:
        parser = build_parser([module])
        (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        added.update(dict.fromkeys(subparsers.choices, module))
    assert added == cli.COMMAND_MODULES


def test_a_command_parses_the_same_alone_as_among_all_commands() -> None:
    """The parser of one command's module reads a command line as the whole parser does."""
    line = ["compare", "--history", "5", "--format", "json"]
    assert vars(build_parser(["compare"]).parse_args(line)) == vars(build_parser().parse_args(line))


def test_only_the_progress_writer_writes_to_stderr() -> None:
    """The CLI reaches stderr through `text.say` alone (no print(file=sys.stderr), no sys.stderr.write)."""
    direct = re.compile(r"file=sys\.stderr|sys\.stderr\.write|say_stderr")
    offenders = [path.name for path in sorted(CLI.glob("*.py")) if direct.search(path.read_text())]
    assert offenders == []


#: (command line before the flag, the flag, its old spelling, the value's attribute, a value; None: a switch).
RENAMED = [
    (["compare"], "--group", "--ab", "ab_group", "g1"),
    (["report"], "--group", "--ab", "ab_group", "g1"),
    (["confirm"], "--group", "--name", "group", "confirm-1"),
    (["bisect"], "--group", "--name", "group", "bisect-1"),
    (["bisect"], "--group", "--resume", "group", "bisect-1"),
    (["alert"], "--group", "--confirm-ab", "group", "confirm-1"),
    (["alert"], "--summary", "-o", "summary", "summary.md"),
    (["alert"], "--summary", "--output", "summary", "summary.md"),
    (["pr", "main", "HEAD"], "--report", "-o", "report", "pr.html"),
    (["pr", "main", "HEAD"], "--report", "--output", "report", "pr.html"),
    (["publish"], "--trend-runs", "--history", "trend_runs", "60"),
    (["init"], "--pr-workflow", "--pr", "pr_workflow", None),
    (["env", "RUN"], "--pin", "--set", "pin", "dask==2026.7.0"),
]


def _given(flag: str, value: str | None) -> list[str]:
    return [flag] if value is None else [flag, value]


@pytest.mark.parametrize(("head", "flag", "old", "dest", "value"), RENAMED, ids=[f"{r[0][0]} {r[2]}" for r in RENAMED])
def test_an_old_spelling_does_what_the_new_one_does_and_says_its_new_name_once(
    capsys: pytest.CaptureFixture[str], head: list[str], flag: str, old: str, dest: str, value: str | None
) -> None:
    """The old flag, given twice, gives the value the new one gives, with one stderr line ``note: OLD is now NEW``;
    --help shows the new flag, names the old one as former, and does not list it as a flag of its own."""
    new = getattr(build_parser().parse_args([*head, *_given(flag, value)]), dest)
    assert capsys.readouterr().err == ""
    twice = [*head, *_given(old, value), *_given(old, value)]
    assert getattr(build_parser().parse_args(twice), dest) == ([*new, *new] if isinstance(new, list) else new)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith(f"note: {old} is now ") and flag in said[0], said
    with pytest.raises(SystemExit):
        main([head[0], "--help"])
    shown = capsys.readouterr().out
    listed = re.search(rf"^\s*{re.escape(old)}(?![\w)-])", shown, re.M)  # a line of its own (not "(formerly --ab)")
    formerly = re.findall(r"\(formerly ([^)]*)\)", re.sub(r"\s+", " ", shown))
    assert any(old in names.split(", ") for names in formerly), formerly
    assert f"[{old} " not in shown and f"[{old}]" not in shown and not listed


def test_an_old_spelling_still_runs_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``alert --infrastructure R -o FILE`` (-o was alert's name for --summary): exit 0, the Markdown in FILE,
    one note on stderr."""
    summary = tmp_path / "summary.md"
    assert main(["alert", "--infrastructure", "cluster did not start", "-o", str(summary)]) == 0
    err = capsys.readouterr().err
    assert "cluster did not start" in summary.read_text() and err == "note: -o is now --summary\n"


def test_env_set_old_spelling_pins_each_version_of_its_list(capsys: pytest.CaptureFixture[str]) -> None:
    """``env RUN --set dask==X,distributed==X`` (a comma list) is ``--pin dask==X --pin distributed==X``."""
    old = build_parser().parse_args(["env", "RUN", "--set", "dask==2026.7.0,distributed==2026.7.0"]).pin
    new = build_parser().parse_args(["env", "RUN", "--pin", "dask==2026.7.0", "--pin", "distributed==2026.7.0"]).pin
    assert old == new == ["dask==2026.7.0", "distributed==2026.7.0"]
    assert capsys.readouterr().err == "note: --set is now --pin\n"


def test_env_pin_of_an_exact_version_replaces_the_recorded_one() -> None:
    """``--pin NAME==VERSION`` on env replaces the record's version (as --set did); other specifiers do not."""
    from daskbench import envs
    from daskbench.cli.env import exact_versions

    pins = [envs.parse_user_pin(text) for text in ("dask==2026.7.0", "pandas<2.1", "bokeh", "numpy==2.*")]
    assert exact_versions(pins) == {"dask": "2026.7.0"}
    assert exact_versions(pins[1:]) is None


#: (command line, the duration flag, a bare number, its unit then, the value read).
BARE_DURATIONS = [
    (["ab"], "--max-time", "3", "m", 3.0),
    (["ab"], "--budget", "20", "m", 20.0),
    (["calibrate"], "--max-time", "2.5", "m", 2.5),
    (["gc"], "--older-than", "30", "d", 30.0),
]


@pytest.mark.parametrize(
    ("head", "flag", "bare", "unit", "read"), BARE_DURATIONS, ids=[f"{d[0][0]} {d[1]}" for d in BARE_DURATIONS]
)
def test_a_bare_number_of_a_duration_keeps_its_old_unit_and_says_how_it_is_written_now(
    capsys: pytest.CaptureFixture[str], head: list[str], flag: str, bare: str, unit: str, read: float
) -> None:
    """A duration carries its unit everywhere (``--budget 20m``, ``--older-than 30d``); a bare number, the old
    spelling, reads as it did (minutes for --budget and --max-time, days for --older-than), once said."""
    dest = flag.lstrip("-").replace("-", "_")
    assert getattr(build_parser().parse_args([*head, flag, bare + unit]), dest) == read
    assert capsys.readouterr().err == ""
    assert getattr(build_parser().parse_args([*head, flag, bare, flag, bare]), dest) == read
    assert capsys.readouterr().err == f"note: {flag} {bare} is now {flag} {bare}{unit}\n"
    with pytest.raises(SystemExit):
        main([head[0], "--help"])
    assert "bare number" not in capsys.readouterr().out


def test_the_documented_vocabulary_has_one_name_per_idea() -> None:
    """No page of the README or docs/ shows a renamed spelling in a command (old spellings are for scripts)."""
    root = CLI.parent.parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    old = re.compile(
        r"daskbench (?:bisect[^\n`]*--resume|env[^\n`]*--set|init[^\n`]*--pr\b(?!-)|pr [^\n`]*(?<!\S)-o "
        r"|alert[^\n`]*(?<!\S)-o |[a-z]+[^\n`]*--(?:max-time|budget|older-than) [0-9.]+(?![0-9.a-z]))"
    )
    found = [f"{page.name}: {match[0]}" for page in pages for match in old.finditer(page.read_text())]
    assert found == []


def test_every_command_module_is_named_for_the_command_it_adds() -> None:
    """``cli/baseline.py`` adds ``baseline``, ``cli/import_.py`` ``import``: a module adds its own command alone."""
    for module in cli.SUBCOMMAND_MODULES:
        (subparsers,) = [a for a in build_parser([module])._actions if isinstance(a, argparse._SubParsersAction)]
        added = set(subparsers.choices)
        pending = module == "runs" and added == {"runs", "show"}  # show gets a module of its own (issue 41, records)
        assert added == {module.rstrip("_")} or pending, (module, added)


#: Flags added by `common_args` alone: a command module takes them from its adders, never spelling them itself.
SHARED_FLAGS = {
    "--db", "--floor", "--format", "--group", "-o", "--output", "--baseline", "--candidate", "--allow-mixed",
    "--include-worker-loss", "--max-rounds", "--max-time", "--budget", "--metric", "--index-url", "--find-links",
    "--no-index", "--cache-dir", "--installer", "--pin",
}  # fmt: skip


def _spelt_flags(path: Path) -> list[str]:
    """The flags the ``add_argument`` calls of the module at ``path`` spell out."""
    calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
    adding = [call for call in calls if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"]
    return [arg.value for call in adding for arg in call.args if isinstance(arg, ast.Constant)]


def test_shared_options_are_spelt_once_in_common_args() -> None:
    """No command module calls ``add_argument`` with a shared flag: each is defined once, with one meaning."""
    modules = [CLI / f"{name}.py" for name in cli.SUBCOMMAND_MODULES]
    offenders = [f"{path.name}: {flag}" for path in modules for flag in _spelt_flags(path) if flag in SHARED_FLAGS]
    assert len(_spelt_flags(CLI / "common_args.py")) > 10 and offenders == []


#: The five commands that decide by rounds, with what each needs before its options.
ROUND_HEADS = {command: [command] for command in ROUND_COMMANDS} | {"pr": ["pr", "main", "HEAD"]}
#: A value of each round option and what reading it gives, the same in every command that takes it.
ROUND_VALUES = {
    "--max-rounds": (["--max-rounds", "7"], lambda args: args.max_rounds, 7),
    "--max-time": (["--max-time", "90s"], lambda args: args.max_time, 1.5),
    "--budget": (["--budget", "2h"], budget_seconds, 7200.0),
    "--metric": (["--metric", "memory"], metric_of, "peak_memory_above_idle_bytes"),
    "--group": (["--group", "night-1"], lambda args: args.group, "night-1"),
    "--floor": (["--floor", "runtime=1.3"], lambda args: (settings(args).floor or {}).get("runtime_s"), 1.3),
    "--format": (["--format", "json"], lambda args: args.format, "json"),
    "build": (
        ["--pin", "pandas<2.1", "--installer", "pip"],
        lambda args: (args.pin, args.installer),
        (["pandas<2.1"], "pip"),
    ),
}


@pytest.mark.parametrize("command", sorted(ROUND_COMMANDS))
def test_the_round_commands_take_every_round_option_with_one_meaning_or_say_why_not(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ab, bisect, calibrate, confirm and pr each take the round options from one adder: each option reads the
    same in each, and one a command lacks is refused in one line saying why (exit 2), never "unrecognized"."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml with floors of its own
    monkeypatch.delenv("DASKBENCH_FLOOR", raising=False)
    assert set(ROUND_VALUES) == set(ROUND_OPTIONS)
    lacks = ROUND_COMMANDS[command].lacks
    for option, (given, read, expected) in ROUND_VALUES.items():
        if option not in lacks:
            assert read(build_parser().parse_args([*ROUND_HEADS[command], *given])) == expected, option
            continue
        with pytest.raises(SystemExit) as refused:
            build_parser().parse_args([*ROUND_HEADS[command], *given])
        err = capsys.readouterr().err.splitlines()[-1]
        assert refused.value.code == EXIT_ERROR and f"not an option of daskbench {command}: {lacks[option]}" in err
    assert set(lacks) <= set(ROUND_OPTIONS) and all(lacks.values())


def test_a_too_noisy_verdicts_note_suggests_flags_the_commands_it_names_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``compare``'s note on a too-noisy verdict asks for more rounds of the command that measured them, with a flag
    each of those takes (``compare --max-rounds`` does not exist: compare measures nothing), or more repeats."""
    named = re.findall(r"\b(ab|pr|confirm|bisect)\b", MORE_ROUNDS)
    assert sorted(named) == ["ab", "bisect", "confirm", "pr"] and "--max-rounds" in MORE_ROUNDS
    for command in named:
        assert build_parser().parse_args([*ROUND_HEADS[command], "--max-rounds", "60"]).max_rounds == 60
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--max-rounds", "5"])
    assert "pytest -m benchmark --repeat" in MORE_REPEATS
    from daskbench.config import OPTIONS_BY_NAME

    assert OPTIONS_BY_NAME["repeat"].flag == "--repeat"


DECIDING = [["compare"], ["report"], ["alert"], ["ab"], ["bisect"], ["confirm"], ["pr", "main", "HEAD"], ["calibrate"]]


@pytest.mark.parametrize("head", DECIDING, ids=[h[0] for h in DECIDING])
def test_every_command_that_decides_takes_floor_in_one_syntax(
    head: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--floor runtime=1.2,wordcount:runtime=1.4`` and a bare ``1.05`` read the same in every deciding command
    (calibrate took one float before)."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml with floors of its own
    monkeypatch.delenv("DASKBENCH_FLOOR", raising=False)
    floors = settings(build_parser().parse_args([*head, "--floor", "runtime=1.2,wordcount:runtime=1.4"])).floor
    assert floors is not None and floors["runtime_s"] == 1.2 and floors["wordcount:runtime_s"] == 1.4
    assert (settings(build_parser().parse_args([*head, "--floor", "1.05"])).floor or {})["runtime_s"] == 1.05


BUDGETED = [["ab"], ["bisect"], ["calibrate"], ["confirm"], ["pr", "main", "HEAD"]]


@pytest.mark.parametrize("head", BUDGETED, ids=[h[0] for h in BUDGETED])
def test_every_command_that_adds_rounds_takes_one_budget(head: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-rounds`` and ``--max-time`` (a duration; a bare number in minutes, as before), same defaults."""
    default = build_parser().parse_args(head)
    assert (default.max_rounds, default.max_time) == (30, 10.0)
    given = build_parser().parse_args([*head, "--max-rounds", "7", "--max-time", "90s"])
    assert (given.max_rounds, given.max_time) == (7, 1.5)
    assert build_parser().parse_args([*head, "--max-time", "3"]).max_time == 3.0
    assert build_parser().parse_args([*head, "--max-time", "1h"]).max_time == 60.0
    with pytest.raises(SystemExit) as refused:
        build_parser().parse_args([*head, "--max-time", "0s"])
    assert refused.value.code == EXIT_ERROR and "is not a duration" in capsys.readouterr().err


def test_durations_read_one_syntax_with_the_old_bare_units() -> None:
    """``90s``, ``10m``, ``12h``, ``30d``, ``2w`` everywhere; a bare number in the flag's old unit, or none."""
    assert [parse_duration(text, None) for text in ("90s", "10m", "12h", "30d", "2w", "1.5h")] == [
        90, 600, 43_200, 2_592_000, 1_209_600, 5400,
    ]  # fmt: skip
    assert parse_duration("3", "m") == 180 and parse_duration("3", "d") == 259_200
    assert [parse_duration(text, None) for text in ("3", "3y", "-3d", "d", "soon")] == [None] * 5
    assert build_parser().parse_args(["gc", "--older-than", "30"]).older_than == 30
    assert build_parser().parse_args(["gc", "--older-than", "12h"]).older_than == 0.5


def test_since_reads_durations_and_dates_and_refuses_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    """``export --since`` takes a duration before now (any unit of the one syntax) or an ISO date."""
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert since("2026-01-31") == "2026-01-31T00:00:00+00:00"
    assert since("30d", now) == (now - timedelta(days=30)).isoformat(timespec="seconds")
    assert since("90m", now) == "2026-03-01T10:30:00+00:00"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["export", "--since", "last tuesday"])
    assert "neither a duration (30d, 12h, 2w) nor an ISO date" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["publish", "--reports", "-5"], "'-5' is not a whole number from 0"),
        (["runs", "--limit", "0"], "'0' is not a whole number from 1"),
        (["data", "prepare", "--seed", "-1"], "'-1' is not a whole number from 0 to 4294967295"),
        (["ab", "--rounds", "2.5"], "'2.5' is not a whole number from 1"),
        (["compare", "--history", "x"], "'x' is not a whole number from 1"),
    ],
)
def test_every_whole_number_is_read_by_one_parser(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """A count that is negative, zero where it must not be, a fraction or a word: exit 2, one line, an example."""
    with pytest.raises(SystemExit) as refused:
        build_parser().parse_args(args)
    err = capsys.readouterr().err
    assert refused.value.code == EXIT_ERROR and said in err and "e.g." in err, err


def test_exit_codes_are_listed_once_and_an_undecided_bisection_has_its_own() -> None:
    """The package docstring and ``daskbench --help`` list 0, 1, 2, 3 and 130; a bisection that stays undecided
    exits 3, never 2 (could not run), as one whose --budget ran out does; the other ways a bisection ends (no
    regression, a culprit) have a code of their own."""
    shown = re.sub(r"\s+", " ", build_parser().format_help())
    for code in ("0 ok", "1 a regression", "2 could not run", "3 undecided", "130 interrupted"):
        assert code in shown, code
    assert all(f"- {code}:" in (cli.__doc__ or "") for code in ("0", "1", "2", "3", "130"))
    assert EXITS["undecided"] == EXITS["budget"] == EXIT_UNDECIDED != EXIT_ERROR
    assert len({EXITS["none"], EXITS["culprit"], EXIT_UNDECIDED}) == 3


@pytest.mark.parametrize("command", ["ab", "pr main HEAD", "bisect 2024.1.0 2024.2.0", "culprit --group g"])
def test_a_budget_too_short_for_one_round_is_refused_before_anything_starts(command: str, tmp_path: Path) -> None:
    """``--budget 1s`` ran 2.7 minutes, measured nothing and exited 0 (issue 45, item 3): now one line, exit 2,
    before any session, build or store."""
    done = daskbench_cli(*command.split(), "--budget", "1s", "--", "--workers", "1", "--saturation", "inf",
                         cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "'1s' is too short for one round" in done.stderr and "give at least 1m" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "results").exists()
