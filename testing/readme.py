"""The README's "Using daskbench in your own repository" bash block, read one way for the two that run it: the test
of its install lines (tests/test_init.py) and ``ci/installed-smoke``, which runs the whole block in a fresh venv:
``python -m testing.readme CLONE`` prints it with its first line's value (where the reader cloned daskbench) set to
CLONE. Stdlib only."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## Using daskbench in your own repository"


def own_repository_block(readme: Path = README) -> list[str]:
    """The lines of the section's first bash block, as written."""
    section = readme.read_text().split(SECTION, 1)[1]
    block = re.search(r"^```bash\n(.*?)^```", section, re.M | re.S)
    assert block is not None, f"no bash block under {SECTION!r}"
    return block[1].splitlines()


def with_clone(lines: list[str], clone: str) -> list[str]:
    """The block with its first line (``NAME=~/daskbench  # where you cloned daskbench``) set to ``clone``."""
    name = re.match(r"([A-Za-z_]+)=~/daskbench\s", lines[0])
    assert name, f"the block's first line sets where daskbench was cloned: {lines[0]!r}"
    return [f"{name[1]}={shlex.quote(clone)}", *lines[1:]]


if __name__ == "__main__":
    print(*with_clone(own_repository_block(), sys.argv[1]), sep="\n")
