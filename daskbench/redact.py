"""The one redaction rule: what of a value may be stored, printed, put in JSON or a report.

Everything that leaves the process through daskbench (the store, terminal lines, JSON,
the HTML report) passes here first, so a secret is hidden the same way everywhere:

- a URL's password, in its user-info (``user:pw@host``) or its query
  (``?password=...``, ``?token=...``, any credential-looking parameter name);
- the value under a credential-looking key (`is_secret_key`: token, password, secret,
  credential, api key, private key, auth, session/access key);
- a swept ``--config`` value under a credential-looking key (`masked_choices`): ``***``, or ``***1``,
  ``***2``... when several are swept, so each case keeps an identity of its own without the secret;
- credential-looking text inside any string, also in lists and nested mappings:
  ``NAME=value`` or ``NAME: value`` where NAME looks like a credential
  (``AWS_SECRET_ACCESS_KEY=...``, ``GITHUB_TOKEN=...``, ``DB_PASSWORD=...``), AWS access key
  ids (``AKIA...``/``ASIA...``), and URLs with a password; a value that only says where the secret
  comes from (``${{ github.token }}``, ``$GITHUB_TOKEN``, ``${NAME}``, ``%NAME%``, ``<token>``) is no
  secret and stays, so a hint that tells how to pass one reads whole.

Stdlib only; imports nothing of daskbench, so every layer may use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

MASK = "***"

#: Names (config keys, URL query parameters, variables in text) whose values are credentials.
_SECRET_NAME = re.compile(
    r"token|password|passwd|pwd|secret|credential|api[-_]?key|private[-_]?key|auth|session[-_]?key|access[-_]?key|"
    r"signature|^sig$",
    re.IGNORECASE,
)
#: A value that only names where a secret comes from, never the secret itself: a GitHub Actions expression
#: (``${{ github.token }}``, ``${{ secrets.X }}``), a variable (``${NAME}``, ``$NAME`` in capitals,
#: ``%NAME%``), a ``<placeholder>``, or a value masked already (``***``, ``***2`` of `masked_choices`).
_REFERENCE = (
    r"(?:\$\{\{|(?:\$\{[A-Za-z_][A-Za-z0-9_]*\}|(?-i:\$[A-Z_][A-Z0-9_]*)|%[A-Za-z_][A-Za-z0-9_]*%|<[^\s<>]*>"
    r"|\*{3}\d*)(?:[\s'\",;)-]|$))"
)
#: ``NAME=value`` / ``NAME: value`` in free text, NAME credential-looking (``password``, ``DB_PASSWORD``,
#: ``x-auth-token``; not ``author``); the value runs to whitespace or a quote (a `_REFERENCE` is left as it is).
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]*(?:token|password|passwd|secret|credential|api[-_]?key|"
    r"private[-_]?key|access[-_]?key|auth(?!or))[A-Za-z0-9_.-]*)(?P<sep>\s*[=:]\s*)(?P<quote>['\"]?)"
    rf"(?P<value>(?!{_REFERENCE})[^\s'\"]+)",
    re.IGNORECASE,
)
#: AWS access key ids (long-term AKIA, temporary ASIA).
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
#: ``scheme://user:password@`` anywhere in text.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@/]+)(?P<at>@)")
#: A URL inside text, to redact its query.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def is_secret_key(name: str) -> bool:
    """Whether the value under this key (its last dotted part) is a credential."""
    return bool(_SECRET_NAME.search(str(name).rsplit(".", 1)[-1]))


def redact_url(url: str) -> str:
    """The URL with any password (user-info or credential-looking query parameter) as ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparseable URL>"
    netloc = parts.netloc
    if password is not None:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_key(name) for name, _ in pairs):
            query = urlencode(
                [(n, MASK if is_secret_key(n) and v else v) for n, v in pairs], safe="*/:", quote_via=quote
            )
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    rebuilt = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else f"{netloc}{parts.path}"
    return rebuilt + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")


def redact_text(text: str) -> str:
    """``text`` with credential-looking assignments, AWS key ids and URL passwords as ``***``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}{m['at']}", text)
    text = _URL.sub(lambda m: redact_url(m.group(0)) if "?" in m.group(0) else m.group(0), text)
    text = _ASSIGNMENT.sub(lambda m: f"{m['name']}{m['sep']}{m['quote']}{MASK}", text)
    return _AWS_KEY_ID.sub(MASK, text)


def redact_value(value: Any, key: str = "") -> Any:
    """A JSON-like value with every secret hidden: under secret keys wholly, inside strings by `redact_text`."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    return value


def masked_choices(key: str, values: Sequence[str]) -> tuple[str, ...]:
    """The values swept for a config ``key`` as they may be shown, stored and put in test ids: as given,
    or for a credential-looking key (`is_secret_key`) ``***`` for one value and ``***1``, ``***2``, ...
    (their order in the sweep) for several, so their cases stay apart and the values stay hidden."""
    if not is_secret_key(key):
        return tuple(values)
    return (MASK,) if len(values) == 1 else tuple(f"{MASK}{n}" for n in range(1, len(values) + 1))
