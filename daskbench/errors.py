"""The one user-facing error type (with `StoreFault`, the store's storage failing), and the signal
that a comparison found a regression.

A `DaskbenchError` message is a single line that says what is wrong and how to fix
it; the CLI prints it as ``error: ...`` and exits 2, the pytest plugin turns it into
a usage error before any cluster starts. `check_writable` is the one check that an output path
(``-o``, ``--evidence-dir``, ``init DIR``) can be written, made before the command does anything.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


class DaskbenchError(Exception):
    """Bad input or an unusable environment; the message says how to fix it."""

    #: Whether the CLI wraps the line between words at 120 columns (`daskbench.text.wrap_line`): set by a message
    #: that quotes another tool's reason and a path (a failed install), too long for one; the rest stays one line.
    wrap: bool = False

    def __init__(self, message: str) -> None:
        if "\n" in message:
            raise ValueError("DaskbenchError messages are one line")
        super().__init__(message)


class StoreFault(DaskbenchError):
    """The store could not be read or written for a cause outside it (a full disk, read-only media,
    permission denied); the message names the cause and the fix. A session stops at the first one."""


class RegressionFound(Exception):
    """A comparison found at least one regressed (or newly failing) case."""


def check_writable(path: Path, flag: str, *, folder: bool = False) -> None:
    """One `DaskbenchError` line unless ``path`` (a file, or a ``folder``) can be written: nothing in its
    way is a file (or, for a file, the path is no folder) and the nearest existing folder above it takes
    a new entry (tried with a scratch folder, removed at once), so a command fails before it starts."""
    existing = _nearest_existing(path)
    if existing == path and path.is_dir() != folder:
        wanted = "a folder" if folder else "a file"
        raise DaskbenchError(f"{flag} {path} is {'a folder' if path.is_dir() else 'a file'}; name {wanted} instead")
    if existing != path and not existing.is_dir():
        raise DaskbenchError(f"{flag} {path}: {existing.name} is a file, not a folder; choose another path")
    parent = existing if existing.is_dir() else existing.parent
    try:
        tempfile.TemporaryDirectory(dir=parent, prefix=".daskbench-probe-").cleanup()
    except OSError as exc:
        raise DaskbenchError(
            f"{flag} {path}: cannot write in {parent} ({exc.strerror or exc}); choose a folder you can write to"
        ) from None


def _nearest_existing(path: Path) -> Path:
    """``path`` or the closest of its parents that exists (the current folder for a relative path)."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:
            continue
    return Path(path.anchor or ".")
