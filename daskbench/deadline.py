"""One helper: run a callable with a time limit (``--timeout``), in a thread that is waited for.

Stdlib only, so every layer (clusters, measure, the plugin) can use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

_T = TypeVar("_T")


def within(fn: Callable[[], _T], seconds: float, what: str, limit: float | None = None) -> _T:
    """``fn()`` in a helper thread, waited for at most ``seconds``; `TimeoutError` (outcome
    ``timeout``) past that, naming ``limit`` (the ``--timeout`` as given, when ``seconds`` is what is left of
    it) or else ``seconds``. The thread cannot be killed and is left to finish in the
    background; workers are restarted before the next measurement, which ends its tasks."""
    found: dict[str, Any] = {}

    def call() -> None:
        try:
            found["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            found["error"] = exc

    thread = threading.Thread(target=call, name=f"daskbench-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"{what} took more than {seconds if limit is None else limit:g} s (--timeout)")
    if "error" in found:
        raise found["error"]
    return cast(_T, found["value"])
