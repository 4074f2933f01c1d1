"""THE list of workloads: every reader (the sizes table of docs/workloads-and-metrics.md, data preparation) starts here.

Adding a workload = a module declaring its `Workload` + one line in `_DECLARED` + a
benchmark file. The workload modules import only `daskbench.workloads.base`, never this
module, so the import graph stays acyclic.
"""

from __future__ import annotations

from typing import Any

from daskbench.workloads import arrays, joins, ocean, wordcount
from daskbench.workloads.base import SIZES, Workload

_DECLARED: tuple[Workload, ...] = (
    ocean.WORKLOAD,
    arrays.TRANSPOSE_MEAN,
    arrays.TREE_SUM_STD,
    wordcount.WORKLOAD,
    joins.WORKLOAD,
)
#: Workload name -> declaration, in the order the docs' sizes table lists them.
WORKLOADS: dict[str, Workload] = {workload.name: workload for workload in _DECLARED}


def describe_all() -> list[dict[str, Any]]:
    """One row per (case, size), ordered by case then size: the docs' sizes table."""
    rows = [row for workload in WORKLOADS.values() for size in SIZES for row in workload.describe(size)]
    order = [case for workload in WORKLOADS.values() for case in workload.cases]
    return sorted(rows, key=lambda row: (order.index(row["workload"]), SIZES.index(row["size"])))


def markdown_table() -> str:
    """`describe_all` as a Markdown table, for docs/workloads-and-metrics.md (written there by tools/docs-tables)."""
    lines = ["| workload | size | input | chunks / partitions |", "|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['size']} | {r['input']} | {r['chunks']} |" for r in describe_all()]
    return "\n".join(lines)
