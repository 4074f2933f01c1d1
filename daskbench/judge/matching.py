"""Are two runs comparable, which of their cases belong together, and what else differs.

Used by `daskbench.judge.compare`. Like is compared with like: runs from hosts whose cpu model,
cores or memory differ are refused, and so are runs that share workloads but no case
(fingerprint), i.e. whose cluster specs differ; ``allow_mixed`` lifts both, and then
cases are paired by workload and parameters instead. Whatever else differs between the
two sides (versions, dask config, host facts) is reported beside the verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from daskbench.errors import DaskbenchError
from daskbench.model import Case, Run

#: Host facts that must match for two runs to be comparable (see provenance.host()).
HOST_IDENTITY = ("cpu_model", "cores", "memory_bytes")
#: The user's name for a kind of host (``DASKBENCH_HOST_CLASS``); when both runs have one it replaces HOST_IDENTITY.
HOST_CLASS = "host_class"

#: (baseline fingerprint, candidate fingerprint, note); None where a side lacks the case.
Pair = tuple[str | None, str | None, str]


def same_host(run: Run, other: Run) -> bool:
    """True unless a `HOST_IDENTITY` fact recorded by both runs differs."""
    return not _host_differences(run, other)


def refuse_mixed_hosts(base_runs: Iterable[Run], cand: Run) -> None:
    """Raise `DaskbenchError` naming the facts when a baseline run's host differs from the candidate's."""
    for run in base_runs:
        differ = _host_differences(run, cand)
        if differ:
            raise DaskbenchError(
                f"baseline run {run.run_id[:8]} and candidate {cand.run_id[:8]} ran on different hosts "
                f"({'; '.join(differ)}); compare runs from the same kind of machine or pass --allow-mixed"
            )


def _host_differences(run: Run, other: Run) -> list[str]:
    """What makes two hosts different kinds: the user's host class when both runs name one
    (hosted runners change CPU model between jobs), else the `HOST_IDENTITY` facts."""
    keys = (HOST_CLASS,) if HOST_CLASS in run.host and HOST_CLASS in other.host else HOST_IDENTITY
    return [
        f"{key} {run.host[key]!r} vs {other.host[key]!r}"
        for key in keys
        if key in run.host and key in other.host and run.host[key] != other.host[key]
    ]


def pair_cases(base: set[str], cand: set[str], cases: Mapping[str, Case], allow_mixed: bool) -> list[Pair]:
    """Pair cases by fingerprint; refuse differing cluster specs, or with ``allow_mixed`` pair by workload."""
    common = base & cand
    pairs: list[Pair] = [(fp, fp, "") for fp in sorted(common)]
    left, right = _by_workload(base - common, cases), _by_workload(cand - common, cases)
    shared = sorted(left.keys() & right.keys())
    if shared and not common and not allow_mixed:
        first_base, first_cand = cases[left[shared[0]][0]], cases[right[shared[0]][0]]
        raise DaskbenchError(
            f"the runs have no case in common: the cluster spec of {first_base.workload} differs "
            f"({', '.join(cluster_delta(first_base, first_cand))}); compare like with like "
            "or pass --allow-mixed to pair cases by workload and parameters"
        )
    used: set[str] = set()
    for key in shared if allow_mixed else ():
        for base_fp in left[key]:
            match = _closest(cases[base_fp], [fp for fp in right[key] if fp not in used], cases)
            if match is not None:
                used |= {base_fp, match}
                pairs.append(
                    (base_fp, match, "cluster differs: " + ", ".join(cluster_delta(cases[base_fp], cases[match])))
                )
    pairs += [(fp, None, "") for fp in sorted(base - common - used)]
    pairs += [(None, fp, "") for fp in sorted(cand - common - used)]
    return pairs


def _by_workload(fingerprints: Iterable[str], cases: Mapping[str, Case]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for fp in sorted(fingerprints):
        key = json.dumps([cases[fp].workload, dict(cases[fp].params)], sort_keys=True)
        grouped.setdefault(key, []).append(fp)
    return grouped


def _closest(case: Case, options: list[str], cases: Mapping[str, Case]) -> str | None:
    """The option whose cluster differs from ``case``'s in the fewest fields, if there is one such."""
    ranked = sorted((len(cluster_delta(case, cases[fp])), fp) for fp in options)
    if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
        return None
    return ranked[0][1]


def params_delta(base: Iterable[Case], cand: Iterable[Case]) -> list[str]:
    """``["size small -> tiny"]``: the parameters in which the cases of a workload both sides ran differ (two
    runs of other ``--size`` values share no case: every row would be new or missing)."""
    theirs: dict[str, list[Mapping[str, Any]]] = {}
    for case in cand:
        theirs.setdefault(case.workload, []).append(case.params)
    found: dict[str, tuple[set[str], set[str]]] = {}
    for case in base:
        for params in theirs.get(case.workload, ()):
            for key in sorted(set(case.params) | set(params)):
                if case.params.get(key) != params.get(key):
                    was, now = found.setdefault(key, (set(), set()))
                    was.add(str(case.params.get(key, "-")))
                    now.add(str(params.get(key, "-")))
    return [f"{key} {'/'.join(sorted(was))} -> {'/'.join(sorted(now))}" for key, (was, now) in found.items()]


def cluster_delta(base: Case, cand: Case) -> list[str]:
    """``["n_workers 2 -> 4", ...]``: the cluster identity fields that differ."""
    a, b = base.cluster.identity(), cand.cluster.identity()
    return [f"{key} {a[key]} -> {b.get(key)}" for key in a if a[key] != b.get(key)]


def diff(base_maps: Sequence[Mapping[str, Any]], cand_map: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Keys whose value differs, as (baseline, candidate); baseline runs that disagree show ``mixed: a | b``."""
    if not base_maps:
        return {}
    found = {}
    for key in sorted(set().union(*base_maps, cand_map)):
        base_value = _agreed([m.get(key) for m in base_maps])
        if base_value != cand_map.get(key):
            found[key] = (base_value, cand_map.get(key))
    return found


def _agreed(values: list[Any]) -> Any:
    distinct = {json.dumps(value, sort_keys=True, default=str): value for value in values}
    return values[0] if len(distinct) == 1 else "mixed: " + " | ".join(sorted(distinct))
