"""``pytest -m benchmark --shard K/N``: a plain session measures only its shard of the selected cases.

A nightly of a whole suite at its real size takes hours on one machine; GitHub Actions' matrix gives it N, each
runner a session of its own shard (`daskbench.shards.plan`: the selected cases sorted by name and cut into N
runs of about equal time). The times are what the store's newest plain sessions took per case
(`daskbench.shards.history.session_seconds`), else every case counts the same; every runner that reads the same
store (the history carried from the last night) makes the same split. The run is tagged with its shard and the
split's digest (`daskbench.model.SHARD`, `SHARD_PLAN`), so ``compare`` reads the other shards' cases as outside
this run's selection, never as missing. In a lockstep session the controller picks the cases
(``daskbench pr --shard``), so there the setting is not applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from daskbench.errors import DaskbenchError
from daskbench.model import SHARD, SHARD_PLAN
from daskbench.shards.history import session_seconds
from daskbench.shards.plan import Shard, ShardPlan, plan
from daskbench.store import Store
from daskbench.text import plural


@dataclass(frozen=True)
class Sharded:
    """One session's shard of its selected cases: the split, which shard, and the cases it keeps."""

    split: ShardPlan
    shard: Shard

    @property
    def kept(self) -> frozenset[str]:
        return frozenset(self.split.of(self.shard))

    def tags(self) -> dict[str, str]:
        return {SHARD: str(self.shard), SHARD_PLAN: self.split.digest()}

    def line(self) -> str:
        """``daskbench: shard 2/4: 11 of 42 cases (split by history), about 3.2 min of the suite's 12.8``."""
        total, mine = sum(self.split.seconds), self.split.seconds[self.shard.number - 1]
        by = "by count" if self.split.basis == "count" else f"by {self.split.basis} (of the store's plain sessions)"
        times = f", about {mine / 60:.1f} min of the suite's {total / 60:.1f}" if self.split.basis != "count" else ""
        cases = f"{len(self.kept)} of {plural(len(self.split.cases), 'case')}"
        return f"daskbench: shard {self.shard}: {cases} (split {by}; plan {self.split.digest()}){times}"


def split(db: str, names: Sequence[str], numbers: tuple[int, int]) -> Sharded:
    """Shard ``numbers`` (K, N) of the cases ``names``, split by the history in the store at ``db``."""
    return Sharded(plan(names, numbers[1], _history(db)), Shard(*numbers))


def _history(db: str) -> dict[str, float]:
    """What the store's plain sessions took per case; none (a split by count) when there is no store yet."""
    try:
        store = Store(db, create=False)
    except DaskbenchError:
        return {}
    try:
        return session_seconds(store)
    finally:
        store.close()
