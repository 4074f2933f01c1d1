"""ci/nightly --quick's check: the three nights made exactly the GitHub calls and summary the issue asks for.

Night 1 (standin 1.0): nothing written. Night 2 (standin 1.0.1, a slowdown of the nightly session only):
a suspect, confirmed side by side against night 1's environment, not confirmed: nothing written. Night 3
(standin 1.1, 3x slower): confirmed side by side: one issue opened and one Markdown alert, both carrying
the A/B evidence (group, effect, interval, rounds, per-round ratios). Two side-by-side A/B groups must be
in the store (nights 2 and 3: neither fell back to a re-run). Exits 1 with what differs.
"""

import json
import sys
from pathlib import Path

from daskbench.judge.confirmed import OF as CONFIRM_OF
from daskbench.judge.confirmed import PINS as CONFIRM_PINS
from daskbench.store import Store

#: What the alert of a regression confirmed side by side says, in the summary and in the issue.
EVIDENCE = ("Confirmed side by side: A/B group `confirm-", "side by side: ", "rounds", "per-round ratios", "95% CI")


def main(calls_path: str, summary_path: str, db_path: str) -> int:
    calls = [json.loads(line) for line in Path(calls_path).read_text().splitlines() if line.strip()]
    writes = [(c["method"], c["path"]) for c in calls if c["method"] != "GET"]
    expected = [("POST", "/repos/quick/nightly/issues")]
    summary = Path(summary_path).read_text() if Path(summary_path).exists() else ""
    alerts = summary.count("### daskbench:")
    problems = []
    if writes != expected:
        problems.append(f"GitHub writes {writes}, expected {expected}")
    if alerts != 1 or "quick_planted" not in summary or "quick_steady" in summary:
        problems.append(f"job summary has {alerts} alerts (expected 1, of quick_planted only):\n{summary}")
    body = " ".join(str((c.get("body") or {}).get("body", "")) for c in calls if c["method"] == "POST")
    for said in EVIDENCE:  # read as rendered: Markdown's escapes and line wrapping left out
        if any(said not in " ".join(text.replace("\\", "").split()) for text in (summary, body)):
            problems.append(f"the alert does not carry the side-by-side evidence {said!r}")
    groups = {run.tags[CONFIRM_OF]: run.tags.get(CONFIRM_PINS, "") for run in Store(f"sqlite:///{db_path}").runs()
              if CONFIRM_OF in run.tags}  # fmt: skip
    if sorted(groups.values()) != ["standin==1.0", "standin==1.0"]:
        problems.append(f"expected two side-by-side confirmations against standin 1.0 (nights 2 and 3), found {groups}")
    for problem in problems:
        print(f"ci/nightly --quick: {problem}", file=sys.stderr)
    if not problems:
        print(f"ci/nightly --quick: alerts as expected: {len(calls)} GitHub calls, one issue opened (standin 1.1, "
              "confirmed side by side); the transient slowdown, not confirmed side by side, sent none")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
