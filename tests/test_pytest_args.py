"""``pr``, ``bisect``, ``ab``, ``confirm`` and ``calibrate`` take ``-- PYTEST_ARGS`` one way (issue 32): in every
form README.md, docs/*.md and their ``--help`` show, options before or after the positionals and ``--`` right
after them, exactly what follows the first ``--`` reaches pytest. (A real ``pr BASE HEAD -- ...`` run is in
test_pr.py: its first run is written that way.)"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from daskbench.cli import build_parser
from daskbench.cli.app import EXIT_ERROR, split_pytest_args

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = ("pr", "bisect", "ab", "confirm", "calibrate")
BASH_BLOCK = re.compile(r"^[ \t]*```bash[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
#: ``daskbench CMD ...`` or ``python -m daskbench CMD ...``, up to a comment.
COMMAND_LINE = re.compile(rf"(?:^|\s)(?:python -m )?daskbench ((?:{'|'.join(COMMANDS)})\s[^#\n]*)")
#: An inline code span; a whole command with ``--`` in one counts too (a synopsis's ``[-- pytest args]``).
INLINE_CODE = re.compile(r"`([^`\n]*)`")
#: A placeholder such as ``<that python>``: one word for the shell.
PLACEHOLDER = re.compile(r"<[^>\n]+>")
#: A shell variable (``"$PR_NUMBER"``), and the value it stands for where a word would not do.
VARIABLE = re.compile(r"\$\{?([A-Z_]+)\}?")
VALUES = {"PR": "7", "PR_NUMBER": "7"}


def documented() -> list[tuple[str, str]]:
    """(page, command line after ``daskbench``) of every such command in a ```bash block of the docs, and of
    every inline one that gives pytest arguments."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in BASH_BLOCK.findall(text):
            found += [(page.name, match.strip()) for match in COMMAND_LINE.findall(block)]
        for code in INLINE_CODE.findall(text):
            command = code.replace("[", " ").replace("]", " ")  # a synopsis: [-- pytest args]
            if "--" in command.split():
                found += [(page.name, match.strip()) for match in COMMAND_LINE.findall(command)]
    return found


def in_help() -> list[tuple[str, str]]:
    """(command, example) of every example command line the five commands' --help gives."""
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name in COMMANDS:
        epilog = re.sub(r"\s+", " ", subparsers.choices[name].epilog or "")
        for part in epilog.split("; "):  # an example may end with a remark in brackets: (token in GITHUB_TOKEN)
            example = re.sub(r"\s*\([^)]*\)$", "", part.replace("example: ", " "))
            found += [(name, match.strip()) for match in COMMAND_LINE.findall(example)]
    return found


def _words(line: str) -> list[str]:
    """The words the shell makes of ``line``, placeholders and variables filled in."""
    return shlex.split(VARIABLE.sub(lambda found: VALUES.get(found[1], "X"), PLACEHOLDER.sub("X", line)))


def _after_dashes(words: list[str]) -> list[str]:
    return words[words.index("--") + 1 :] if "--" in words else []


DOCUMENTED = documented()
IN_HELP = in_help()


def test_the_docs_and_help_show_each_of_the_five_commands_with_pytest_arguments() -> None:
    """The collection is not empty: every command appears, in the docs or its --help, with ``--``."""
    shown = {_words(line)[0] for _, line in DOCUMENTED + IN_HELP if "--" in _words(line)}
    assert shown == set(COMMANDS), shown
    assert ("pull-requests.md", "pr main HEAD -- -k ocean --size tiny") in DOCUMENTED


@pytest.mark.parametrize(
    ("where", "line"), DOCUMENTED + IN_HELP, ids=[f"{w}: {c[:60]}" for w, c in DOCUMENTED + IN_HELP]
)
def test_a_shown_command_parses_and_hands_pytest_what_follows_the_dashes(where: str, line: str) -> None:
    """As written (placeholders and shell variables filled in): parsed without error, pytest gets exactly what
    follows ``--``."""
    words = _words(line)
    args = build_parser().parse_args(words)
    assert args.command == words[0] and args.pytest_args == _after_dashes(words), (where, line)


PR_ORDERS = [
    "pr main HEAD -- -k ocean --size tiny",
    "pr --max-rounds 5 main HEAD -- -k ocean --size tiny",
    "pr main HEAD --max-rounds 5 -- -k ocean --size tiny",
    "pr main --max-rounds 5 HEAD -- -k ocean --size tiny",
    "pr --max-rounds=5 main HEAD --floor 1.2 -- -k ocean --size tiny",
]


@pytest.mark.parametrize("line", PR_ORDERS)
def test_pr_options_may_stand_before_between_or_after_the_sides(line: str) -> None:
    """Wherever the options stand, the sides are BASE and HEAD and pytest gets ``-k ocean --size tiny``."""
    args = build_parser().parse_args(line.split())
    assert (args.base, args.head, args.pytest_args) == ("main", "HEAD", ["-k", "ocean", "--size", "tiny"])
    assert args.max_rounds == (5 if "max-rounds" in line else 30)


@pytest.mark.parametrize("command", [["ab"], ["bisect"], ["confirm"], ["calibrate"], ["pr", "main", "HEAD"]])
def test_options_after_the_dashes_are_pytests_and_a_second_dashes_reaches_it(command: list[str]) -> None:
    """After the first ``--`` nothing is daskbench's: not ``--max-rounds``, not ``--help``, not a second ``--``."""
    args = build_parser().parse_args([*command, "--max-rounds", "4", "--", "--max-rounds", "9", "--help", "--", "x"])
    assert args.max_rounds == 4 and args.pytest_args == ["--max-rounds", "9", "--help", "--", "x"]
    assert build_parser().parse_args(command).pytest_args == []


@pytest.mark.parametrize("command", [["ab"], ["pr", "main", "HEAD"]])
def test_pytest_arguments_without_the_dashes_are_one_error_that_says_where_they_go(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``daskbench pr main HEAD -k ocean`` (no ``--``): exit 2, one error line pointing at ``--``."""
    with pytest.raises(SystemExit) as refused:
        build_parser().parse_args([*command, "-k", "ocean"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert refused.value.code == EXIT_ERROR and len(errors) == 1 and "go after --" in errors[0], errors


def test_the_splitter_cuts_at_the_first_dashes_only() -> None:
    assert split_pytest_args(["a", "--", "-k", "--", "b"]) == (["a"], ["-k", "--", "b"])
    assert split_pytest_args(["a", "b"]) == (["a", "b"], [])
    assert split_pytest_args(["--"]) == ([], [])
