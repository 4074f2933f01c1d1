"""Benchmarks on a pull request: its base and its head side by side, one comment kept up to date.

``daskbench pr BASE HEAD`` (`daskbench.cli.pr`) resolves each side in the user's git checkout (`resolve`: a
branch, tag or commit, exported once into the environment cache as a checkout at that commit; or a folder,
installed editable), builds one overlay environment per side holding that side's project (`side_python`,
cached by commit; when the sides declare different dependencies, `daskbench.envs.changed_dependencies`,
each side's environment is built from its own requirements instead, and the comment lists the differences),
and runs one lockstep A/B group (`measure`): one pytest session per side, each in its own source
tree, measuring each case in turn until the sequential rule decides it. `compare_group` judges the group;
`Outcome` reads it (regressed, inconclusive or no change), `comment_markdown` writes the verdict table (what
changed first, with effect, interval and rounds; then the unchanged counts, memory as well as time), and
`publish` keeps one pull-request comment (found by `MARKER`) and a commit status on the head up to date.

Every text of a user's that reaches the Markdown (refs, commit subjects, case labels, notes) passes
`daskbench.text`'s Markdown rules; no such text reaches a shell (sessions are started with argument lists).
The sessions get this environment without the GitHub token (`HIDDEN`): they run the pull request's code.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daskbench import catalog, envs
from daskbench.errors import DaskbenchError
from daskbench.github import STATUS_DESCRIPTION_LIMIT, GitHub
from daskbench.judge import stats
from daskbench.judge.compare import AB_GROUP, compare_group
from daskbench.judge.format import case_label, too_noisy
from daskbench.judge.sequential import Question
from daskbench.lockstep.parts import Spent, run_group
from daskbench.lockstep.sessions import Side
from daskbench.model import Comparison, Verdict
from daskbench.store import Store
from daskbench.text import first_few, markdown_code, markdown_text, plural, terminal_safe

#: The hidden first line of the one comment ``daskbench pr`` keeps on a pull request.
MARKER = "<!-- daskbench-pr -->"
#: The context of the commit status it sets on the head commit.
STATUS_CONTEXT = "daskbench"
#: Run tags of a pull request's group (besides the lockstep ones, which keep it out of plain compare/report).
TAG, BASE_TAG, HEAD_TAG, NUMBER_TAG = "pr", "pr_base", "pr_head", "pr_number"
#: Environment variables the benchmark sessions never get: they run the pull request's code.
HIDDEN = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "ACTIONS_RUNTIME_TOKEN"})
#: The most verdict rows a comment lists (GitHub's comment limit is 65536 characters); the rest: the report.
MAX_ROWS = 40
#: How a side's session starts in its own source tree (argv: the folder, then the command).
_IN_FOLDER = "import os, sys; os.chdir(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"
_URL = re.compile(r"^https?://[^\s()<>\[\]`\"']+$")

Say = Callable[[str], None]


@dataclass(frozen=True)
class Revision:
    """One side of a pull request: as given (user text), its commit (None: a folder) and source tree."""

    given: str
    commit: str | None
    tree: Path
    subject: str = ""  # the commit's first line (user text)

    @property
    def short(self) -> str:
        return self.commit[:10] if self.commit else "working tree"


def resolve(repo: Path, given: str, flag: str) -> Revision:
    """``given`` as a branch, tag or commit of ``repo``, else as a folder; one line when it is neither."""
    try:
        commit = envs.resolve_commit(repo, given, flag)
    except DaskbenchError:
        folder = Path(given).expanduser()
        if given and folder.is_dir():
            return Revision(given, None, folder.absolute())
        raise DaskbenchError(
            f"{flag} {given!r}: {repo} has no such branch, tag or commit, and it is no folder "
            "(git log shows the commits)"
        ) from None
    return Revision(given, commit, repo, envs.commit_subject(repo, commit))


def uncommitted_note(repo: Path, base: Revision, head: Revision) -> str:
    """What to say when the checkout holds edits no commit has and a side is a commit: they are not measured
    (a commit is measured as committed, so the comment and the status name exactly what was measured; the
    working tree is measured when given as a folder). "" otherwise."""
    if base.commit is None and head.commit is None:
        return ""
    edited = envs.uncommitted(repo)
    if not edited:
        return ""
    return (
        f"{repo} has uncommitted edits ({plural(len(edited), 'file')}: {first_few(edited, 2)}); they are not "
        "measured: a commit is measured as committed (commit them, or give the checkout's folder as HEAD to "
        "measure its working tree)"
    )


def exported(repo: Path, revision: Revision, cache: str | Path | None) -> Revision:
    """A commit's side with its source tree exported (once) into the cache; a folder as it is."""
    if revision.commit is None:
        return revision
    tree = envs.exported(repo, revision.commit, cache)
    return Revision(revision.given, revision.commit, tree, revision.subject)


def side_python(revision: Revision, name: str, say: Say, full: bool = False, **options: Any) -> str:
    """The interpreter of an overlay holding the side's project (its dependencies: this interpreter's), or with
    ``full`` (the sides declare different dependencies) of an environment built from the side's own
    requirements, plus this daskbench; a commit's is built once per commit, a folder is installed editable
    (its current files count). A folder of benchmarks (no build system) is not installed: this interpreter,
    or with ``full`` an environment of its requirements (`envs.side_sources`)."""
    sources = envs.side_sources(revision.tree, editable=revision.commit is None, full=full)
    if not sources and not full:  # a folder of benchmarks: nothing of it to install (`envs.trees`)
        say(f"pr: {name} {revision.short} is {envs.tree_shape(revision.tree).describe()}: its files run as they are")
        return sys.executable
    spec = envs.spec_from_pins({}, with_daskbench=full, source=f"{name} {revision.short}", sources=sources)
    return str(envs.build(spec, say=say, inherit=not full, **options))


def dependency_changes(base: Revision, head: Revision, say: Say) -> tuple[str, ...]:
    """How head's declared dependencies differ from base's (`envs.changed_dependencies`), said in one line;
    empty when they do not (each side is then an overlay over this interpreter's packages) or are not known."""
    found = envs.changed_dependencies(base.tree, head.tree)
    if found is None:
        say("pr: a side declares its dependencies outside pyproject.toml: both run over this environment's packages")
        return ()
    if found:
        say(f"pr: head's declared dependencies differ ({'; '.join(found)}): each side is built from its own")
    return tuple(found)


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


def measure(plan: PrPlan, say: Say) -> Spent:
    """Both sides' sessions at once, each in its own source tree, every common case until decided (with a
    budget: screened, then the open cases closest to deciding, until the budget ends)."""
    environment = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    sides = {name: Side(name, python) for name, (_, python) in plan.sides.items()}

    def in_folder(side: Side, session: list[str]) -> list[str]:
        return [side.python, "-c", _IN_FOLDER, str(plan.sides[side.name][0].tree), *session]

    floor = plan.floors.get("runtime_s", stats.default_floor("runtime_s"))
    return run_group(
        plan.group,
        sides,
        plan.db,
        plan.pytest_args,
        environ=environment,
        wrap=in_folder,
        question=Question(floor, plan.max_rounds),
        max_seconds=plan.max_seconds,
        budget=plan.budget,
        say=say,
    )


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


def tag_group(store: Store, plan: PrPlan, number: int | None) -> None:
    """Tag the group's runs: a pull request's, its base and head commits (or folders) and its number."""
    base, head = plan.sides["A"][0], plan.sides["B"][0]
    tags = {
        TAG: plan.group,
        BASE_TAG: base.commit or str(base.tree),
        HEAD_TAG: head.commit or str(head.tree),
        **({NUMBER_TAG: str(number)} if number is not None else {}),
    }
    for run in store.runs():
        if run.tags.get(AB_GROUP) == plan.group:
            store.tag_run(run.run_id, tags)


def judged(store: Store, plan: PrPlan) -> Comparison:
    return compare_group(store, plan.group, floors=plan.floors)


# -- what it found ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A comparison read for a pull request: ``state`` is ``regressed`` (a confirmed regression or a newly
    failing case), ``inconclusive`` (no regression, but some verdict undecided) or ``unchanged`` (nothing
    regressed or undecided; improvements may be listed); ``changed`` every verdict but ``unchanged``,
    biggest effect first; ``unchanged`` the unchanged verdicts."""

    state: str
    changed: tuple[Verdict, ...]
    unchanged: tuple[Verdict, ...]

    @classmethod
    def of(cls, comparison: Comparison) -> Outcome:
        return cls.of_verdicts(comparison.verdicts)  # the biggest effect first (judge.compare)

    @classmethod
    def of_verdicts(cls, verdicts: Sequence[Verdict]) -> Outcome:
        changed = tuple(v for v in verdicts if v.verdict != "unchanged")
        unchanged = tuple(v for v in verdicts if v.verdict == "unchanged")
        if any(v.is_regression for v in verdicts):
            state = "regressed"
        elif any(v.verdict == "inconclusive" for v in verdicts):
            state = "inconclusive"
        else:
            state = "unchanged"
        return cls(state, changed, unchanged)

    def cases(self, *kinds: str) -> int:
        """How many cases have a verdict of one of ``kinds`` (in any metric)."""
        return len({v.fingerprint for v in self.changed if v.verdict in kinds})

    def headline(self) -> str:
        """``1 case regressed`` / ``no regression, 2 cases undecided`` / ``nothing changed`` (counts only)."""
        regressed = self.cases("regressed", "newly-failing")
        if regressed:
            return f"{plural(regressed, 'case')} regressed"
        parts = [
            f"{plural(n, 'case')} {word}"
            for n, word in ((self.cases("inconclusive"), "undecided"), (self.cases("improved", "fixed"), "improved"))
            if n
        ]
        return "no regression, " + ", ".join(parts) if parts else "nothing changed"


def status_of(outcome: Outcome) -> tuple[str, str]:
    """The commit status of an outcome: ``failure`` for a regression, else ``success``; an inconclusive
    comparison is ``success`` with a description that starts ``inconclusive:`` (commit statuses have no
    neutral state: ``pending`` would read as still running and hold a required check forever, ``error`` as
    daskbench failing; a check run's ``neutral``, which branch protection passes, is what this mirrors)."""
    effect = _biggest(outcome)
    if not outcome.changed and not outcome.unchanged:
        return "success", "nothing compared: base and head are the same code"
    if outcome.state == "regressed":
        return "failure", _cut(f"{outcome.headline()}{effect}")
    if outcome.state == "inconclusive":
        return "success", _cut(f"inconclusive: {outcome.headline()} at the most rounds; no regression shown")
    return "success", _cut(f"{outcome.headline()}; {plural(len(outcome.unchanged), 'verdict')} unchanged")


def _biggest(outcome: Outcome) -> str:
    first = next((v for v in outcome.changed if v.is_regression and v.ratio is not None), None)
    if first is None or first.ratio is None:
        return ""
    return f" (biggest: {catalog.get(first.metric).short} {catalog.get(first.metric).effect(first.ratio)})"


def _cut(text: str) -> str:
    text = terminal_safe(text)
    return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[: STATUS_DESCRIPTION_LIMIT - 3] + "..."


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
    lines += [_unchanged_line(outcome), "", *_sides(page), *_dependencies(page.dependencies)]
    if page.note:
        lines += ["", f"*{markdown_text(page.note)}*"]
    return "\n".join(lines) + "\n"


def _lead(outcome: Outcome) -> str:
    if outcome.state == "regressed":
        return "**Regressed**: head is slower, bigger or failing where base was not, with confidence."
    if outcome.state == "inconclusive":
        return (
            "**Inconclusive**: no regression shown, but some verdicts are still undecided at the most rounds "
            "(more rounds, or a quieter machine, would decide them)."
        )
    return "**No regression**: every case judged on both sides is within its floor, or better."


_HEAD = ("verdict", "case", "metric", "base", "head", "change", "head/base (95% interval)", "rounds")


def _table(changed: Sequence[Verdict]) -> list[str]:
    rows = [f"| {' | '.join(_HEAD)} |", "|" + "---|" * len(_HEAD)]
    rows += [_row(v) for v in changed[:MAX_ROWS]]
    if len(changed) > MAX_ROWS:
        rows.append(f"\n{len(changed) - MAX_ROWS} more in the report.")
    return rows


def _row(v: Verdict) -> str:
    metric = catalog.get(v.metric)
    label = case_label(v.workload, v.params, v.cluster)
    if v.ratio is not None and v.verdict not in ("newly-failing", "fixed", "new", "missing"):
        change = "too noisy to tell" if too_noisy(v) else metric.effect(v.ratio)  # the interval: its own column
        interval = f"{v.ratio:.2f} ({v.ci_low:.2f}-{v.ci_high:.2f})" if v.ci_low and v.ci_high else f"{v.ratio:.2f}"
    else:
        change, interval = v.verdict.replace("-", " "), "-"
    rounds = str(min(len(v.baseline_values), len(v.candidate_values))) if v.baseline_values else "-"
    cells = [
        f"**{v.verdict}**",
        _cell_code(label),
        metric.short,
        _median(v.metric, v.baseline_values),
        _median(v.metric, v.candidate_values),
        markdown_text(change),
        interval,
        rounds,
    ]
    return f"| {' | '.join(cells)} |"


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
    return f"Unchanged (within the floor, 95% interval): {', '.join(parts)}."


def _sides(page: Page) -> list[str]:
    base, head = (_side(name, rev) for name, rev in (("base", page.base), ("head", page.head)))
    where = []
    if is_link(page.report):
        where = [f"[report]({page.report})"]
    elif page.report:
        where = [f"report: {markdown_code(page.report)}"]
    if page.group is not None:
        where = [
            "Measured on one machine, base and head in turn (lockstep A/B), each case until its verdict is decided",
            *([markdown_text(page.measured)] if page.measured else []),
            f"group {markdown_code(page.group)}",
            *where,
        ]
    return [f"{base}; {head}.", *(["", " · ".join(where)] if where else [])]


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


# -- GitHub -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """What `publish` did: the comment's id, whether it was created (else edited), the status set."""

    comment_id: int
    created: bool
    state: str


def find_comment(github: GitHub, number: int) -> int | None:
    """The id of the comment daskbench keeps on pull request ``number``: the oldest whose body starts with
    `MARKER` (written by a bot, when any such is)."""
    marked = [c for c in github.comments(number) if str(c.get("body", "")).startswith(MARKER) and _has_id(c)]
    bots = [c for c in marked if (c.get("user") or {}).get("type") == "Bot"]
    chosen = (bots or marked)[:1]
    return int(chosen[0]["id"]) if chosen else None


def _has_id(comment: Mapping[str, Any]) -> bool:
    return isinstance(comment.get("id"), int)


def publish(
    github: GitHub, number: int, head: str, markdown: str, outcome: Outcome, target_url: str | None = None
) -> Published:
    """Create the comment the first time, edit that one later; set the head commit's status."""
    found = find_comment(github, number)
    if found is None:
        found, created = github.comment(number, markdown), True
    else:
        github.edit_comment(found, markdown)
        created = False
    state, description = status_of(outcome)
    github.set_status(head, state, description, STATUS_CONTEXT, target_url)
    return Published(found, created, state)


def elapsed(started: float) -> str:
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    return f"{minutes}m{seconds:02d}s"
