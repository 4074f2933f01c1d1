"""``pytest -m benchmark`` in this checkout collects ``benchmarks/`` alone: the harness's tests are not imported.

pyproject.toml's ``testpaths`` are ``tests`` and ``benchmarks`` (plain ``pytest`` runs the harness's tests; the
benchmarks are deselected by ``-m "not benchmark"``), and pytest imports the ``conftest.py`` of every testpath
before it collects anything: ``tests/conftest.py``, with the test tools it imports and the Ctrl-C handling it
installs (``tests/stopping.py``), so an interrupted benchmark run's traceback pointed into ``tests/``. This
plugin, named in ``addopts`` (``-p testing.pytest_scope``; ``pythonpath`` puts the checkout on ``sys.path`` first),
makes ``benchmarks`` the one path when pytest is started in the checkout's top with no path and a mark
expression that selects benchmarks only (``benchmark``, ``benchmark and ...``), before any conftest is read.
"""

from __future__ import annotations

import re
from typing import Any

#: A mark expression that selects benchmarks only: "benchmark" or "benchmark and ...".
BENCHMARKS_ONLY = re.compile(r"\s*benchmark(\s+and\s.*)?", re.DOTALL)
#: What ``pytest -m benchmark`` collects in this checkout.
BENCHMARKS = "benchmarks"


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    """Give ``benchmarks`` as the path (to the conftest loading that follows, and to the parse after it)."""
    known = early_config.known_args_namespace
    if known.file_or_dir or not BENCHMARKS_ONLY.fullmatch(known.markexpr or ""):
        return
    if early_config.invocation_params.dir != early_config.rootpath:  # testpaths count only from the top
        return
    known.file_or_dir = [BENCHMARKS]
    args.insert(0, BENCHMARKS)  # a positional first: no option before it can take it as its value
