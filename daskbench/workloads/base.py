"""What a workload declares, and the four sizes every workload has.

Each workload module keeps one size table ``SIZES: dict[str, <its spec>]`` (or one per
workload) and declares itself once as a `Workload`; `daskbench.workloads.registry`
gathers the declarations. This module is stdlib only so `daskbench.config` can import
`SIZES` without loading numpy or dask, and it imports no workload module, so every
workload can import it without a cycle.

- ``tiny``: a second or two; used by the harness's own tests.
- ``small``: the default; 5-30 s per workload on two local worker processes of one thread.
- ``medium``: a few minutes and several GB.
- ``large``: more than one machine's memory; meant for real clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

#: THE size names, smallest first: `--size` accepts these and every size table has them.
SIZES: tuple[str, ...] = ("tiny", "small", "medium", "large")


def check_size(size: str, table: Mapping[str, Any]) -> Any:
    """The table entry for ``size``; a ValueError naming the sizes otherwise."""
    try:
        return table[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}") from None


@dataclass(frozen=True)
class Inputs:
    """How a workload's prepared inputs are made: its parameters (hashed) and its writer."""

    params: Callable[[str], dict[str, Any]]
    write: Callable[[AbstractFileSystem, str, str, int], None]


@dataclass(frozen=True)
class Workload:
    """One workload as the registry sees it.

    ``name`` is its registry key, and for workloads that read prepared data also the
    name of its datasets (``inputs.prepare(location, name, size)``). ``cases`` are the
    names its benchmarks record (the rows `describe` returns); ``sizes`` maps every name
    in `SIZES` to its spec; ``inputs`` is None for workloads that generate their data
    in the task graph.
    """

    name: str
    cases: tuple[str, ...]
    sizes: Mapping[str, Any]
    describe: Callable[[str], list[dict[str, Any]]]
    inputs: Inputs | None = None
