"""What an outside step (uv, pip, git) printed, read back for the one line said when it failed."""

from __future__ import annotations

import re


def first_error(output: str, limit: int = 300) -> str:
    """The installer's first error line (pip's ``ERROR:``, uv's ``error:`` or ``Because``), else its last."""
    lines = [line.strip(" ╰─▶│×") for line in output.splitlines() if line.strip()]
    chosen = next((line for line in lines if re.match(r"(?i)(error\b|because\b)", line)), lines[-1] if lines else "")
    return chosen[:limit] or "no output"
