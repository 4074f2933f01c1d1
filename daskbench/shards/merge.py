"""The shards of one comparison merged and judged once: one verdict table, one state, one status.

Each shard ran on its own runner as a lockstep group of its own (its runs tagged `SHARD_TAG` ``K/N`` and
`PLAN_TAG`, the split every shard ran: `daskbench.shards.plan.ShardPlan`), and its store was carried out as a
``daskbench export`` file. The merge

- reads each file's shard groups before anything is imported (`shard_groups`) and keeps those of the
  comparison asked (`choose`: the same `IDENTITY_TAGS`, a pull request's base and head); a file holding only
  another comparison's shards is refused in one line naming what it holds, as are shards of different splits
  and two results of one shard;
- imports the files (`import_shards`; import is idempotent, so a file given twice adds nothing), then judges
  every shard's group with the false alarms of the whole suite counted together (`daskbench.judge.suite`:
  the family is every case of the plan, not the shard's) and unites their verdicts in one `Comparison`;
- names what was not measured (`NotMeasured`): a shard without results (failed, cancelled: no file, or no
  complete round) and the cases a shard's plan had that its sessions never measured. Those cases are "not
  measured", never "unchanged": the merged state is undecided (`Merged.state`, exit 3), never success.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from daskbench.errors import DaskbenchError
from daskbench.judge import suite
from daskbench.judge.compare import Against, compare_group, finish
from daskbench.model import Run
from daskbench.shards.plan import Shard, ShardPlan, measured_name, parse_shard
from daskbench.store import Store, exchange
from daskbench.text import first_few, plural
from daskbench.verdicts import Comparison, Verdict

#: Run tags of a shard's sessions: which shard of how many, and the split every shard ran (its JSON).
SHARD_TAG, PLAN_TAG = "ab_shard", "ab_shard_plan"
#: The tags that say what a comparison compares (a pull request's base and head, `daskbench.pr`).
IDENTITY_TAGS = ("pr_base", "pr_head")


@dataclass(frozen=True)
class ShardGroup:
    """One shard's lockstep group as an export file holds it: the file, the group, which shard, the plan it
    ran (JSON) and what its comparison compares (`IDENTITY_TAGS`)."""

    source: str
    group: str
    shard: Shard
    plan: str
    identity: tuple[tuple[str, str], ...]

    def compares(self) -> str:
        return describe(dict(self.identity))


def describe(identity: Mapping[str, str]) -> str:
    """``base 1a2b3c4d5e, head 6f7a8b9c0d``: what a comparison compares, in words."""
    said = [f"{key.removeprefix('pr_')} {identity[key][:10]}" for key in IDENTITY_TAGS if identity.get(key)]
    return ", ".join(said) or "no base and head recorded"


def shard_groups(lines: Iterable[str], source: str) -> list[ShardGroup]:
    """The shard groups of export lines (checked as an import checks them), one per group."""
    tags: dict[str, dict[str, str]] = {}
    for kind, row in exchange.checked_rows(lines, source):
        if kind == "tag":
            tags.setdefault(str(row["run_id"]), {})[str(row["key"])] = str(row["value"])
    found: dict[str, ShardGroup] = {}
    for run_tags in tags.values():
        group, shard = run_tags.get("ab_group"), run_tags.get(SHARD_TAG)
        if not group or not shard or group in found:
            continue
        identity = tuple((key, run_tags[key]) for key in IDENTITY_TAGS if key in run_tags)
        found[group] = ShardGroup(source, group, parse_shard(shard, f"{source}: tag {SHARD_TAG}"),
                                  run_tags.get(PLAN_TAG, ""), identity)  # fmt: skip
    return sorted(found.values(), key=lambda g: (g.shard.number, g.group))


def choose(found: Sequence[ShardGroup], expected: Mapping[str, str], sources: Sequence[str]) -> dict[int, ShardGroup]:
    """The shard groups of the comparison ``expected`` (its `IDENTITY_TAGS`), by shard number; one line for a
    file holding none of them, shards of different splits, or two results (groups) of one shard."""
    wanted = {key: value for key, value in expected.items() if key in IDENTITY_TAGS}
    chosen = [group for group in found if dict(group.identity) == wanted]
    for source in sources:
        theirs = [group for group in found if group.source == source]
        if not any(group in chosen for group in theirs):
            holds = f"shard {theirs[0].shard} of {theirs[0].compares()}" if theirs else "no shard's runs"
            raise DaskbenchError(
                f"{source} holds {holds}, not a shard of {describe(wanted)}: give the exports of this comparison's "
                "shards (each written by daskbench export after its --shard K/N run)"
            )
    _one_plan(chosen)
    by_number: dict[int, ShardGroup] = {}
    for group in chosen:
        twice = by_number.get(group.shard.number)
        if twice is not None and twice.group != group.group:  # one group in two files is one result
            raise DaskbenchError(
                f"shard {group.shard} is given twice ({twice.source}, {group.source}): give one result per shard"
            )
        by_number[group.shard.number] = group
    return by_number


def _one_plan(chosen: Sequence[ShardGroup]) -> None:
    """One line when the shards ran different splits (another count, or other cases per shard)."""
    plans = {group.plan for group in chosen}
    if len(plans) > 1 or len({group.shard.count for group in chosen}) > 1:
        said = ", ".join(f"{g.source}: shard {g.shard}, plan {ShardPlan.from_json(g.plan).digest()}" for g in chosen)
        raise DaskbenchError(f"the shards ran different splits ({said}): give every shard the same shard plan")


def import_shards(
    store: Store, paths: Sequence[str | Path], expected: Mapping[str, str], say: Callable[[str], None]
) -> dict[int, ShardGroup]:
    """Check every file and choose the comparison's shards (`choose`) before the store is touched, then import
    the files (idempotent). One line, nothing imported, for a file that is no export or another comparison's.
    A file cut short or damaged after its header (`exchange.BrokenRow`: a shard's job killed while it wrote, an
    upload cut off), or holding no run (empty, or a header alone: killed before its rows), is said and left out,
    as if its shard had left no results: its cases are not measured."""
    whole, found = [], []
    for path in paths:
        try:
            groups = shard_groups(exchange.file_lines(path)(), str(path)) if not _empty(path) else []
        except exchange.BrokenRow as error:
            say(f"merge: left out {path}, which is not whole ({error}); its shard's cases are not measured")
            continue
        if not groups and _runless(path):
            say(f"merge: left out {path}, which holds no runs (its shard's job stopped before it wrote them); its "
                "shard's cases are not measured")  # fmt: skip
            continue
        found += groups
        whole.append(path)
    chosen = choose(found, expected, [str(path) for path in whole])
    for path in whole:
        exchange.import_file(store, path)
    return chosen


def _empty(path: str | Path) -> bool:
    """Whether an export file holds nothing at all (its job killed before the header was written)."""
    return not any(line.strip() for line in exchange.file_lines(path)())


def _runless(path: str | Path) -> bool:
    """Whether an export file holds no run at all: empty, or a header and no rows (its job killed before them)."""
    return _empty(path) or not any(
        kind == "run" for kind, _ in exchange.checked_rows(exchange.file_lines(path)(), str(path))
    )


@dataclass(frozen=True)
class NotMeasured:
    """Cases of ``shard`` that have no result, and why."""

    shard: Shard
    why: str
    cases: tuple[str, ...]

    def line(self) -> str:
        return f"shard {self.shard}: {plural(len(self.cases), 'case')} not measured ({self.why}): {first_few(self.cases, 3)}"


@dataclass(frozen=True)
class Merged:
    """The shards judged as one: the union's verdicts (None when no shard completed a round), the cases not
    measured, and the plan they ran."""

    comparison: Comparison | None
    missing: tuple[NotMeasured, ...]
    plan: ShardPlan

    @property
    def not_measured(self) -> int:
        return sum(len(gap.cases) for gap in self.missing)

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return self.comparison.verdicts if self.comparison is not None else ()

    def state(self) -> suite.State:
        """Regressed, else undecided when any case is undecided or not measured, else unchanged."""
        return suite.state(self.verdicts, self.not_measured)

    def lines(self) -> list[str]:
        """How many shards measured what, and a line per gap."""
        lost = {gap.shard.number for gap in self.missing if gap.why in _WHOLE}
        head = f"{self.plan.count - len(lost)} of {plural(self.plan.count, 'shard')} measured"
        cases = f"{plural(len(self.plan.cases), 'case')} planned" + (
            f", {self.not_measured} not measured" if self.missing else ", every one measured"
        )
        return [f"{head}; {cases}", *(gap.line() for gap in self.missing)]


#: Why a whole shard has no result.
NO_FILE, NO_ROUND = "no results: the shard failed or was cancelled", "no complete round"
_WHOLE = (NO_FILE, NO_ROUND)


def judge(
    store: Store,
    chosen: Mapping[int, ShardGroup],
    *,
    floors: Mapping[str, float] | None = None,
    metric: str = "runtime_s",
) -> Merged:
    """Every shard's group judged with the whole suite's false alarms counted together, united; what has no
    result named. One line when no shard's results were given at all (nothing says what the suite was)."""
    if not chosen:
        raise DaskbenchError("no shard's results to merge: give the export files the shards wrote")
    plan = ShardPlan.from_json(next(iter(chosen.values())).plan, f"tag {PLAN_TAG}")
    family = suite.family_size(len(plan.cases), suite.metrics_judged(metric))
    verdicts: list[Verdict] = []
    runs: dict[str, list[Run]] = {"A": [], "B": []}
    missing: list[NotMeasured] = []
    for number, planned in enumerate(plan.shards, 1):
        shard, group = Shard(number, plan.count), chosen.get(number)
        if group is None:
            missing += [NotMeasured(shard, NO_FILE, planned)] if planned else []
            continue
        try:
            found = compare_group(store, group.group, floors=floors, family=family)
        except DaskbenchError:
            missing += [NotMeasured(shard, NO_ROUND, planned)] if planned else []
            continue
        verdicts += found.verdicts
        runs["A"] += found.baseline_runs
        runs["B"] += found.candidates
        unmeasured = tuple(name for name in planned if name not in _measured(store, group.group))
        missing += [NotMeasured(shard, "its sessions never measured them", unmeasured)] if unmeasured else []
    return Merged(_united(verdicts, runs, family, plan, missing), tuple(missing), plan)


def _measured(store: Store, group: str) -> set[str]:
    """The case names a group's sessions measured (`measured_name` of each measurement's test)."""
    ids = [run.run_id for run in store.runs() if run.tags.get("ab_group") == group]
    tests = (m.extra.get("test") for m in store.measurements(ids) if m.outcome != "interrupted")
    return {measured_name(test) for test in tests if isinstance(test, str) and test}


def _united(
    verdicts: list[Verdict], runs: Mapping[str, list[Run]], family: int, plan: ShardPlan, missing: Sequence[NotMeasured]
) -> Comparison | None:
    """One comparison of every shard's verdicts, its notes the suite-level rate and what was not measured."""
    if not runs["B"]:
        return None
    counted = suite.Family(family, suite.SUITE_ALPHA).text(len(plan.cases))
    label = f"{plan.count} shards (plan {plan.digest()}), each a lockstep A/B on its own machine, side A"
    notes = [counted, *(gap.line() for gap in missing)]
    return finish("ab", Against(tuple(runs["A"]), label, runs["A"][-1:]), runs["B"][-1], verdicts, notes, runs["B"])


def plan_tags(plan: ShardPlan, shard: Shard) -> dict[str, str]:
    """The tags a shard's runs carry (`SHARD_TAG`, `PLAN_TAG`)."""
    return {SHARD_TAG: str(shard), PLAN_TAG: plan.to_json()}
