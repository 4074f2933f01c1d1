"""The stand-in package of the environment tests and measure/bisect-under-load: ``standin``, whose ``work()``
sleeps what a release or commit sets (the slowdown it plants), and a suite of one benchmark that measures it.

``standin_wheel`` writes a wheel of a version (no build backend: `testing.wheel`), ``standin_project`` the same as a
flit project to build or commit; ``STANDIN_BENCH`` is the suite. Stdlib only (the project's tests commit and
bisect it: tests/helpers.py's ``standin_commit`` and ``standin_checkout``).
"""

from __future__ import annotations

from pathlib import Path

from testing.wheel import write_wheel

#: The stand-in's one module, for the environment tests (bisect, confirm, pr, env): ``work()`` sleeps ``seconds``
#: (what a release or commit slows down), ``steady()`` always 0.4 s; both return the version.
STANDIN = '''"""The stand-in: work() sleeps {seconds} s, steady() 0.4 s."""

import time

VERSION = "{version}"


def work():
    time.sleep({seconds})
    return VERSION


def steady():
    time.sleep(0.4)
    return VERSION
'''
#: Its project file, for the tests that build it from source (a flit project: a small build backend).
STANDIN_PYPROJECT = """[build-system]
requires = ["flit_core>=3.4"]
build-backend = "flit_core.buildapi"

[project]
name = "standin"
version = "{version}"
description = "a stand-in package for daskbench's tests"
"""


def standin_module(version: str, seconds: float) -> dict[str, str]:
    """The stand-in package's one module at ``version``: ``work()`` sleeps ``seconds``."""
    return {"standin/__init__.py": STANDIN.format(version=version, seconds=seconds)}


def standin_wheel(folder: Path, version: str, seconds: float) -> Path:
    """A wheel of the stand-in at ``version`` in ``folder``, written without a build backend; its path."""
    return write_wheel(folder, "standin", version, standin_module(version, seconds))


def standin_project(folder: Path, version: str, seconds: float) -> Path:
    """The stand-in at ``version`` as a project in ``folder`` (pyproject.toml, ``standin/__init__.py``), to build
    or to commit; written over what is there. Returns ``folder``."""
    (folder / "standin").mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(STANDIN_PYPROJECT.format(version=version))
    for path, text in standin_module(version, seconds).items():
        (folder / path).write_text(text)
    return folder


#: A suite of one benchmark, ``test_standin_work``: the stand-in's ``work()`` as one dask.delayed task.
STANDIN_BENCH = """
import dask
import pytest
import standin

pytestmark = pytest.mark.benchmark


def test_standin_work(measure):
    assert measure(dask.delayed(standin.work)(), name="standin_work", params={}) == standin.VERSION
"""
