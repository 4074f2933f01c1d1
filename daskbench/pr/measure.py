"""Measuring a pull request: both sides in one lockstep group, its runs tagged, its verdicts judged.

`measure` runs one lockstep A/B group (`daskbench.lockstep.parts.run_group`; base is side A, head side B):
one pytest session per side, each started in its side's source tree, measuring each case in turn until the
sequential rule decides it (with a budget: screened, then the open cases closest to deciding). The sessions
get this environment without the tokens and GitHub Actions' write channels (`withheld`): they run the pull
request's code, and no user text reaches a shell (sessions are started with argument lists). `tag_group` tags
the group's runs as a pull request's; `judged` is `compare_group` on them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from daskbench.judge import stats, suite
from daskbench.judge.compare import AB_GROUP, compare_group
from daskbench.judge.sequential import Question
from daskbench.lockstep.parts import GroupPlan, Spent, run_group
from daskbench.lockstep.sessions import Side
from daskbench.pr.sides import Revision, Say, withheld
from daskbench.shards.merge import plan_tags
from daskbench.shards.plan import Selector
from daskbench.store import Store
from daskbench.verdicts import Comparison

#: Run tags of a pull request's group (besides the lockstep ones, which keep it out of plain compare/report).
TAG, BASE_TAG, HEAD_TAG, NUMBER_TAG = "pr", "pr_base", "pr_head", "pr_number"
#: How a side's session starts in its own source tree (argv: the folder, then the command).
_IN_FOLDER = "import os, sys; os.chdir(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"


def new_group(base: Revision, head: Revision) -> str:
    """``pr-<base>-<head>-<random>``: the lockstep group of one comparison."""
    return f"pr-{base.short[:7].replace(' ', '')}-{head.short[:7].replace(' ', '')}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class PrPlan:
    """What one comparison runs: the store, both sides (with their interpreters) and the rules."""

    db: str
    group: str
    sides: Mapping[str, tuple[Revision, str]]  # "A" (base) and "B" (head): the revision and its python
    pytest_args: Sequence[str]
    floors: Mapping[str, float]
    max_rounds: int
    max_seconds: float
    budget: float | None = None  # seconds for the whole comparison (--budget)
    dependencies: tuple[str, ...] = ()  # how head's declared dependencies differ (`dependency_changes`)
    pick: Selector | None = None  # a shard's cases (``--shard K/N``); None: every case both sides have


def measure(plan: PrPlan, say: Say) -> Spent:
    """Both sides' sessions at once, each in its own source tree, every common case until decided (with a
    budget: screened, then the open cases closest to deciding, until the budget ends)."""
    environment = {k: v for k, v in os.environ.items() if not withheld(k)}
    sides = {name: Side(name, python) for name, (_, python) in plan.sides.items()}

    def in_folder(side: Side, session: list[str]) -> list[str]:
        return [side.python, "-c", _IN_FOLDER, str(plan.sides[side.name][0].tree), *session]

    floor = plan.floors.get("runtime_s", stats.default_floor("runtime_s"))
    group = GroupPlan(
        plan.group,
        sides,
        plan.db,
        plan.pytest_args,
        Question(floor, plan.max_rounds, family=suite.Family(alpha=suite.SUITE_ALPHA)),
        plan.max_seconds,
        budget=plan.budget,
        environ=environment,
        wrap=in_folder,
        pick=plan.pick,
    )
    return run_group(group, say)


def tag_group(store: Store, plan: PrPlan, number: int | None) -> None:
    """Tag the group's runs: a pull request's, its base and head commits (or folders) and its number; a
    shard's, which shard and the split it ran (`daskbench.shards.merge.plan_tags`)."""
    base, head = plan.sides["A"][0], plan.sides["B"][0]
    picked = plan.pick
    tags = {
        TAG: plan.group,
        BASE_TAG: base.commit or str(base.tree),
        HEAD_TAG: head.commit or str(head.tree),
        **({NUMBER_TAG: str(number)} if number is not None else {}),
        **(plan_tags(picked.used, picked.shard) if picked is not None and picked.used is not None else {}),
    }
    for run in store.runs():
        if run.tags.get(AB_GROUP) == plan.group:
            store.tag_run(run.run_id, tags)


def judged(store: Store, plan: PrPlan) -> Comparison:
    return compare_group(store, plan.group, floors=plan.floors)


def elapsed(started: float) -> str:
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    return f"{minutes}m{seconds:02d}s"
