"""Why an installer step failed, in one line: the request's fault (`InstallFailed`: a pin the index does not
have, a source tree that does not build) or the disk's (`disk_fault`: full, over quota, read-only).

The line names the pin the index lacks with the index asked (`missing_pin`), else the requirements the
installer's reason names (`involved`) and that reason, and where its whole output is (`where_logged`).
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from daskbench.envs.installers import Build
from daskbench.envs.output import reason
from daskbench.envs.specs import EnvSpec, normalized
from daskbench.errors import DaskbenchError


class InstallFailed(DaskbenchError):
    """The installer refused what was asked (a version the index lacks, a source tree that does not build):
    the request's fault, not the machine's (a full disk, a cache that cannot be written are not this). Its line
    quotes the installer's reason and names its log: wrapped between words at 120 columns."""

    wrap = True


#: The errors an installer meets writing the environment that are the disk's, not the request's.
_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def disk_fault(output: str) -> int | None:
    """The errno of a full or read-only disk the installer's output names (uv's ``(os error 28)``, pip's
    ``[Errno 28]``, or the words), else None: such a step failed for the cache's disk, whatever it installed."""
    for code in _DISK_ERRORS:
        if re.search(rf"os error {code}\)|\[Errno {code}\]|{re.escape(os.strerror(code))}", output):
            return code
    return None


def failure_line(output: str, job: Build, what: str) -> str:
    """One line for a failed step: the pin the index does not have, named with the index asked; else the
    requirements the installer's reason names (``--pin`` ones too) and that reason (uv's ``Because ...``,
    else its first error line), with the log of its whole output."""
    spec, tool = job.spec, job.tool.name
    missing = missing_pin(output, spec)
    if missing is not None:
        asked = job.index.describe(tool)
        return f"{missing} ({spec.source}) cannot be had: not on the index (asked {asked}); nothing was built"
    why = re.sub(r"(?i)^error:\s*", "", reason(output))  # the line is said after "error: " already
    named = ", ".join(involved(why, spec))
    return f"{tool} could not {what}{f' {named}' if named else ''} for {spec.source}: {why} ({where_logged(job)})"


#: The longest log path a failure line names; a longer one (a word the line cannot wrap within 120 columns) is
#: "the log named above", by the ``env: building`` line.
LOG_ROOM = 110


def where_logged(job: Build) -> str:
    """Where the installer's whole output is: its log's path (home as ``~``), or the log named above."""
    home, path = str(Path.home()), str(job.log)
    if home not in ("", "/") and path.startswith(home + "/"):
        path = "~" + path[len(home) :]
    return f"{job.tool.name}'s output: {path if len(path) <= LOG_ROOM else 'the log named above'}"


def involved(said: str, spec: EnvSpec) -> list[str]:
    """The spec's requirements (exact pins, then the extra ones: defaults and ``--pin``) whose package ``said``
    names (``pandas==1.3.5``, ``numpy<2``), in the spec's order."""
    words = {normalized(word) for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", said)}
    pins = [f"{name}=={version}" for name, version in spec.pins]
    return [text for text in [*pins, *spec.extra] if normalized(re.split(r"[<>=!~;\[ ]", text, maxsplit=1)[0]) in words]


def missing_pin(output: str, spec: EnvSpec) -> str | None:
    """``name==version`` of the first pin the installer said it could not find (pip's and uv's words)."""
    for name, version in spec.pins:
        spelled = "[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))
        said = rf"(?:requirement|no versions? of)\s+{spelled}\s*==\s*{re.escape(version)}(?![\w.])"
        if re.search(said, output, flags=re.IGNORECASE):
            return f"{name}=={version}"
    return None
