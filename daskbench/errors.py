"""The one user-facing error type, and the signal that a comparison found a regression.

A `DaskbenchError` message is a single line that says what is wrong and how to fix
it; the CLI prints it as ``error: ...`` and exits 2, the pytest plugin turns it into
a usage error before any cluster starts.
"""

from __future__ import annotations


class DaskbenchError(Exception):
    """Bad input or an unusable environment; the message says how to fix it."""

    def __init__(self, message: str) -> None:
        if "\n" in message:
            raise ValueError("DaskbenchError messages are one line")
        super().__init__(message)


class RegressionFound(Exception):
    """A comparison found at least one regressed (or newly failing) case."""
