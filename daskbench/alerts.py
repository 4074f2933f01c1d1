"""Alerts: a comparison as job-summary Markdown and one GitHub issue per regressed case.

Why: a regression that only sets an exit code is read by nobody, and a bot that opens a
new issue every night (or comments when nothing regressed) is muted by everybody. So
each regressed case owns one issue, found again by a stable key from its fingerprint in
the title (``[daskbench:<fingerprint>]``) and a label: opened the first night,
commented on later nights, closed with a comment once the case is judged unchanged or
improved. Infrastructure failures (cluster did not start, store or S3 unreachable) go to
one issue of their own label, never a regression. Nothing regressed: nothing written.

The issues are written through `daskbench.github` (found by the key in their title, opened, commented
on, closed: `open_alerts`, `open_alert`, `close_alert`), which ``daskbench pr`` shares for its comment
and status, with ``GITHUB_TOKEN``; ``DASKBENCH_GITHUB_API`` overrides the base URL (tests point it at a
loopback server). The token is sent in a header only, never logged.

A night's regressions are confirmed before they are alerted. Side by side (`side_by_side`): a lockstep
A/B of the last good run's environment against tonight's (``daskbench confirm``) re-judges each
regression, and only those it finds ``regressed`` stay, each carrying its A/B evidence (effect,
interval, rounds, per-round ratios); a regression it did not measure is not alerted. By a re-run of the
same environment (`confirmed`), when no environment could be rebuilt: the alert says so and why. Either
way the alert names how it was confirmed (`Confirmation`) and, when a bisection of the run named one,
the first bad release.

Everything of a user's in the Markdown (case labels, run labels, notes, the infrastructure reason) is
made inert by `daskbench.text`'s rules: a case label as a code span (`markdown_code`), other text as
escaped prose (`markdown_text`), an issue title as plain text (`unlinked`); none of them keeps raw HTML,
a live ``@mention`` or ``#reference``, or a control character. The reason is also redacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from daskbench.github import GitHub, close_alert, open_alert, open_alerts
from daskbench.judge.format import case_label, format_verdict
from daskbench.redact import redact_text
from daskbench.text import markdown_code, markdown_text, plural, unlinked, wrap_line
from daskbench.verdicts import Comparison, Verdict

REGRESSION_LABEL = "daskbench-regression"
INFRA_LABEL = "daskbench-infrastructure"
INFRA_KEY = "infrastructure"
#: Verdicts that mean a case is healthy again, so its open issue is closed.
_RECOVERED = frozenset({"unchanged", "improved", "fixed"})


@dataclass
class Alerted:
    """What `sync_issues` did, as issue numbers."""

    opened: list[int] = field(default_factory=list)
    commented: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{name} {', '.join(f'#{n}' for n in found)}"
            for name, found in (("opened", self.opened), ("commented on", self.commented), ("closed", self.closed))
            if found
        ]
        return "issues: " + ("; ".join(parts) if parts else "nothing to do")


def regressed_cases(comparison: Comparison) -> dict[str, list[Verdict]]:
    """The regression verdicts per case fingerprint, in verdict order."""
    found: dict[str, list[Verdict]] = {}
    for verdict in comparison.regressions:
        found.setdefault(verdict.fingerprint, []).append(verdict)
    return found


def confirmed(night: Comparison, rerun: Comparison) -> Comparison:
    """The night's verdicts with each regression replaced by the re-run's verdict on the same case and metric.

    Why: one noisy night should not open an issue; only what a re-run (``--repeat``) of the
    regressed cases confirms is alerted. A case the re-run did not measure keeps its verdict.
    """
    again = {(v.fingerprint, v.metric): v for v in rerun.verdicts}
    verdicts = tuple(again.get((v.fingerprint, v.metric), v) if v.is_regression else v for v in night.verdicts)
    note = f"regressions re-judged on re-run {rerun.candidate_run.run_id[:8]}"
    return replace(night, verdicts=verdicts, notes=(*night.notes, note))


SIDE_BY_SIDE, RERUN = "side by side", "re-run"


@dataclass(frozen=True)
class Confirmation:
    """How a night's regressions were confirmed: ``side by side`` (``reference`` the A/B group, ``good``
    the run whose environment was side A, ``versions`` the two version sets) or by a ``re-run``
    (``reference`` its run id, ``reason`` why not side by side); ``evidence`` the confirming verdict per
    (case fingerprint, metric); ``culprit`` a bisection's first bad release, when one ran."""

    kind: str
    reference: str
    good: str = ""
    versions: str = ""
    reason: str = ""
    evidence: Mapping[tuple[str, str], Verdict] = field(default_factory=dict)
    culprit: str = ""

    def lines(self) -> list[str]:
        """The Markdown paragraph that says how the regressions were confirmed (and the culprit)."""
        if self.kind == SIDE_BY_SIDE:
            said = (
                f"Confirmed side by side: A/B group {markdown_code(self.reference)}, lockstep, the environment "
                f"of the last good run {markdown_code(self.good[:8])} against tonight's "
                f"({markdown_text(self.versions)}), the suspect cases only "
                f"({markdown_code(f'daskbench compare --group {self.reference}')})."
            )
        else:
            why = f" (no side-by-side A/B: {markdown_text(redact_text(self.reason))})" if self.reason else ""
            said = (
                f"Confirmed by a re-run of the same environment, run {markdown_code(self.reference[:8])}, "
                f"not side by side{why}."
            )
        return [said, *([f"Culprit: {markdown_text(self.culprit)}."] if self.culprit else [])]

    def of(self, verdict: Verdict) -> str:
        """The confirming evidence of one regression: ``side by side: 2.98x slower (95% CI ...); decided
        after 3 rounds; per-round ratios ...``; empty when there is none."""
        found = self.evidence.get((verdict.fingerprint, verdict.metric))
        if found is None:
            return ""
        note = f"; {found.note}" if found.note else ""
        return f"{self.kind}: {format_verdict(found)}{note}"


def _match_key(verdict: Verdict) -> tuple[str, str, str, str]:
    """A case and metric as two sessions on one machine name it: its cluster without the memory per worker,
    which a lockstep side gets as its share of the machine."""
    cluster = {key: value for key, value in verdict.cluster.items() if key != "memory_per_worker"}
    return (
        verdict.workload,
        json.dumps(dict(verdict.params), sort_keys=True, default=str),
        json.dumps(cluster, sort_keys=True, default=str),
        verdict.metric,
    )


def side_by_side(night: Comparison, ab: Comparison, **described: str) -> tuple[Comparison, Confirmation]:
    """The night's verdicts with each regression kept only where the A/B group ``ab`` says ``regressed``
    (newly failing counts) on the same case and metric; the others take the A/B's verdict, or
    ``inconclusive`` when it did not measure them. A suspect case's other metrics take the A/B's regression too:
    measured side by side, a metric the night's noise left undecided (a 23x slowdown read ``inconclusive`` on a
    loaded machine, its case suspect for its memory) is confirmed, its false alarms counted in the A/B's family
    (every metric of every case it judged). ``described``: `Confirmation`'s ``reference``, ``good`` and
    ``versions``."""
    again = {_match_key(v): v for v in ab.verdicts}
    suspect = {v.fingerprint for v in night.verdicts if v.is_regression}
    verdicts, evidence = [], {}
    for verdict in night.verdicts:
        if not verdict.is_regression:
            found = again.get(_match_key(verdict)) if verdict.fingerprint in suspect else None
            if found is not None and found.is_regression:  # the A/B saw what the night's noise hid
                evidence[(verdict.fingerprint, verdict.metric)] = found
                said = f"regressed side by side; the night alone read {verdict.verdict}"
                verdict = replace(found, fingerprint=verdict.fingerprint, cluster=verdict.cluster, note=said)
            verdicts.append(verdict)
            continue
        found = again.get(_match_key(verdict))
        if found is not None:
            evidence[(verdict.fingerprint, verdict.metric)] = found
        if found is not None and found.is_regression:
            verdicts.append(verdict)
        elif found is not None:
            verdicts.append(replace(found, fingerprint=verdict.fingerprint, cluster=verdict.cluster))
        else:
            verdicts.append(replace(verdict, verdict="inconclusive", note="not measured side by side"))
    note = f"regressions re-judged side by side in A/B group {described.get('reference', '?')}"
    confirmation = Confirmation(SIDE_BY_SIDE, evidence=evidence, **described)
    return replace(night, verdicts=tuple(verdicts), notes=(*night.notes, note)), confirmation


def markdown(comparison: Comparison, run_url: str | None = None, confirmation: Confirmation | None = None) -> str:
    """The job-summary Markdown of the regressions, a list item each with its confirming evidence (wrapped
    at 120 columns, so the terminal copy fits too); empty when nothing regressed."""
    found = comparison.regressions
    if not found:
        return ""
    run = comparison.candidate_run
    lines = [
        f"### daskbench: {plural(len(found), 'regression')} in run `{run.run_id[:8]}` ({markdown_text(run.label)})",
        "",
        f"Judged against {markdown_text(comparison.baseline_label or comparison.mode)}."
        + (f" [Workflow run]({run_url})" if run_url else ""),
        "",
        *([*confirmation.lines(), ""] if confirmation else []),
        *(line for v in found for line in _item(v, confirmation)),
    ]
    return "".join(f"{wrapped}\n" for line in lines for wrapped in wrap_line(line, indent=_indent(line)))


def _indent(line: str) -> str:
    """Continuation lines of a list item line up with its text (a nested item's deeper)."""
    return " " * (len(line) - len(line.lstrip(" -")) if line.lstrip().startswith("- ") else 2)


def _item(verdict: Verdict, confirmation: Confirmation | None) -> list[str]:
    """One regression's list item, and its confirming evidence as a nested item."""
    evidence = confirmation.of(verdict) if confirmation else ""
    return [
        f"- {_case(verdict)}, {verdict.metric}: {markdown_text(format_verdict(verdict))}",
        *([f"  - {markdown_text(evidence)}"] if evidence else []),
    ]


def sync_issues(
    github: GitHub, comparison: Comparison, run_url: str | None = None, confirmation: Confirmation | None = None
) -> Alerted:
    """Open, comment on or close one issue per case, so each regression has exactly one open issue (its
    body with the confirming evidence, when given)."""
    done = Alerted()
    regressed = regressed_cases(comparison)
    healthy = _recovered_cases(comparison.verdicts, set(regressed))
    if not regressed and not healthy:
        return done
    existing = open_alerts(github, REGRESSION_LABEL)
    where = _where(comparison, run_url)
    for fingerprint, verdicts in regressed.items():
        body = _case_body(verdicts, where, confirmation)
        if fingerprint in existing:
            number = int(existing[fingerprint]["number"])
            github.comment(number, "Still regressed. " + body)
            done.commented.append(number)
        else:
            first = verdicts[0]
            title = f"Regression: {unlinked(case_label(first.workload, first.params, first.cluster))}"
            done.opened.append(open_alert(github, title, fingerprint, body, REGRESSION_LABEL))
    for fingerprint in sorted(set(healthy) & set(existing)):
        number = int(existing[fingerprint]["number"])
        close_alert(github, number, f"Recovered: judged {', '.join(sorted(healthy[fingerprint]))} {where}. Closing.")
        done.closed.append(number)
    return done


def infrastructure_alert(github: GitHub, reason: str, run_url: str | None = None) -> Alerted:
    """Report a run that could not measure (not a regression) on the one infrastructure issue."""
    done = Alerted()
    body = f"The nightly could not run{f' ([workflow run]({run_url}))' if run_url else ''}: {reason_markdown(reason)}"
    existing = open_alerts(github, INFRA_LABEL).get(INFRA_KEY)
    if existing is not None:
        github.comment(int(existing["number"]), body)
        done.commented.append(int(existing["number"]))
    else:
        done.opened.append(open_alert(github, "Nightly benchmarks could not run", INFRA_KEY, body, INFRA_LABEL))
    return done


def reason_markdown(reason: str) -> str:
    """Why a nightly could not run, as inert Markdown: secrets redacted (an error may quote a URL), then
    `markdown_text`."""
    return markdown_text(redact_text(reason))


def _case(v: Verdict) -> str:
    """A verdict's case as an inert Markdown code span (`markdown_code`)."""
    return markdown_code(case_label(v.workload, v.params, v.cluster))


def _recovered_cases(verdicts: Sequence[Verdict], regressed: set[str]) -> dict[str, set[str]]:
    """Cases judged this run with only healthy verdicts (a case not measured is not recovered)."""
    kinds: dict[str, set[str]] = {}
    for verdict in verdicts:
        if verdict.fingerprint not in regressed:
            kinds.setdefault(verdict.fingerprint, set()).add(verdict.verdict)
    return {fp: found for fp, found in kinds.items() if found and found <= _RECOVERED}


def _where(comparison: Comparison, run_url: str | None) -> str:
    run = comparison.candidate_run
    text = f"in run `{run.run_id[:8]}` ({markdown_text(run.label)}, {run.started_at}"
    text += f", {run.git_sha[:10]}" if run.git_sha else ""
    return text + (f", [workflow run]({run_url}))" if run_url else ")")


def _case_body(verdicts: Sequence[Verdict], where: str, confirmation: Confirmation | None = None) -> str:
    rows = "\n".join(f"- {v.metric}: {markdown_text(format_verdict(v))}" + _nested(v, confirmation) for v in verdicts)
    said = "\n\n" + " ".join(confirmation.lines()) if confirmation else ""
    return f"Regressed {where}:\n\n{rows}{said}\n"


def _nested(verdict: Verdict, confirmation: Confirmation | None) -> str:
    evidence = confirmation.of(verdict) if confirmation else ""
    return f"\n  - {markdown_text(evidence)}" if evidence else ""
