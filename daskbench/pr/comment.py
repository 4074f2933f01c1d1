"""What a person reads of a pull request's comparison: its outcome, the comment, the commit status.

`Outcome` reads the judged group (regressed, inconclusive or unchanged); `status_of` makes it the head
commit's status (inconclusive as ``pending``, saying nothing runs); `comment_markdown` writes the comment: a headline,
the verdict table (what changed first, with effect, interval and rounds), the unchanged counts (memory as
well as time), the sides, how the rounds went (`measured_text`) and where the report is. `publish` keeps
that one comment on the pull request (found again by `MARKER`) and sets the status, through
`daskbench.github` (which ``alert`` shares).

Every text of a user's that reaches the Markdown (refs, commit subjects, case labels, notes) passes
`daskbench.text`'s Markdown rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from daskbench import catalog
from daskbench.errors import DaskbenchError
from daskbench.github import GitHub, keep_comment, status_description
from daskbench.judge import stats, suite
from daskbench.judge.format import case_label, too_noisy
from daskbench.lockstep.parts import Spent
from daskbench.pr.sides import Revision
from daskbench.text import markdown_code, markdown_text, plural
from daskbench.verdicts import Comparison, Verdict

#: The hidden first line of the one comment ``daskbench pr`` keeps on a pull request.
MARKER = "<!-- daskbench-pr -->"
#: The context of the commit status it sets on the head commit.
STATUS_CONTEXT = "daskbench"
#: The most verdict rows a comment lists (GitHub's comment limit is 65536 characters); the rest: the report.
MAX_ROWS = 40
_URL = re.compile(r"^https?://[^\s()<>\[\]`\"']+$")


# -- what it found ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A comparison read for a pull request: ``state`` is ``regressed`` (a confirmed regression or a newly
    failing case), ``inconclusive`` (no regression, but some verdict undecided) or ``unchanged`` (nothing
    regressed or undecided; improvements may be listed); ``changed`` every verdict but ``unchanged``,
    biggest effect first; ``unchanged`` the unchanged verdicts; ``not_measured`` the cases no side measured
    (a shard that failed or was cancelled, `daskbench.shards.merge`): never unchanged, so never success."""

    state: str
    changed: tuple[Verdict, ...]
    unchanged: tuple[Verdict, ...]
    not_measured: int = 0

    @classmethod
    def of(cls, comparison: Comparison) -> Outcome:
        return cls.of_verdicts(comparison.verdicts)  # the biggest effect first (judge.compare)

    @classmethod
    def of_verdicts(cls, verdicts: Sequence[Verdict], not_measured: int = 0) -> Outcome:
        """Read as `suite.state` reads it (undecided is ``inconclusive`` here; no verdict at all is too, and so
        are ``not_measured`` cases)."""
        changed = tuple(v for v in verdicts if v.verdict != "unchanged")
        unchanged = tuple(v for v in verdicts if v.verdict == "unchanged")
        found = suite.state(verdicts, not_measured)
        state = {"regressed": "regressed", "undecided": "inconclusive"}.get(found, "unchanged")
        return cls(state, changed, unchanged, not_measured)

    def cases(self, *kinds: str) -> int:
        """How many cases have a verdict of one of ``kinds`` (in any metric)."""
        return len({v.fingerprint for v in self.changed if v.verdict in kinds})

    def headline(self) -> str:
        """``1 case regressed`` / ``no regression, 2 cases undecided`` / ``nothing changed`` (counts only)."""
        regressed = self.cases("regressed", "newly-failing")
        if regressed:
            return f"{plural(regressed, 'case')} regressed"
        if self.state == "inconclusive" and not self.changed and not self.unchanged:
            return "nothing measured"
        counts = (
            (self.cases("inconclusive"), "undecided"),
            (self.not_measured, "not measured"),
            (self.cases("improved", "fixed"), "improved"),
        )
        parts = [f"{plural(n, 'case')} {word}" for n, word in counts if n]
        return "no regression, " + ", ".join(parts) if parts else "nothing changed"


def status_of(outcome: Outcome) -> tuple[str, str]:
    """The commit status of an outcome: ``failure`` for a regression; ``pending`` when some case is undecided
    (or nothing was measured), its description starting ``undecided:``; else ``success``. Commit statuses have
    no neutral state: ``success`` would pass a required check on a comparison that decided nothing, and
    ``error`` reads as daskbench failing. ``pending`` says neither pass nor fail: a required check holds the
    merge until a re-run decides it (or a maintainer overrides it), which is what an undecided case asks of a
    person; the description says that nothing is running."""
    effect = _biggest(outcome)
    if outcome.state == "regressed":
        return "failure", status_description(f"{outcome.headline()}{effect}")
    if outcome.state == "inconclusive":
        said = outcome.headline() if outcome.changed else "nothing measured on both sides"
        return "pending", status_description(f"undecided: {said}; not running: re-run (or a larger --budget) to decide")
    if not outcome.changed and not outcome.unchanged:
        return "success", "nothing compared: base and head are the same code"
    return "success", status_description(f"{outcome.headline()}; {plural(len(outcome.unchanged), 'verdict')} unchanged")


def _biggest(outcome: Outcome) -> str:
    first = next((v for v in outcome.changed if v.is_regression and v.ratio is not None), None)
    if first is None or first.ratio is None:
        return ""
    return f" (biggest: {catalog.get(first.metric).short} {catalog.get(first.metric).effect(first.ratio)})"


# -- the comment ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """What the comment says besides the verdicts: the sides, the group, the report, and a note."""

    base: Revision
    head: Revision
    group: str | None  # None: nothing was measured
    report: str | None = None  # an http(s) URL (a link) or a path (shown as code)
    note: str = ""  # plain text from daskbench (e.g. why there is no comment), escaped all the same
    measured: str = ""  # how the rounds went: the budget used, compute's share (plain text, `measured_text`)
    dependencies: tuple[str, ...] = ()  # how head's declared dependencies differ from base's (`envs.changes`)
    shards: tuple[str, ...] = ()  # a sharded comparison: what each shard measured (`daskbench.shards.merge`)


def measured_text(spent: Spent) -> str:
    """``within a budget of 20 min: used 18.4 min in 3 parts, 2 cases undecided; compute 74% of the rounds``."""
    cost = spent.cost  # summed over every result: once
    share = cost.share
    said = [f"compute {share:.0%} of the rounds' time"] if share is not None else []
    if cost.busy_line():
        said.append("measured on a busy machine (see the run's log): a verdict is surer on a quiet one")
    compute = "; ".join(said)
    if spent.budget is None:
        return compute
    undecided = len(spent.undecided())
    left = f"{plural(undecided, 'case')} undecided" if undecided else "every case decided"
    used = f"within a budget of {spent.budget / 60:g} min: used {spent.wall / 60:.1f} min in "
    return f"{used}{plural(spent.parts, 'part')}, {left}" + (f"; {compute}" if compute else "")


def is_link(text: str | None) -> bool:
    """Whether ``text`` is an http(s) URL that can stand in a Markdown link as it is."""
    return bool(text and _URL.match(text))


def check_url(url: str, flag: str) -> str:
    """An http(s) URL that can stand in a Markdown link as it is; one line otherwise."""
    if not is_link(url):
        raise DaskbenchError(f"{flag} {url!r}: give an http(s) URL without spaces, quotes or brackets")
    return url


def comment_markdown(outcome: Outcome, page: Page) -> str:
    """The comment: the marker, a headline, the changed verdicts as a table, the unchanged counts (per
    metric: time, memory and the rest), the sides and where the report is."""
    lines = [MARKER, f"### daskbench: {outcome.headline()}", ""]
    lines += [_lead(outcome), ""]
    if outcome.changed:
        lines += [*_table(outcome.changed), ""]
    lines += [_unchanged_line(outcome), "", *_sides(page), *_dependencies(page.dependencies), *_shards(page.shards)]
    if page.note:
        lines += ["", f"*{markdown_text(page.note)}*"]
    return "\n".join(lines) + "\n"


def _lead(outcome: Outcome) -> str:
    if outcome.state == "regressed":
        return "**Regressed**: head is slower, bigger or failing where base was not, with confidence."
    if outcome.state == "inconclusive" and outcome.not_measured and not outcome.cases("inconclusive"):
        return (
            f"**Undecided**: no regression in what was measured, but {plural(outcome.not_measured, 'case')} "
            "had no result (a shard failed or was cancelled, below); the status is pending, not success."
        )
    if outcome.state == "inconclusive" and not outcome.changed:
        return "**Undecided**: no case was measured on both sides, so nothing is known; the status is pending."
    if outcome.state == "inconclusive":
        return (
            "**Undecided**: no regression shown, but some verdicts are still undecided at the most rounds "
            "(more rounds, or a quieter machine, would decide them); the status is pending, not success."
        )
    return "**No regression**: every case judged on both sides is within its floor, or better."


#: The columns of the verdict table.
COLUMNS = ("verdict", "case", "metric", "base", "head", "change", "head/base (interval)", "rounds")


def _table(changed: Sequence[Verdict]) -> list[str]:
    alike = _alike(changed)
    rows = [f"| {' | '.join(COLUMNS)} |", "|" + "---|" * len(COLUMNS)]
    rows += [_row(same) for same in alike[:MAX_ROWS]]
    if len(alike) > MAX_ROWS:
        rows.append(f"\n{len(alike) - MAX_ROWS} more in the report.")
    return [*rows, "", INTERVALS]


def _alike(changed: Sequence[Verdict]) -> list[list[Verdict]]:
    """The verdicts in rows: one case's verdicts that read alike (same verdict, effect, interval and rounds, as
    runtime and cost do on a cluster of one price) share a row, in the order of the first; a row's metrics in
    the catalog's order (runtime before cost)."""
    rows: dict[tuple[object, ...], list[Verdict]] = {}
    for v in changed:
        rows.setdefault((v.fingerprint, v.verdict, *_reading(v)), []).append(v)
    order = catalog.names()
    return [
        sorted(same, key=lambda v: order.index(v.metric) if v.metric in order else len(order)) for same in rows.values()
    ]


def _shown_ratio(v: Verdict) -> float | None:
    """The ratio a row shows: None for a case failing, fixed, new or missing on one side (or with none)."""
    return None if v.verdict in ("newly-failing", "fixed", "new", "missing") else v.ratio


def _reading(v: Verdict) -> tuple[str, str]:
    """What a row says of a verdict beyond its metric: the interval's cell and the rounds' cell."""
    if (ratio := _shown_ratio(v)) is not None:
        interval = f"{ratio:.2f} ({v.ci_low:.2f}-{v.ci_high:.2f})" if v.ci_low and v.ci_high else f"{ratio:.2f}"
    else:
        interval = "-"
    rounds = str(min(len(v.baseline_values), len(v.candidate_values))) if v.baseline_values else "-"
    return interval, rounds


#: What the table's intervals are: 95% for a case alone, surer where the suite's false alarms are counted.
INTERVALS = (
    "*Each interval holds at 95% for its case alone; where false alarms are counted per suite, a change "
    "counts only once it also clears a surer one.*"
)


def _row(same: Sequence[Verdict]) -> str:
    """One row: the first verdict's case, effect, interval and rounds; each verdict's metric and medians."""
    v = same[0]
    label = case_label(v.workload, v.params, v.cluster)
    change = " / ".join(dict.fromkeys(_change(s) for s in same))
    interval, rounds = _reading(v)
    cells = [
        f"**{v.verdict}**",
        _cell_code(label),
        ", ".join(catalog.get(s.metric).short for s in same),
        " / ".join(_median(s.metric, s.baseline_values) for s in same),
        " / ".join(_median(s.metric, s.candidate_values) for s in same),
        markdown_text(change),
        interval,
        rounds,
    ]
    return f"| {' | '.join(cells)} |"


def _change(v: Verdict) -> str:
    """``1.47x slower`` (``dearer`` for cost), ``too noisy to tell``, or the verdict's words (``newly failing``)."""
    if (ratio := _shown_ratio(v)) is not None:
        return "too noisy to tell" if too_noisy(v) else catalog.get(v.metric).effect(ratio)
    return v.verdict.replace("-", " ")


def _median(metric: str, values: Sequence[float]) -> str:
    return catalog.get(metric).format(stats.median(values)) if values else "-"


def _cell_code(text: str) -> str:
    """A code span inside a table cell: a ``|`` would end the cell even there, so it is escaped (GFM)."""
    return markdown_code(text).replace("|", "\\|")


def _unchanged_line(outcome: Outcome) -> str:
    """``Unchanged: runtime 2 cases, memory above idle 2 cases, cost 2 cases.`` (every metric compared)."""
    if not outcome.unchanged:
        return "Unchanged: none."
    per_metric: dict[str, set[str]] = {}
    for v in outcome.unchanged:
        per_metric.setdefault(v.metric, set()).add(v.fingerprint)
    order = catalog.names()
    parts = [
        f"{catalog.get(m).short} {plural(len(fps), 'case')}"
        for m, fps in sorted(per_metric.items(), key=lambda item: order.index(item[0]))
    ]
    return f"Unchanged (within the floor): {', '.join(parts)}."


def _sides(page: Page) -> list[str]:
    base, head = (_side(name, rev) for name, rev in (("base", page.base), ("head", page.head)))
    where = []
    if is_link(page.report):
        where = [f"[report]({page.report})"]
    elif page.report:
        where = [f"report: {markdown_code(page.report)}"]
    if page.group is not None:
        where = [
            (
                "Measured in shards, each on one machine, base and head in turn there (lockstep A/B)"
                if page.shards
                else "Measured on one machine, base and head in turn (lockstep A/B)"
            )
            + ", each case until its verdict is decided",
            *([markdown_text(page.measured)] if page.measured else []),
            f"group {markdown_code(page.group)}",
            *where,
        ]
    return [f"{base}; {head}.", *(["", " · ".join(where)] if where else [])]


def _shards(said: Sequence[str]) -> list[str]:
    """A sharded comparison's lines (`daskbench.shards.merge.Merged.lines`): how many shards measured, and
    each shard without results (failed, cancelled) with its cases, which are not measured, never unchanged."""
    if not said:
        return []
    return ["", f"Shards: {markdown_text(said[0])}.", *(f"- {markdown_text(line)}" for line in said[1:])]


def _dependencies(changes: Sequence[str]) -> list[str]:
    """The line saying how head's declared dependencies differ (user text: each a code span)."""
    if not changes:
        return []
    listed = "; ".join(markdown_code(change) for change in changes)
    return ["", f"Dependencies differ (each side built from its own requirements): {listed}."]


def _side(name: str, revision: Revision) -> str:
    if revision.commit is None:
        return f"{name} {markdown_code(revision.given)} (a folder)"
    said = f" {markdown_text(revision.subject)}" if revision.subject else ""
    return f"{name} {markdown_code(revision.given)} = {markdown_code(revision.commit[:10])}{said}"


# -- on the pull request ----------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """What `publish` did: the comment's id, whether it was created (else edited), the status set."""

    comment_id: int
    created: bool
    state: str


def publish(
    github: GitHub, number: int, head: str, markdown: str, outcome: Outcome, target_url: str | None = None
) -> Published:
    """Create the comment the first time, edit that one later; set the head commit's status."""
    kept = keep_comment(github, number, markdown, MARKER)
    state, description = status_of(outcome)
    github.set_status(head, state, description, STATUS_CONTEXT, target_url)
    return Published(kept.comment_id, kept.created, state)
