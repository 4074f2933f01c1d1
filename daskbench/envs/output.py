"""What an outside step (uv, pip, git) printed, read back for the one line said when it failed."""

from __future__ import annotations

import re
import textwrap

#: What uv draws around its lines on a terminal (a cross before ``No solution found``, ``╰─▶`` before ``Because``).
_DRAWN = " ╰─▶│×"


def first_error(output: str, limit: int = 300) -> str:
    """The installer's first error line (pip's ``ERROR:``, uv's ``error:`` or ``Because``), else its last."""
    lines = [line.strip(_DRAWN) for line in output.splitlines() if line.strip()]
    chosen = next((line for line in lines if re.match(r"(?i)(error\b|because\b)", line)), lines[-1] if lines else "")
    return chosen[:limit] or "no output"


def reason(output: str, limit: int = 600) -> str:
    """Why a resolution failed, in the installer's words: uv's ``Because ...`` and the lines that carry it on
    (``And because ...``), joined and cut between words at ``limit`` characters; else `first_error`. uv's first
    error line (``No solution found when resolving dependencies``) names neither a package nor a cause."""
    lines = [re.sub(r"(?i)^cause:\s*", "", line.strip(_DRAWN)) for line in output.splitlines()]
    start = next((index for index, line in enumerate(lines) if re.match(r"(?i)because\b", line)), None)
    if start is None:
        return first_error(output)
    taken = []
    for line in lines[start:]:
        if not line or re.match(r"(?i)(hint|help|error|warning|note)\b", line):
            break
        taken.append(line)
    return textwrap.shorten(" ".join(taken), limit, placeholder=" ...")
