"""Small text and value helpers every layer shares: one helper per job, stdlib only.

This is the bottom of the import graph beside `daskbench.errors`: it imports nothing
of daskbench, so any module may use it.
"""

from __future__ import annotations

import math
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

#: Binary units, as Dask prints memory.
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
#: Terminal width every line daskbench prints fits in.
WIDTH = 120
#: Characters a terminal acts on instead of showing: C0 controls (ESC, BEL, CR, LF, TAB...), DEL, C1
#: controls (CSI, OSC...), and the bidirectional and line-separator formatting characters (they reorder
#: or break what is shown around them).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: HTML's three specials as entities, for Markdown prose (GitHub passes raw HTML through).
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: ASCII punctuation Markdown reads as markup (emphasis, links and images, code, headings, lists,
#: tables, strikethrough); each gets a backslash, which CommonMark defines for every ASCII punctuation
#: mark. ``(``, ``)`` and ``!`` make a link or image only after ``[...]``, whose brackets are escaped.
_MARKDOWN = re.compile(r"([\\`*_\[\]#+\-|~])")
#: ``@name`` and ``#123`` (or ``owner/repo#123``): GitHub links these after rendering Markdown, so a
#: backslash does not stop them; a zero-width space after the ``@``/``#`` does (as Dependabot and
#: Renovate do for changelogs), and shows nothing.
_GITHUB_REFERENCE = re.compile(r"([@#])(?=[A-Za-z0-9])")
ZERO_WIDTH_SPACE = "\u200b"


def json_safe(value: Any) -> Any:
    """``value`` with NaN as null, +-infinity as ``"inf"``/``"-inf"``, tuples as lists, keys as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; values other than mappings are kept as they are."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def one_line(error: BaseException, limit: int = 500) -> str:
    """``TypeName: message`` on one line (whitespace folded), at most ``limit`` characters."""
    text = " ".join(str(error).split())
    return (f"{type(error).__name__}: {text}" if text else type(error).__name__)[:limit]


def format_bytes(n: float | None, missing: str = "-") -> str:
    """``1536`` -> ``"1.5 KiB"``; binary units; ``missing`` for None."""
    if n is None:
        return missing
    value = float(n)
    for unit in _BYTE_UNITS:
        if round(abs(value), 1) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def compact_bytes(n: int | None) -> str:
    """Bytes without a space, for ids: ``4GiB``, ``1.5GiB``, ``512MiB``; ``auto`` for None."""
    return "auto" if n is None else format_bytes(n).replace(".0 ", "").replace(" ", "")


def slots_text(slots: int | None) -> str:
    """Task slots per worker: the number, or ``unlimited`` (queuing off)."""
    return "unlimited" if slots is None else str(slots)


def slots_count(slots: int | None) -> str:
    """Task slots per worker with their noun: ``1 slot``, ``3 slots``, ``unlimited slots``."""
    return "unlimited slots" if slots is None else plural(slots, "slot")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """A count with its noun: ``1 slot``, ``2 slots``, ``0 slots``; ``many`` for an irregular plural."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def first_few(items: Sequence[str], shown: int = 3) -> str:
    """A long list by its first items and how many others: ``a, b, c and 5 more``."""
    rest = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {rest} more" if rest > 0 else "")


def wrap_line(text: str, width: int = WIDTH, indent: str = "    ") -> list[str]:
    """``text`` over lines of at most ``width`` columns, later lines indented; words are never cut
    (a word longer than a line gets a line of its own), and spaces inside a line are kept."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]


def wrap_items(items: Sequence[str], width: int = WIDTH, indent: str = "    ", sep: str = " ") -> list[str]:
    """Whole ``items`` over lines of at most ``width`` columns, later lines indented: an item is
    never split (one longer than a line gets a line of its own)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        else:
            lines.append((indent if lines else "") + item)
    return lines or [""]


def fit_items(items: Sequence[str], width: int = WIDTH, sep: str = " ", more: str = " ...") -> str:
    """Whole ``items`` while they fit in ``width`` columns, then ``more`` when some are left out:
    a figure is never cut in its middle."""
    kept: list[str] = []
    for index, item in enumerate(items):
        room = width - (len(more) if index < len(items) - 1 else 0)
        if len(sep.join([*kept, item])) > room:
            return sep.join(kept) + more
        kept.append(item)
    return sep.join(kept)


def format_usd(value: float) -> str:
    """Dollars as people read them, never with an exponent: ``$1,234.50``, ``$0.50``, ``$0.012``,
    ``$0.000012`` (two significant digits below a dollar)."""
    rounded = float(f"{value:.2g}")
    if rounded == 0:
        return "$0"
    if abs(rounded) >= 1:
        return f"${value:,.2f}"
    return f"${rounded:.{max(2, 1 - math.floor(math.log10(abs(rounded))))}f}"


def config_key_short(key: str) -> str:
    """A Dask config key's last two parts, for ids and narrow columns: ``memory.target``."""
    return ".".join(key.split(".")[-2:])


def saturation_text(value: float) -> str:
    """A worker-saturation value as dask config spells it: ``"inf"`` or a number (``"1.1"``)."""
    return "inf" if math.isinf(value) else repr(float(value))


def inf_or_number(value: float) -> float | str:
    """JSON- and dask-config-safe: the number, or ``"inf"`` when it is infinite."""
    return "inf" if math.isinf(value) else value


def terminal_safe(text: str, keep: str = "") -> str:
    """``text`` inert on a terminal: each control character (`_CONTROL`: ESC, BEL, CR, newline, C1, bidi
    overrides) shown as its Python escape (``\\x1b``, ``\\x07``, ``\\n``, ``\\u202e``); ordinary unicode kept.
    ``keep`` names characters left as they are (``"\\n"`` for a whole multi-line text)."""
    return _CONTROL.sub(lambda m: m[0] if m[0] in keep else m[0].encode("unicode_escape").decode("ascii"), str(text))


def unlinked(text: str) -> str:
    """Plain text GitHub shows without acting on it (an issue title): `terminal_safe`, and a zero-width
    space after the ``@`` of a mention and the ``#`` of an issue reference, so nobody is notified and no
    issue is cross-referenced."""
    return _GITHUB_REFERENCE.sub(lambda m: m[1] + ZERO_WIDTH_SPACE, terminal_safe(text))


def markdown_text(text: str) -> str:
    """``text`` as inert Markdown prose: `unlinked`, HTML's ``<>&`` as entities (GitHub would pass tags
    through), and Markdown's punctuation escaped with a backslash, so it reads as the text it is."""
    escaped = "".join(_HTML.get(ch, ch) for ch in terminal_safe(text))
    return _GITHUB_REFERENCE.sub(lambda m: m[1] + ZERO_WIDTH_SPACE, _MARKDOWN.sub(r"\\\1", escaped))


def markdown_code(text: str) -> str:
    """``text`` as an inert Markdown code span (HTML, emphasis and mentions are not read inside one):
    `unlinked`, fenced by more backticks than it holds in a row, padded when it starts or ends with one."""
    inner = unlinked(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", inner)), default=0) + 1)
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def say(line: str, *, wrap: bool = True) -> None:
    """THE progress writer: ``line`` on stderr (stdout holds only a command's result), wrapped between
    words at `WIDTH` columns unless ``wrap`` is False (an error line stays one line), flushed."""
    print("\n".join(wrap_line(line)) if wrap else line, file=sys.stderr, flush=True)
