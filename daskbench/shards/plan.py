"""A suite's cases split into shards of about equal time, one runner (one machine) each.

A pull request's check of a whole suite takes hours on one machine; GitHub Actions' matrix gives it N.
Each shard is a lockstep A/B of its own cases on one machine (A and B are never on different machines),
and the shards' results are merged and judged once (`daskbench.shards.merge`). This module only decides which
case goes where; it is pure (names and numbers in, a `ShardPlan` out) and deterministic:

- the cases are sorted by name and cut into N runs of consecutive cases (`plan`), each case in exactly one
  shard; a case goes to the shard its midpoint on the suite's time line falls in (the shard of case ``i`` is
  ``floor(N * (time before it + half its time) / total time)``), and no shard is left empty while there are
  at least N cases. So a shard's time is within one case's time of the total's N-th, the same input gives
  the same split, and a case added (or removed) moves only cases next to a cut (those within its time of
  one) instead of reshuffling the suite;
- a case's time is what its comparisons took in the store's history (`expected_seconds`: the median seconds
  a round of it took, both sides, times the median rounds it needed); a case without history is given the
  median of the others'; with no history at all every case counts the same (the split is by count).

Cases are named as a session and the store both know them (`case_name`): the benchmark file's name and the
test's pytest name (``bench_arrays.py::test_sum[tiny]``). A plan is carried between runners as JSON
(`ShardPlan.to_json`), so every shard of one comparison runs the same split (`ShardPlan.digest`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from daskbench.config import MAX_SHARDS, shard_numbers
from daskbench.errors import DaskbenchError
from daskbench.text import plural


@dataclass(frozen=True)
class Shard:
    """Shard ``number`` (from 1) of ``count``."""

    number: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.number <= self.count <= MAX_SHARDS:
            raise ValueError(f"Shard: 1 <= number <= count <= {MAX_SHARDS} needed ({self})")

    def __str__(self) -> str:
        return f"{self.number}/{self.count}"


def parse_shard(text: str, flag: str = "--shard") -> Shard:
    """``K/N`` (shard K of N, 1 <= K <= N): one line saying how to write it otherwise."""
    try:
        return Shard(*shard_numbers(text))
    except ValueError as exc:
        raise DaskbenchError(f"{flag} {exc}, e.g. {flag} 2/4") from None


def case_name(file: str, test: str) -> str:
    """``bench_arrays.py::test_sum[tiny]``: a case as its file's name and its test's pytest name."""
    return f"{PurePosixPath(file).name}::{test}"


def measured_name(nodeid: str) -> str:
    """The `case_name` of a pytest node id (``benchmarks/bench_arrays.py::test_sum[tiny]``), as a measurement
    records it (``extra["test"]``)."""
    path, bracket, params = nodeid.partition("[")  # parameters may hold "::" themselves
    parts = path.split("::")
    return case_name(parts[0], parts[-1] + bracket + params)


def suite_name(nodeid: str) -> str:
    """The `measured_name` of a test item of a plain session, its repeat left out (``test_x[sat=inf-r2]``, a
    repeat with ``--interleave``, is the case ``test_x[sat=inf]``): a case's repeats go to one shard."""
    return re.sub(r"-r\d+\]$", "]", measured_name(nodeid))


@dataclass(frozen=True)
class Past:
    """One earlier comparison of a case: how many rounds it took and the seconds they took (both sides)."""

    rounds: int
    seconds: float


def expected_seconds(history: Sequence[Past]) -> float | None:
    """What a comparison of the case is expected to take: the median seconds of one of its rounds times the
    median rounds it needed; None without a comparison of at least one round."""
    usable = [past for past in history if past.rounds > 0 and past.seconds >= 0]
    if not usable:
        return None
    per_round = statistics.median(past.seconds / past.rounds for past in usable)
    return per_round * statistics.median(past.rounds for past in usable)


@dataclass(frozen=True)
class ShardPlan:
    """Which cases each shard measures (``shards[k - 1]``: shard k's, sorted) and the seconds each is expected
    to take (``seconds``; by count: its number of cases); ``basis`` says what the times came from."""

    shards: tuple[tuple[str, ...], ...]
    seconds: tuple[float, ...]
    basis: str = "count"

    @property
    def count(self) -> int:
        return len(self.shards)

    @property
    def cases(self) -> tuple[str, ...]:
        return tuple(name for shard in self.shards for name in shard)

    def of(self, shard: Shard) -> tuple[str, ...]:
        """The cases of ``shard``; one line when the plan has another number of shards."""
        if shard.count != self.count:
            raise DaskbenchError(f"shard {shard} of a plan of {self.count} shards: give K/{self.count}")
        return self.shards[shard.number - 1]

    def shard_of(self, name: str) -> int | None:
        """The number (from 1) of the shard measuring ``name``; None when no shard does."""
        return next((number for number, names in enumerate(self.shards, 1) if name in names), None)

    def to_json(self) -> str:
        return json.dumps({"shards": [list(s) for s in self.shards], "seconds": self.seconds, "basis": self.basis})

    @classmethod
    def from_json(cls, text: str, source: str = "the shard plan") -> ShardPlan:
        """A plan written by `to_json`; one line when ``text`` is not one."""
        try:
            found = json.loads(text)
            shards = tuple(tuple(str(name) for name in shard) for shard in found["shards"])
            seconds = tuple(float(value) for value in found["seconds"])
            basis = str(found.get("basis", "count"))
        except (ValueError, KeyError, TypeError):
            raise DaskbenchError(f"{source} is not a shard plan; write one with daskbench's shard planner") from None
        if not shards or len(seconds) != len(shards):
            raise DaskbenchError(f"{source} is not a shard plan: it needs a time for each of its shards")
        return cls(shards, seconds, basis)

    def digest(self) -> str:
        """12 hex digits naming the split (its shards' cases, not their times): equal for one plan."""
        text = json.dumps([list(shard) for shard in self.shards])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def lines(self) -> list[str]:
        """A line per shard: its cases and, from history, its expected time."""
        timed = self.basis != "count"
        return [
            f"shard {number}/{self.count}: {plural(len(names), 'case')}"
            + (f", about {self.seconds[number - 1] / 60:.1f} min" if timed else "")
            for number, names in enumerate(self.shards, 1)
        ]


def plan(names: Sequence[str], count: int, seconds: Mapping[str, float] | None = None) -> ShardPlan:
    """The suite's cases ``names`` in ``count`` shards of about equal time, as the module says: ``seconds`` the
    expected time of each case that has history (`expected_seconds`); none: by count."""
    if not 1 <= count <= MAX_SHARDS:
        raise DaskbenchError(f"a suite is split into 1 to {MAX_SHARDS} shards, not {count}")
    ordered = sorted(set(names))
    times, basis = _times(ordered, seconds or {})
    cuts = _cuts(times, count)
    shards = tuple(tuple(ordered[cuts[k] : cuts[k + 1]]) for k in range(count))
    spent = tuple(float(sum(times[cuts[k] : cuts[k + 1]])) for k in range(count))
    return ShardPlan(shards, spent, basis)


def _times(ordered: Sequence[str], seconds: Mapping[str, float]) -> tuple[list[float], str]:
    """Each case's expected seconds (a case without history: the median of the others'), and what they came
    from; 1 each when no case has history."""
    known = {name: float(seconds[name]) for name in ordered if name in seconds and math.isfinite(seconds[name])}
    known = {name: value for name, value in known.items() if value >= 0}
    if not known:
        return [1.0] * len(ordered), "count"
    filler = statistics.median(known.values())
    basis = "history" if len(known) == len(ordered) else f"history of {len(known)} of {len(ordered)} cases"
    return [known.get(name, filler) for name in ordered], basis


def _cuts(times: Sequence[float], count: int) -> list[int]:
    """The index each shard starts at (and the end): a case goes where its midpoint on the time line falls,
    each shard keeps at least one case while there are enough, and cuts never go back."""
    total = sum(times) or 1.0
    before, shard_of = 0.0, []
    for time in times:
        shard_of.append(min(int(count * (before + time / 2) / total), count - 1))
        before += time
    cuts = [0]
    for k in range(1, count):
        start = sum(1 for shard in shard_of if shard < k)
        if len(times) >= count:  # no empty shard: room for shard k-1 before, and for the shards after
            start = min(max(start, cuts[-1] + 1), len(times) - (count - k))
        cuts.append(max(start, cuts[-1]))
    return [*cuts, len(times)]


def key_name(key: str, names: Mapping[str, str]) -> str:
    """The `case_name` of a lockstep case key (``bench.py::test_sum[...]#0``, `daskbench.lockstep.turns.case_key`),
    given what side A calls each case (its pytest name); the key's test part when it calls it nothing."""
    file, _, rest = key.partition("::")
    return case_name(file, names.get(key) or rest)


@dataclass
class Selector:
    """The cases of ``shard`` among those both sides of a lockstep comparison have (`daskbench.lockstep.engine`'s
    ``pick``): by the ``given`` plan, else by a plan made here from the cases' names (and ``seconds`` of history:
    every runner makes the same one from the same input); ``used`` is the plan it used, to tag the runs with."""

    shard: Shard
    given: ShardPlan | None = None
    seconds: Mapping[str, float] | None = None
    used: ShardPlan | None = field(default=None, init=False)

    def __call__(self, keys: Sequence[str], names: Mapping[str, str]) -> list[str]:
        named = {key: key_name(key, names) for key in keys}
        split = self.given or plan(list(named.values()), self.shard.count, self.seconds)
        unknown = sorted(name for name in named.values() if split.shard_of(name) is None)
        if unknown:
            raise DaskbenchError(
                f"the shard plan names no shard for {plural(len(unknown), 'case')} of this suite "
                f"({', '.join(unknown[:2])}{', ...' if len(unknown) > 2 else ''}): it was made for another suite; "
                "make it again from this one"
            )
        self.used = split
        mine = set(split.of(self.shard))
        return [key for key, name in named.items() if name in mine]
