"""One CLI vocabulary: every shared flag defined once in `daskbench.cli.common` and spelt one way in every
command (old spellings still work and say so), one duration syntax, one whole-number parser, one progress
writer, exit codes that mean one thing each, and command modules that never import each other."""

from __future__ import annotations

import argparse
import ast
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import daskbench.cli as cli
from daskbench.cli import build_parser, main
from daskbench.cli.bisect import EXITS
from daskbench.cli.common import EXIT_ERROR, EXIT_UNDECIDED, parse_duration, settings, since

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
    """Planted imports of command modules are found in each form; common and the package are not."""
    planted = "\n".join([
        "from daskbench.cli.ab import add_budget_options",
        "import daskbench.cli.env",
        "from daskbench.cli import compare",
        "from .bisect import EXITS",
        "from . import pr",
        "from daskbench.cli.common import say",
        "from daskbench.cli import main",
    ])  # fmt: skip
    found = _imported_commands(planted)
    expected = ["daskbench.cli.ab", "daskbench.cli.env", "daskbench.cli.compare", "daskbench.cli.bisect"]
    assert found == [*expected, "daskbench.cli.pr"]


def test_no_command_module_imports_another_command_module() -> None:
    """What commands share is in cli/common.py: a command module imports no other command module."""
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
    """Command modules reach stderr through `common.say` alone (no print(file=sys.stderr), no sys.stderr.write)."""
    direct = re.compile(r"file=sys\.stderr|sys\.stderr\.write|say_stderr")
    offenders = [path.name for path in sorted(CLI.glob("*.py")) if path.name != "common.py"
                 and direct.search(path.read_text())]  # fmt: skip
    assert offenders == []


#: (command line before the flag, the flag, its old spelling, the value's attribute, a value).
RENAMED = [
    (["compare"], "--group", "--ab", "ab_group", "g1"),
    (["report"], "--group", "--ab", "ab_group", "g1"),
    (["confirm"], "--group", "--name", "group", "confirm-1"),
    (["bisect"], "--group", "--name", "group", "bisect-1"),
    (["alert"], "--group", "--confirm-ab", "group", "confirm-1"),
    (["alert"], "-o", "--summary", "output", "summary.md"),
    (["pr", "main", "HEAD"], "-o", "--report", "output", "pr.html"),
    (["publish"], "--trend-runs", "--history", "trend_runs", "60"),
]


@pytest.mark.parametrize(("head", "flag", "old", "dest", "value"), RENAMED, ids=[f"{r[0][0]} {r[2]}" for r in RENAMED])
def test_an_old_spelling_sets_the_flag_and_says_once_that_it_is_old(
    capsys: pytest.CaptureFixture[str], head: list[str], flag: str, old: str, dest: str, value: str
) -> None:
    """The old flag gives the value the new one gives, with one stderr line naming both; --help shows the new
    flag, names the old one as former, and does not list it as a flag of its own."""
    new = getattr(build_parser().parse_args([*head, flag, value]), dest)
    assert capsys.readouterr().err == ""
    assert getattr(build_parser().parse_args([*head, old, value]), dest) == new
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and old in said[0] and flag.lstrip("-") in said[0] and "old spelling" in said[0], said
    with pytest.raises(SystemExit):
        main([head[0], "--help"])
    shown = capsys.readouterr().out
    listed = re.search(rf"^\s*{re.escape(old)}(?![\w)-])", shown, re.M)  # a line of its own (not "(formerly --ab)")
    assert f"(formerly {old})" in re.sub(r"\s+", " ", shown) and f"[{old} " not in shown and not listed


def test_an_old_spelling_still_runs_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``alert --infrastructure R --summary FILE`` (before -o): exit 0, the Markdown in FILE, one note on stderr."""
    summary = tmp_path / "summary.md"
    assert main(["alert", "--infrastructure", "cluster did not start", "--summary", str(summary)]) == 0
    err = capsys.readouterr().err
    assert "cluster did not start" in summary.read_text() and err.count("\n") == 1 and "--summary" in err


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
