"""Alerts: a comparison as job-summary Markdown and one GitHub issue per regressed case.

Why: a regression that only sets an exit code is read by nobody, and a bot that opens a
new issue every night (or comments when nothing regressed) is muted by everybody. So
each regressed case owns one issue, found again by a stable key from its fingerprint in
the title (``[daskbench:<fingerprint>]``) and a label: opened the first night,
commented on later nights, closed with a comment once the case is judged unchanged or
improved. Infrastructure failures (cluster did not start, store or S3 unreachable) go to
one issue of their own label, never a regression. Nothing regressed: nothing written.

Only the few REST endpoints used are spoken (list open issues by label, create an issue,
comment, close), with ``GITHUB_TOKEN``; ``DASKBENCH_GITHUB_API`` overrides the base URL
(tests point it at a loopback server). The token is sent in a header only, never logged.

Everything of a user's in the Markdown (case labels, run labels, notes, the infrastructure reason) is
made inert by `daskbench.text`'s rules: a case label as a code span (`markdown_code`), other text as
escaped prose (`markdown_text`), an issue title as plain text (`unlinked`); none of them keeps raw HTML,
a live ``@mention`` or ``#reference``, or a control character. The reason is also redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from daskbench.github import API_ENV, DEFAULT_API, GitHub
from daskbench.judge.format import case_label, format_verdict
from daskbench.model import Comparison, Verdict
from daskbench.redact import redact_text
from daskbench.text import markdown_code, markdown_text, plural, unlinked, wrap_line

__all__ = ["API_ENV", "DEFAULT_API", "GitHub"]  # the client lives in daskbench.github; the CLI finds it here

REGRESSION_LABEL = "daskbench-regression"
INFRA_LABEL = "daskbench-infrastructure"
INFRA_KEY = "infrastructure"
#: Verdicts that mean a case is healthy again, so its open issue is closed.
_RECOVERED = frozenset({"unchanged", "improved", "fixed"})


def alert_key(fingerprint: str) -> str:
    """The stable key of a case's issue: its fingerprint, as it appears in the issue title."""
    return f"[daskbench:{fingerprint}]"


@dataclass
class Alerted:
    """What `sync_issues` did, as issue numbers."""

    opened: list[int] = field(default_factory=list)
    commented: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{name} {', '.join(f'#{n}' for n in found)}" for name, found in
                 (("opened", self.opened), ("commented on", self.commented), ("closed", self.closed)) if found]  # fmt: skip
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


def markdown(comparison: Comparison, run_url: str | None = None) -> str:
    """The job-summary Markdown of the regressions, a list item each (wrapped at 120 columns, so the
    terminal copy fits too); empty when nothing regressed."""
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
        *(f"- {_case(v)}, {v.metric}: {markdown_text(format_verdict(v))}" for v in found),
    ]
    return "".join(f"{wrapped}\n" for line in lines for wrapped in wrap_line(line, indent="  "))


def sync_issues(github: GitHub, comparison: Comparison, run_url: str | None = None) -> Alerted:
    """Open, comment on or close one issue per case, so each regression has exactly one open issue."""
    done = Alerted()
    regressed = regressed_cases(comparison)
    healthy = _recovered_cases(comparison.verdicts, set(regressed))
    if not regressed and not healthy:
        return done
    existing = github.open_issues(REGRESSION_LABEL)
    where = _where(comparison, run_url)
    for fingerprint, verdicts in regressed.items():
        body = _case_body(verdicts, where)
        if fingerprint in existing:
            number = int(existing[fingerprint]["number"])
            github.comment(number, "Still regressed. " + body)
            done.commented.append(number)
        else:
            first = verdicts[0]
            title = f"Regression: {unlinked(case_label(first.workload, first.params, first.cluster))} {alert_key(fingerprint)}"
            done.opened.append(github.create_issue(title, body, [REGRESSION_LABEL]))
    for fingerprint in sorted(set(healthy) & set(existing)):
        number = int(existing[fingerprint]["number"])
        github.comment(number, f"Recovered: judged {', '.join(sorted(healthy[fingerprint]))} {where}. Closing.")
        github.close(number)
        done.closed.append(number)
    return done


def infrastructure_alert(github: GitHub, reason: str, run_url: str | None = None) -> Alerted:
    """Report a run that could not measure (not a regression) on the one infrastructure issue."""
    done = Alerted()
    body = f"The nightly could not run{f' ([workflow run]({run_url}))' if run_url else ''}: {reason_markdown(reason)}"
    existing = github.open_issues(INFRA_LABEL).get(INFRA_KEY)
    if existing is not None:
        github.comment(int(existing["number"]), body)
        done.commented.append(int(existing["number"]))
    else:
        title = f"Nightly benchmarks could not run {alert_key(INFRA_KEY)}"
        done.opened.append(github.create_issue(title, body, [INFRA_LABEL]))
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


def _case_body(verdicts: Sequence[Verdict], where: str) -> str:
    rows = "\n".join(f"- {v.metric}: {markdown_text(format_verdict(v))}" for v in verdicts)
    return f"Regressed {where}:\n\n{rows}\n"
