"""The whole ``daskbench bisect`` command that continues a bisection, or starts it again, as the user types it.

A bisection stopped by Ctrl-C, or undecided at ``--rounds-cap``, is continued with ``--group NAME``; its stored
steps are judged again with the options and pytest arguments given then, so the command printed is the one that
ran (`again_command`): every option as given, those naming the bisection (``--group``, its old spelling
``--name``, ``--resume``) and the ones changed (``--rounds-cap``) replaced, then ``--`` and the pytest arguments.
Each word is quoted for a shell, a secret in it (a store URL's password) hidden, and the command is broken over
lines that end in `` \\`` so that every line fits `text.WIDTH` and a copy of them all still runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from daskbench.redact import redact_text
from daskbench.text import WIDTH, wrap_items

#: The options that name the bisection: dropped from the options given, the one wanted added instead.
NAMING = ("--group", "--name", "--resume")
#: How far a command's later lines are indented.
INDENT = "    "


def again_command(given: Sequence[str], pytest_args: Sequence[str], flags: Mapping[str, str]) -> list[str]:
    """The lines of ``daskbench bisect`` with the options ``given`` (before ``--``), ``flags`` (``--group``:
    NAME, ``--rounds-cap``: N) in place of any naming option or option of theirs, and ``pytest_args``."""
    kept = _without(given, {*NAMING, *flags})
    words = ["daskbench", "bisect", *kept, *(word for pair in flags.items() for word in pair)]
    words += ["--", *pytest_args] if pytest_args else []
    quoted = [redact_text(shlex.quote(word)) for word in words]
    lines = wrap_items(quoted, WIDTH - len(" \\") - len(INDENT), indent=INDENT)
    return [f"{line} \\" for line in lines[:-1]] + lines[-1:]


def _without(given: Sequence[str], names: set[str]) -> list[str]:
    """``given`` without the options ``names`` and their values (``--group X`` and ``--group=X``)."""
    kept: list[str] = []
    skip = False
    for word in given:
        if skip:
            skip = False
        elif word in names:
            skip = True
        elif word.split("=", 1)[0] not in names:
            kept.append(word)
    return kept
