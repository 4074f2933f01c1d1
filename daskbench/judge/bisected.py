"""What a stored bisection found: the tags ``daskbench bisect`` writes on its steps' runs, read back.

A bisection (`daskbench.bisect.search`) tags both runs of each step's lockstep group with the bisection's
name, the step's number, candidate and verdict, and its two ends. `culprits` reads the steps of every
bisection whose bad end is a given run and names its first bad candidate by the rule of a binary search:
the bad end moves to each step found ``regressed`` and the good end to each step found unchanged, so the
**first bad candidate is the regressed step with the highest number**, and the newest good one the
unchanged (or improved) step with the highest number. This holds for releases and commits alike, with
no ordering of versions; for a bisection still under way it is the best bound found so far.
Read by the alert (`culprit_line`, `daskbench.cli.alert`) and the report (`daskbench.report.content`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from daskbench.judge.compare import AB_GROUP, AB_SIDE
from daskbench.store import Store

TAG, STEP, VERSION, ATTEMPT, VERDICT, MINUTES = (
    "bisect",
    "bisect_step",
    "bisect_version",
    "bisect_attempt",
    "bisect_verdict",
    "bisect_minutes",
)
GOOD_TAG, BAD_TAG, PINS = "bisect_good", "bisect_bad", "bisect_pins"
#: A commit step's tags: the bisected checkout, the full commit id and its subject; and the checkout of the package
#: released with it that each step took its partner from (``--other-repo``), when one was given.
REPO_TAG, COMMIT, SUBJECT = "bisect_repo", "bisect_commit", "bisect_subject"
OTHER_REPO_TAG = "bisect_other_repo"
_GOOD = ("unchanged", "improved")


@dataclass(frozen=True)
class Culprit:
    """A bisection's first bad candidate (``first_bad``: ``standin 1.5`` or a commit id and subject, user
    text) with its step and A/B group, and the newest good candidate (empty: none yet)."""

    bisection: str
    first_bad: str
    step: str
    group: str
    newest_good: str = ""

    def line(self) -> str:
        """``bisection b: first bad standin 1.5 (step 2, daskbench compare --group b-2); newest good standin 1.4``."""
        good = f"; newest good {self.newest_good}" if self.newest_good else ""
        return (
            f"bisection {self.bisection}: first bad {self.first_bad} (step {self.step}, "
            f"daskbench compare --group {self.group}){good}"
        )


def described(tags: Mapping[str, str]) -> str:
    """A step's candidate as its tags name it: ``standin 1.5``, or ``1a2b3c4d5e6f the subject``."""
    if tags.get(COMMIT):
        return f"{tags[COMMIT][:12]} {tags.get(SUBJECT, '')}".rstrip()
    pins = [item.replace("==", " ", 1) for item in tags.get(PINS, "").split(",") if item]
    return ", ".join(pins) or tags.get(VERSION, "?")


def culprits(store: Store, candidate: str) -> tuple[Culprit, ...]:
    """Per bisection whose bad end is run ``candidate`` (its id, or a prefix of at least 4 characters as
    ``--bad`` was given), its first bad candidate so far; bisections with no regressed step are left out."""
    steps: dict[str, dict[int, Mapping[str, str]]] = {}
    for run in reversed(store.runs()):  # oldest first: a step's last attempt wins
        tags, end = run.tags, run.tags.get(BAD_TAG, "")
        if TAG in tags and tags.get(AB_SIDE) == "A" and len(end) >= 4 and candidate.startswith(end):
            steps.setdefault(tags[TAG], {})[int(tags.get(STEP, "-1"))] = tags
    return tuple(found for name, by_number in sorted(steps.items()) if (found := _culprit(name, by_number)))


def _culprit(name: str, by_number: Mapping[int, Mapping[str, str]]) -> Culprit | None:
    """The last regressed step of one bisection (None: none yet) and its last good one."""
    bad = [number for number, tags in by_number.items() if tags.get(VERDICT) == "regressed"]
    if not bad:
        return None
    good = [number for number, tags in by_number.items() if tags.get(VERDICT) in _GOOD]
    tags = by_number[max(bad)]
    newest_good = described(by_number[max(good)]) if good else ""
    return Culprit(name, described(tags), str(max(bad)), tags.get(AB_GROUP, ""), newest_good)


def culprit_line(store: Store, candidate: str) -> str:
    """The first bad release or commit a bisection of ``candidate`` (``--bad`` its run id or a prefix of it)
    named, as one line with its step (`Culprit.line`); empty when no bisection of it has a regressed step."""
    found = culprits(store, candidate)
    return found[0].line() if found else ""
