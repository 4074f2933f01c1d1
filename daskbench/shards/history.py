"""What earlier comparisons of each case took, read from a store, for the shard planner (`daskbench.shards.plan`).

Every lockstep group in the store (``daskbench ab``, ``pr``, ``confirm``, ``bisect``: runs tagged ``ab_mode``
``lockstep``) measured its cases a round at a time, both sides; a measurement records its test
(``extra["test"]``, the pytest node id) and its phases (restart, warm-up, collectors, compute). Per case and
group: the rounds (the repeats both sides measured) and the seconds of all their phases, both sides: a `Past`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from daskbench.model import Measurement
from daskbench.shards.plan import Past, expected_seconds, measured_name
from daskbench.store import Store


def case_history(store: Store) -> dict[str, list[Past]]:
    """Per `case_name`: each lockstep group's rounds of it and their seconds (both sides)."""
    sides: dict[tuple[str, str], dict[str, set[tuple[str, int]]]] = defaultdict(lambda: {"A": set(), "B": set()})
    seconds: dict[tuple[str, str], float] = defaultdict(float)
    for run in store.runs():
        group, side = run.tags.get("ab_group"), run.tags.get("ab_side")
        if run.tags.get("ab_mode") != "lockstep" or not group or side not in ("A", "B"):
            continue
        for measurement, name in _named(store.measurements([run.run_id])):
            key = (name, group)
            sides[key][side].add((run.tags.get("ab_round", "0"), measurement.repeat))  # a round: part and repeat
            seconds[key] += _seconds(measurement)
    found: dict[str, list[Past]] = defaultdict(list)
    for key, repeats in sorted(sides.items()):
        found[key[0]].append(Past(len(repeats["A"] & repeats["B"]), seconds[key]))
    return dict(found)


def history_seconds(store: Store) -> dict[str, float]:
    """Per `case_name` with history: what a comparison of it is expected to take (`expected_seconds`)."""
    found = {name: expected_seconds(pasts) for name, pasts in case_history(store).items()}
    return {name: value for name, value in found.items() if value is not None}


def _named(measurements: Iterable[Measurement]) -> Iterable[tuple[Measurement, str]]:
    """The measurements that name their test, with the case's name."""
    for measurement in measurements:
        test = measurement.extra.get("test")
        if isinstance(test, str) and test:
            yield measurement, measured_name(test)


def _seconds(measurement: Measurement) -> float:
    """What one measurement took: its phases (the runtime alone when it recorded none)."""
    phases = [value for value in measurement.phases.values() if isinstance(value, int | float) and value >= 0]
    return float(sum(phases)) if phases else float(measurement.runtime_s or 0.0)
