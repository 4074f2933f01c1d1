"""ci/nightly --quick's check: the four nights made exactly the GitHub calls and summary the issue asks for.

Night 1 (no slowdown): nothing written; night 2 (slowdown): one issue opened and one
Markdown alert; night 3 (slowdown): a comment on that issue; night 4 (none): a comment
and the issue closed. Exits 1 with what differs.
"""

import json
import sys
from pathlib import Path


def main(calls_path: str, summary_path: str) -> int:
    calls = [json.loads(line) for line in Path(calls_path).read_text().splitlines() if line.strip()]
    writes = [(c["method"], c["path"]) for c in calls if c["method"] != "GET"]
    expected = [
        ("POST", "/repos/quick/nightly/issues"),
        ("POST", "/repos/quick/nightly/issues/1/comments"),
        ("POST", "/repos/quick/nightly/issues/1/comments"),
        ("PATCH", "/repos/quick/nightly/issues/1"),
    ]
    summary = Path(summary_path).read_text() if Path(summary_path).exists() else ""
    alerts = summary.count("### daskbench:")
    problems = []
    if writes != expected:
        problems.append(f"GitHub writes {writes}, expected {expected}")
    if alerts != 2 or "quick_planted" not in summary or "quick_steady" in summary:
        problems.append(f"job summary has {alerts} alerts (expected 2, both of quick_planted only):\n{summary}")
    for problem in problems:
        print(f"ci/nightly --quick: {problem}", file=sys.stderr)
    if not problems:
        print(f"ci/nightly --quick: alerts as expected: {len(calls)} GitHub calls, issue #1 opened, commented, closed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
