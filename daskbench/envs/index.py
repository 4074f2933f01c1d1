"""Where the installer looks (`Index`: an index URL, folders of wheels) and the versions it offers there
(`available_versions`: a local folder's file names; ``pip index versions`` for an index)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from daskbench.envs.output import first_error
from daskbench.envs.specs import normalized
from daskbench.errors import DaskbenchError


@dataclass(frozen=True)
class Index:
    """Where the installer looks: ``index_url`` replaces its default index, ``find_links`` adds folders
    (or pages) of wheels, ``no_index`` leaves only those."""

    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def check(self) -> None:
        """One line for a local folder that does not exist, before anything is built."""
        for flag, where in (("--index-url", self.index_url), *(("--find-links", link) for link in self.find_links)):
            if where and "://" not in where and not Path(where).expanduser().exists():
                raise DaskbenchError(f"{flag} {where}: no such folder; give a folder of wheels or a URL")
        if self.no_index and not self.find_links:
            raise DaskbenchError("--no-index leaves no place to install from; add --find-links FOLDER")

    def args(self) -> list[str]:
        """The same flags for uv and pip."""
        found = ["--index-url", _as_url(self.index_url)] if self.index_url else []
        for link in self.find_links:
            found += ["--find-links", link if "://" in link else str(Path(link).expanduser().absolute())]
        return found + (["--no-index"] if self.no_index else [])

    def describe(self, tool: str) -> str:
        """Which index was asked, for an error line."""
        places = (
            [] if self.no_index else [self.index_url or f"{tool}'s configured index (default https://pypi.org/simple)"]
        )
        return ", ".join([*places, *(f"--find-links {link}" for link in self.find_links)])


def _as_url(where: str) -> str:
    """An index given as a local folder becomes a ``file://`` URL."""
    return where if "://" in where else Path(where).expanduser().absolute().as_uri()


# -- the versions an index has ----------------------------------------------------------------


def available_versions(name: str, index: Index) -> list[str]:
    """Every version of ``name`` that ``index`` offers, oldest first (`packaging.version` order): read
    off the file names in local ``--find-links`` folders, and asked of an index with ``pip index versions``."""
    from packaging.version import Version

    found: set[str] = set()
    for link in index.find_links:
        if "://" not in link:
            found |= folder_versions(Path(link).expanduser(), name)
    if not index.no_index or any("://" in link for link in index.find_links):
        found |= index_versions(name, index)
    return sorted(found, key=Version)


def folder_versions(folder: Path, name: str) -> set[str]:
    """The versions of ``name`` among the wheels and source archives in ``folder``."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    found: set[str] = set()
    for path in folder.iterdir() if folder.is_dir() else ():
        try:
            parsed = parse_wheel_filename(path.name) if path.suffix == ".whl" else parse_sdist_filename(path.name)
        except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
            continue
        if normalized(parsed[0]) == normalized(name):
            found.add(str(parsed[1]))
    return found


def index_versions(name: str, index: Index) -> set[str]:
    """The versions of ``name`` an index offers, by ``pip index versions --json`` (empty: none)."""
    if importlib.util.find_spec("pip") is None:
        raise DaskbenchError(f"listing the versions of {name} on an index needs pip here: pip install pip")
    command = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        "--json",
        "--disable-pip-version-check",
        *index.args(),
        name,
    ]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    if done.returncode != 0:
        if "no matching distribution" in done.stderr.lower():
            return set()
        raise DaskbenchError(
            f"pip could not list the versions of {name} ({index.describe('pip')}): {first_error(done.stderr)}"
        )
    return {str(version) for version in json.loads(done.stdout).get("versions", [])}
