"""The installers an environment is made with, and one environment's build as a job for them.

`choose_installer` picks ``uv`` (on PATH or importable) or pip (this interpreter's, else the new environment's
own); an `Installer` words its steps (create the virtualenv, install into it) for the folder and the `EnvSpec`,
and `compile_command` the last (byte-compile what was installed); a `Build` is one environment being built,
what `daskbench.envs.builds` runs those steps for and `daskbench.envs.failures` words a failed step of.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from daskbench.envs.index import Index, find_uv
from daskbench.envs.specs import EnvSpec
from daskbench.errors import DaskbenchError

#: The installers ``--installer`` chooses from (``auto``: uv when it is here, else pip).
INSTALLERS = ("auto", "uv", "pip")


def interpreter(folder: Path) -> Path:
    """The python of the environment in ``folder``."""
    return folder / "bin" / "python"


@dataclass(frozen=True)
class Installer:
    """How environments are made: ``uv`` (``uv venv``, ``uv pip install --python``) or pip
    (``python -m venv``, then ``pip --python ENV install`` from this interpreter's pip; with an empty
    ``command``, the environment's own pip)."""

    name: str
    command: tuple[str, ...]

    def create(self, folder: Path) -> list[str]:
        if self.name == "uv":
            return [*self.command, "venv", "--quiet", "--python", sys.executable, str(folder)]
        if self.command:  # this interpreter's pip installs, so the environment needs none
            return [sys.executable, "-m", "venv", "--without-pip", str(folder)]
        return [sys.executable, "-m", "venv", str(folder)]

    def install(self, folder: Path, spec: EnvSpec, index: Index) -> list[str]:
        python = str(interpreter(folder))
        if self.name == "uv":  # byte-compiled after (`compile_command`)
            return [*self.command, "pip", "install", "--python", python, *_no_deps(spec), *index.args(),
                    *spec.requirements()]  # fmt: skip
        pip = [*self.command, "--python", python] if self.command else [python, "-m", "pip"]
        return [*pip, "install", "--disable-pip-version-check", "--no-compile", *_no_deps(spec), *index.args(),
                *spec.requirements()]  # fmt: skip


def compile_command(folder: Path) -> list[str]:
    """Byte-compile the environment's site-packages, as pip would at install, but without the libraries' test
    folders (``pandas/tests``, ``scipy/*/tests``: a third of the files of daskbench's own dependencies, never
    imported by a benchmark): else, where PYTHONDONTWRITEBYTECODE is set, every restarted worker compiles dask
    again, and a benchmark's first rounds pay for it."""
    found = sorted((folder / "lib").glob("python3*/site-packages"))
    site = str(found[0] if found else folder)
    tests = "^" + re.escape(site) + r"/(?:.+/)?tests?/"  # a path under site-packages, never the one above it
    return [str(interpreter(folder)), "-m", "compileall", "-q", "-j", "0", "-x", tests, site]


def _no_deps(spec: EnvSpec) -> list[str]:
    """An overlay gets the pinned packages alone: everything else comes from the site-packages it sees."""
    return ["--no-deps"] if spec.overlay else []


def choose_installer(asked: str = "auto") -> Installer:
    """``uv`` when asked or (auto) when on PATH or importable; pip otherwise; one line when unavailable."""
    if asked not in INSTALLERS:
        raise DaskbenchError(f"--installer {asked!r}: choose one of {', '.join(INSTALLERS)}")
    uv = find_uv()
    if asked == "uv" and uv is None:
        raise DaskbenchError("--installer uv: uv is neither on PATH nor importable here; pip install uv")
    if uv is not None and asked != "pip":
        return Installer("uv", uv)
    if importlib.util.find_spec("pip") is not None:
        return Installer("pip", (sys.executable, "-m", "pip"))
    return Installer("pip", ())  # no pip here: the environment's own (python -m venv installs it)


@dataclass(frozen=True)
class Build:
    """One environment being built: what it holds, where the installer looks, the installer, and the
    log file its steps write to."""

    spec: EnvSpec
    index: Index
    tool: Installer
    log: Path
