"""GitHub, as ``daskbench pr`` and ``daskbench alert`` write to it.

- `api`: the REST client (`GitHub`): the few calls daskbench makes, each answer told apart in one line;
- `publish`: what daskbench keeps there: one comment found by its marker, a commit status's description,
  one issue per alert key.

The names below are the package's public face: code outside it imports them from ``daskbench.github``
(the tests reach `api`'s tuning constants, ``ATTEMPTS`` and ``TIMEOUT_S``, in their module).
"""

from __future__ import annotations

from daskbench.github.api import API_ENV, DEFAULT_API, GitHub, check_repo
from daskbench.github.publish import Kept, close_alert, keep_comment, open_alert, open_alerts, status_description

__all__ = [
    "API_ENV",
    "DEFAULT_API",
    "GitHub",
    "Kept",
    "check_repo",
    "close_alert",
    "keep_comment",
    "open_alert",
    "open_alerts",
    "status_description",
]
