"""The four workload sizes and how each workload describes one of them.

Every workload module keeps one table ``SIZES: dict[str, <its spec>]`` and a
``describe(size) -> dict`` for the README; `describe_all` gathers them in one place.

- ``tiny``: a second or two; used by the harness's own tests.
- ``small``: the default; 5-30 s per workload on two local worker processes of one thread.
- ``medium``: a few minutes and several GB.
- ``large``: more than one machine's memory; meant for real clusters.
"""

from __future__ import annotations

from typing import Any

SIZES: tuple[str, ...] = ("tiny", "small", "medium", "large")


def check_size(size: str, table: dict[str, Any]) -> Any:
    """The table entry for ``size``; a ValueError naming the sizes otherwise."""
    try:
        return table[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}") from None


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; binary units, as Dask prints them."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def describe_all() -> list[dict[str, Any]]:
    """One row per (workload, size): the README's size table."""
    from workloads import arrays, joins, ocean, wordcount

    rows = [row for module in (ocean, arrays, wordcount, joins) for size in SIZES for row in module.describe(size)]
    order = list(dict.fromkeys(row["workload"] for row in rows))
    return sorted(rows, key=lambda row: (order.index(row["workload"]), SIZES.index(row["size"])))


def markdown_table() -> str:
    """`describe_all` as a Markdown table, for the README."""
    lines = ["| workload | size | input | chunks / partitions |", "|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['size']} | {r['input']} | {r['chunks']} |" for r in describe_all()]
    return "\n".join(lines)
