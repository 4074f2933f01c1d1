"""What earlier comparisons (or sessions) of each case took, read from a store, for the shard planner
(`daskbench.shards.plan`).

Every lockstep group in the store (``daskbench ab``, ``pr``, ``confirm``, ``bisect``: runs tagged ``ab_mode``
``lockstep``) measured its cases a round at a time, both sides; a measurement records its test
(``extra["test"]``, the pytest node id) and its phases (restart, warm-up, collectors, compute). Per case and
group: the rounds (the repeats both sides measured) and the seconds of all their phases, both sides: a `Past`.
A sharded ``pytest -m benchmark`` (a nightly on several runners) reads its plain sessions instead (`session_seconds`):
per case, the seconds its measurements took in each of the newest runs that measured it, their median.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

from daskbench.model import Measurement
from daskbench.shards.plan import Past, expected_seconds, measured_name, suite_name
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


#: How many of the newest plain sessions teach `session_seconds` (a year of nightlies need not all be read).
SESSIONS_READ = 10


def session_seconds(store: Store) -> dict[str, float]:
    """Per `suite_name` measured in the newest `SESSIONS_READ` runs made outside a lockstep comparison: the
    median over those runs of the seconds its measurements took in one (all of its repeats)."""
    per_run: dict[str, list[float]] = defaultdict(list)
    plain = [run for run in store.runs(limit=SESSIONS_READ * 4) if run.tags.get("ab_mode") != "lockstep"]
    for run in plain[:SESSIONS_READ]:
        took: dict[str, float] = defaultdict(float)
        for measurement in store.measurements([run.run_id]):
            test = measurement.extra.get("test")
            if isinstance(test, str) and test:
                took[suite_name(test)] += _seconds(measurement)
        for name, seconds in took.items():
            per_run[name].append(seconds)
    return {name: statistics.median(values) for name, values in per_run.items()}


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
