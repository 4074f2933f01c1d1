"""ci/nightly --quick's check: the three nights made exactly the GitHub calls and summary the issue asks for.

Night 1 (the stand-in's first commit): nothing written. Night 2 (a harmless commit, a slowdown of the nightly
session only): a suspect, confirmed side by side against night 1's environment, not confirmed: nothing written.
Night 3 (two commits after the one that made work() 3x slower): confirmed side by side: one issue opened and one
Markdown alert, both carrying the A/B evidence (group, effect, interval, rounds, per-round ratios); then the
culprit hunt, unattended: one comment on that issue naming the planted commit (its id, its title, its pull
request) with the step table, and the same in the job summary. Two side-by-side A/B groups must be in the store
(nights 2 and 3: neither fell back to a re-run), against the first commit. Exits 1 with what differs.

    python -m ci.quick.check_alerts CALLS.jsonl SUMMARY.md NIGHTLY.db STANDIN_REPO
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from ci.quick.standin import COMMITS
from daskbench.judge.confirmed import OF as CONFIRM_OF
from daskbench.judge.confirmed import PINS as CONFIRM_PINS
from daskbench.store import Store

#: What the alert of a regression confirmed side by side says, in the summary and in the issue.
EVIDENCE = ("Confirmed side by side: A/B group `confirm-", "side by side: ", "rounds", "per-round ratios", "95% CI")
#: The commit (index in `COMMITS`) that planted the slowdown, and what the culprit's comment must say of it.
PLANTED = 2
CULPRIT = ("First bad commit: standin", COMMITS[PLANTED][0], "| step | candidate | verdict |", "(the confirmation)")


def _rendered(text: str) -> str:
    """Markdown read as rendered: its escapes and line wrapping left out."""
    return " ".join(text.replace("\\", "").replace("\u200b", "").split())


def _alert_problems(calls: list[dict], summary: str, planted: str) -> list[str]:
    writes = [(c["method"], c["path"]) for c in calls if c["method"] != "GET"]
    expected = [("POST", "/repos/quick/nightly/issues"), ("POST", "/repos/quick/nightly/issues/1/comments")]
    problems = []
    if writes != expected:
        problems.append(f"GitHub writes {writes}, expected {expected}")
    alerts = len(re.findall(r"^### daskbench: \d+ regressions? in run", summary, re.M))
    if alerts != 1 or "quick_planted" not in summary or "quick_steady" in summary:
        problems.append(f"job summary has {alerts} alerts (expected 1, of quick_planted only):\n{summary}")
    bodies = [str((c.get("body") or {}).get("body", "")) for c in calls if c["method"] == "POST"]
    issue, comment = [*bodies, "", ""][:2]
    for said in EVIDENCE:
        if any(said not in _rendered(text) for text in (summary, issue)):
            problems.append(f"the alert does not carry the side-by-side evidence {said!r}")
    for said in (*CULPRIT, planted[:12]):
        if any(_rendered(said) not in _rendered(text) for text in (summary, comment)):
            problems.append(f"the culprit's comment does not say {said!r}:\n{comment}")
    return problems


def main(calls_path: str, summary_path: str, db_path: str, repo: str) -> int:
    calls = [json.loads(line) for line in Path(calls_path).read_text().splitlines() if line.strip()]
    summary = Path(summary_path).read_text() if Path(summary_path).exists() else ""
    commits = subprocess.run(["git", "-C", repo, "rev-list", "--reverse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.split()  # fmt: skip
    problems = _alert_problems(calls, summary, commits[PLANTED])
    groups = {run.tags[CONFIRM_OF]: run.tags.get(CONFIRM_PINS, "") for run in Store(f"sqlite:///{db_path}").runs()
              if CONFIRM_OF in run.tags}  # fmt: skip
    good = f"standin==1.0.dev0 (git {commits[0][:12]})"
    if sorted(groups.values()) != [good, good]:
        problems.append(f"expected two side-by-side confirmations against {good} (nights 2 and 3), found {groups}")
    for problem in problems:
        print(f"ci/nightly --quick: {problem}", file=sys.stderr)
    if not problems:
        print(f"ci/nightly --quick: alerts as expected: {len(calls)} GitHub calls; one issue opened (night 3, confirmed "
              "side by side), the transient slowdown sent none")  # fmt: skip
        print(f"ci/nightly --quick: the culprit named on the issue, unattended: {commits[PLANTED][:12]} "
              f"{COMMITS[PLANTED][0]}")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
