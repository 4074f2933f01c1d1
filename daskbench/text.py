"""Small text and value helpers every layer shares: one helper per job, stdlib only.

This is the bottom of the import graph beside `daskbench.errors`: it imports nothing
of daskbench, so any module may use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Binary units, as Dask prints memory.
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


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


def config_key_short(key: str) -> str:
    """A Dask config key's last two parts, for ids and narrow columns: ``memory.target``."""
    return ".".join(key.split(".")[-2:])


def saturation_text(value: float) -> str:
    """A worker-saturation value as dask config spells it: ``"inf"`` or a number (``"1.1"``)."""
    return "inf" if math.isinf(value) else repr(float(value))


def inf_or_number(value: float) -> float | str:
    """JSON- and dask-config-safe: the number, or ``"inf"`` when it is infinite."""
    return "inf" if math.isinf(value) else value
