"""What a culprit hunt found, as the Markdown of the comment on the regression's issue (and the job summary).

Pure: a `Hunt` in, text out (posting it is the command's: `daskbench.cli.culprit`). Per search, the first bad
commit with its link, its title and the pull request its message names (``Fix x (#11234)``, or GitHub's ``Merge
pull request #11234``), each linked when the repository it was recorded from is on the web; the cases it
explains; the step table (each step's candidate, verdict, effect with its interval, rounds, minutes); and what was
left undecided: the candidates the first bad one may still be, a step undecided, cases no search reached. A
commit's subject is user text: made inert (`text.markdown_text`), as every alert's text is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from daskbench.bisect import search
from daskbench.bisect.plan import Candidate, shortened
from daskbench.culprit.hunt import Hunt, Search
from daskbench.culprit.route import Route
from daskbench.text import markdown_code, markdown_text, plural

#: The pull request a commit's subject names: squash-merged ``... (#11234)`` or ``Merge pull request #11234``.
_PULL = re.compile(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)\b")
_SCP = re.compile(r"^[\w.-]+@([\w.-]+):(.+)$")  # git@github.com:dask/dask.git
#: How much of a subject the step table shows.
SUBJECT_CELL = 60


def web_url(url: str) -> str:
    """The web page of a repository a run recorded (``https://github.com/dask/dask``); empty when it has none
    (a local folder, ``file://``)."""
    scp = _SCP.match(url)
    if scp:
        url = f"https://{scp[1]}/{scp[2]}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ssh", "git") or not parts.hostname or "***" in url:
        return ""
    return f"https://{parts.hostname}/{parts.path.strip('/').removesuffix('.git')}"


def pull_request(subject: str) -> str:
    """The number of the pull request a commit's subject names; empty when none."""
    found = _PULL.search(subject)
    return (found[1] or found[2]) if found else ""


def markdown(hunt: Hunt) -> str:
    """The comment: a section per search, then what the budget left; `hunt`'s cost in the last line."""
    route = hunt.route
    lines = [f"### daskbench: {_headline(hunt)}", ""]
    lines += [f"Between the last good run {markdown_code(route.good.run_id[:8])} and run "
              f"{markdown_code(route.bad.run_id[:8])}: {markdown_text(route.describe())}.", ""]  # fmt: skip
    lines += [f"- {markdown_text(note)}" for note in route.plan.notes + route.notes]
    for found in hunt.searches:
        lines += [*_search(found, hunt), ""]
    if hunt.unsearched:
        lines += [f"Not searched, the budget ran out first: {', '.join(map(markdown_code, hunt.unsearched))}.", ""]
    lines += [*_skipped(hunt), _spent(hunt)]
    return "\n".join(lines).rstrip() + "\n"


def _headline(hunt: Hunt) -> str:
    culprits = [found.outcome.candidate for found in hunt.searches if found.outcome.candidate is not None]
    if culprits:
        kinds = "first bad commit" if culprits[0].commit else "first bad release"
        return f"{kinds}, found unattended: {', '.join(markdown_code(_short(c)) for c in culprits)}"
    return "no culprit named" + (" (the budget ran out)" if hunt.kind() == "budget" else "")


def _short(candidate: Candidate) -> str:
    return f"{candidate.package} {candidate.label()}".strip() if candidate.commit else candidate.describe()


def _search(found: Search, hunt: Hunt) -> list[str]:
    """One search: its finding, the cases, the step table, what is left."""
    cases = ", ".join(map(markdown_code, found.workloads))
    outcome, route = found.outcome, hunt.route
    if outcome.kind == "culprit" and outcome.candidate is not None:
        said = [f"**First bad {'commit' if outcome.candidate.commit else 'release'}: "
                f"{_candidate_text(outcome.candidate, route, whole=True)}**", ""]  # fmt: skip
        shared = ", ".join(map(markdown_code, found.shared()))
        said.append(f"Cases searched: {cases}; regressed at its step (they share this cause): {shared}.")
        if outcome.unbuilt:
            skipped = ", ".join(markdown_code(c.label()) for c in outcome.unbuilt)
            said.append(f"Or one of {skipped} just before it, which did not build or import.")
    elif outcome.kind == "none":
        said = [f"Step 0 found no regression between the ends for {cases}: no culprit named."]
    else:
        said = [f"**Left undecided** for {cases}: {markdown_text(_left(outcome, hunt))}."]
    return [*said, "", *_table(found, route, hunt.confirmation)]


def _left(outcome: search.Outcome, hunt: Hunt) -> str:
    where = search.left_text(outcome.left)
    if outcome.kind == "budget":
        return f"the budget ({hunt.budget / 60:.0f} min) ran out after step {outcome.step.number}; {where}"
    return f"step {outcome.step.number} stayed undecided after {plural(outcome.step.rounds, 'round')}; {where}"


def _candidate_text(candidate: Candidate, route: Route, *, whole: bool = False) -> str:
    """A step's candidate in Markdown: a commit's linked id, its title and its pull request; a release's name."""
    if not candidate.commit:
        return markdown_text(candidate.describe())
    web = web_url(route.urls.get(candidate.package, ""))
    short = markdown_code(candidate.commit[:12])
    commit = (
        f"[{short}]({web}/commit/{candidate.commit})" if web else markdown_code(candidate.commit[: 40 if whole else 12])
    )
    subject = candidate.subject if whole else shortened(candidate.subject, SUBJECT_CELL)
    number = pull_request(candidate.subject)
    pull = f" (pull request [#{number}]({web}/pull/{number}))" if number and web and whole else ""
    package = f"{markdown_text(candidate.package)} " if candidate.package else ""
    return f"{package}{commit} {markdown_text(subject)}{pull}"


def _table(found: Search, route: Route, confirmation: str) -> list[str]:
    """The step table: step, candidate, verdict, effect (95% interval), rounds, minutes."""
    by_label: Mapping[str, Candidate] = {c.label(): c for c in route.plan.candidates}
    rows = ["| step | candidate | verdict | effect (95% interval) | rounds | min |", "|---:|---|---|---|---:|---:|"]
    for step in found.steps:
        candidate = by_label.get(step.label)
        shown = _candidate_text(candidate, route) if candidate else markdown_text(step.described)
        if step.group == confirmation:
            shown += " (the confirmation)"
        rows.append(
            f"| {step.number} | {shown} | {markdown_text(search.verdict_words(step))} | {_effect(step)} | "
            f"{step.rounds} | {step.minutes:.1f} |"
        )
    groups = ", ".join(f"step {step.number} {markdown_code(step.group)}" for step in found.steps)
    command = markdown_code("daskbench compare --group GROUP")
    return [*rows, "", f"Bisection {markdown_code(found.name)}; each step's A/B group ({command} shows it): {groups}."]


def _effect(step: search.Step) -> str:
    if step.ratio is None:
        return "-"
    interval = f" ({step.low:.2f}-{step.high:.2f})" if step.low is not None and step.high is not None else ""
    return f"{step.ratio:.2f}x{interval}"


def _skipped(hunt: Hunt) -> list[str]:
    """The candidates skipped because they did not build or import, each with the installer's words."""
    if not hunt.skipped:
        return []
    items = [f"- {markdown_code(label)}: {markdown_text(why)}" for label, why in sorted(hunt.skipped.items())]
    return ["Skipped, as `git bisect skip` does (did not build or import):", *items, ""]


def _spent(hunt: Hunt) -> str:
    return (f"Unattended (`daskbench culprit`): {hunt.seconds / 60:.1f} min of its {hunt.budget / 60:.0f} min "
            "budget; run it again with more (`--budget`) to go on: its finished steps are reused.")  # fmt: skip
