"""The argparse value parsers every command shares, each defined once: whole numbers (a count within bounds)
and durations (one syntax, ``90s``, ``10m``, ``12h``, ``30d``, ``2w``, always with its unit), and ``--since``
(a duration before now, or a date). A bad value is one line with an example (argparse: exit 2)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from daskbench.text import say


def whole_number(low: int, high: int, what: str, example: str) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high`` (``what`` it counts), else one line
    with an example."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number from {low} to {high} ({what}; e.g. {example})"
            )
        return value

    return parse


#: argparse type of --history: a whole number of runs.
history_runs = whole_number(1, 100_000, "a number of runs", "--history 20")

#: Seconds in one unit of a duration: ``90s``, ``10m``, ``12h``, ``30d``, ``2w``.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]?)\s*")


def parse_duration(text: str, bare: str | None) -> float | None:
    """Seconds in ``text``: ``90s``, ``10m``, ``12h``, ``30d``, ``2w``, or a bare number in unit ``bare``
    (None: a bare number is no duration); None when ``text`` is no duration."""
    match = _DURATION.fullmatch(text.lower())
    unit = match and (match[2] or bare)
    if not match or unit not in DURATION_UNITS:
        return None
    return float(match[1]) * DURATION_UNITS[unit]


def duration(flag: str, bare: str, most: float, example: str) -> Callable[[str], float]:
    """An argparse ``type`` of ``flag``: a duration above 0 and at most ``most`` (in unit ``bare``), returned in
    unit ``bare``. A duration has its unit (``10m``); a bare number, the old spelling, is still read in unit
    ``bare`` (``--max-time 10`` is 10 minutes, as it always was) and says once how it is written now."""
    unit = _UNIT_NAMES[bare]
    said: set[str] = set()

    def parse(text: str) -> float:
        seconds = parse_duration(text, bare)
        if seconds is None or not 0 < seconds <= most * DURATION_UNITS[bare]:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration above 0 and at most {most:g} {unit}: "
                f"like 30d, 12h, 10m or 90s (e.g. {example})"
            )
        if parse_duration(text, None) is None and flag not in said:
            said.add(flag)
            say(f"note: {flag} {text.strip()} is now {flag} {text.strip()}{bare}")
        return seconds / DURATION_UNITS[bare]

    return parse


def since(text: str, now: datetime | None = None) -> str:
    """An argparse ``type``: ``30d``, ``12h``, ``2w`` (a duration before now) or an ISO date/time, as the
    ISO cutoff the store compares (UTC when no zone is given)."""
    seconds = parse_duration(text, None)
    if seconds is not None:
        return ((now or datetime.now(UTC)) - timedelta(seconds=seconds)).isoformat(timespec="seconds")
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration (30d, 12h, 2w) nor an ISO date (2026-01-31)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat(timespec="seconds")
