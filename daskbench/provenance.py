"""Facts about a run that explain differences later: versions, host, dask config, git, CI."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import psutil

from daskbench.model import SourceCommit
from daskbench.redact import redact_url, redact_value
from daskbench.text import flatten

PACKAGES = (
    "dask",
    "distributed",
    "dask-expr",  # dask 2024.3-2024.12's dataframes: an environment rebuilt from the record needs its version
    "xarray",
    "pandas",
    "numpy",
    "pyarrow",
    "s3fs",
    "fsspec",
    "bokeh",
    "sqlalchemy",
    "psutil",
    "tornado",
    "msgpack",
    "cloudpickle",
    "coiled",
    "daskbench",
)


def versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """The interpreter's and `PACKAGES`' versions, and those of ``extra`` (``--record-versions``: packages
    a benchmark depends on, so ``daskbench env`` and ``confirm`` can rebuild them); one not installed is
    left out."""
    found = {"python": platform.python_version()}
    for name in dict.fromkeys([*PACKAGES, *(re.sub(r"[-_.]+", "-", name).lower() for name in extra)]):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def commits(extra: Iterable[str] = ()) -> dict[str, str]:
    """The run tags (`SourceCommit.tags`) of the packages of `versions` installed from git: the commit and
    the repository their PEP 610 record (``direct_url.json``) names, or, installed from a local folder that is
    a clean git checkout (an editable dask), its ``HEAD``. So a night of dask from its main branch can be
    rebuilt at its commit, and bisected commit by commit, later."""
    tags: dict[str, str] = {}
    for name in dict.fromkeys([*PACKAGES, *(re.sub(r"[-_.]+", "-", name).lower() for name in extra)]):
        found = source_commit(name)
        if found is not None:
            tags |= found.tags()
    return tags


def source_commit(name: str) -> SourceCommit | None:
    """Package ``name``'s commit as its install record gives it (None: not installed from git)."""
    try:
        text = metadata.distribution(name).read_text("direct_url.json")
        record = json.loads(text or "null")
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return None
    url, vcs = record["url"], record.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        if vcs.get("vcs") != "git" or not isinstance(commit, str) or not commit:
            return None
        return SourceCommit(name, commit, redact_url(url))
    if urlsplit(url).scheme != "file":
        return None
    return _checkout_commit(name, unquote(urlsplit(url).path))


def _checkout_commit(name: str, folder: str) -> SourceCommit | None:
    """The ``HEAD`` of the clean git checkout ``folder`` a package was installed from (None: none, or edited)."""
    top = git("-C", folder, "rev-parse", "--show-toplevel")
    if top is None or os.path.realpath(top) != os.path.realpath(folder):
        return None
    head = git("-C", folder, "rev-parse", "HEAD")
    if head is None or git("-C", folder, "status", "--porcelain", "--untracked-files=no"):
        return None
    return SourceCommit(name, head, Path(folder).as_uri())


def host() -> dict[str, Any]:
    """The machine's facts; ``host_class`` is the user's name for its kind (``DASKBENCH_HOST_CLASS``),
    which history matches on instead of the exact CPU model when both runs have one."""
    host_class = os.environ.get("DASKBENCH_HOST_CLASS", "").strip()
    return {
        **({"host_class": host_class} if host_class else {}),
        "cpu_model": _cpu_model(),
        "cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python_implementation": sys.implementation.name,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def redacted(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A flat config as stored: secret-looking keys' values as ``***``, other non-scalars as their repr."""
    return {key: _stored_value(key, value) for key, value in flat.items()}


def _stored_value(key: str, value: Any) -> Any:
    """The one redaction rule (`daskbench.redact`): secret keys, and secrets inside strings and lists."""
    value = redact_value(value, key)
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def dask_config() -> dict[str, Any]:
    import dask

    return redacted(flatten(dask.config.config))


def git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def git_sha() -> str | None:
    sha = git("rev-parse", "HEAD")
    if sha and git("status", "--porcelain", "--untracked-files=no"):
        return sha + "-dirty"
    return sha


def default_label() -> tuple[str, str | None]:
    """The run's label when none is given: the CI or git branch (no reason); else ``local`` and why,
    which the session header says so that a run is never labelled ``local`` silently."""
    branch = (
        os.environ.get("GITHUB_HEAD_REF")
        or os.environ.get("GITHUB_REF_NAME")
        or git("rev-parse", "--abbrev-ref", "HEAD")
    )
    if branch == "HEAD":
        return "local", "detached HEAD, no branch"
    if branch:
        return branch, None
    if git("rev-parse", "--git-dir") is None:
        return "local", "not in a git repository"
    return "local", "no git commit here"


def ci_url() -> str | None:
    server, repo, run = (os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return redact_url(f"{server}/{repo}/actions/runs/{run}") if server and repo and run else None
