"""``daskbench pr BASE HEAD``: a pull request's base and head side by side, one comment kept up to date.

`daskbench.cli.pr` checks the inputs, then runs these in order:

- `sides`: each side resolved in the user's git checkout (a branch, tag, commit or folder), exported into
  the environment cache, and given an overlay environment holding that side's project (`side_python`;
  from each side's own requirements when they declare different dependencies);
- `measure`: both sides in one lockstep A/B group (`daskbench.lockstep`), each session in its side's
  source tree without the GitHub token; the group's runs tagged as a pull request's and judged;
- `deliver`: where it goes (stdout, a Markdown file, the job summary, the comment and the status), shared
  with ``daskbench merge``;
- `comment`: what a person reads: the `Outcome` (regressed, inconclusive, unchanged), the comment's
  Markdown, the head's commit status, and `publish`, which keeps the one comment and sets the status
  through `daskbench.github`.

The names below are the package's public face: code outside it imports them from ``daskbench.pr``.
"""

from __future__ import annotations

from daskbench.pr.comment import (
    COLUMNS,
    MARKER,
    STATUS_CONTEXT,
    Outcome,
    Page,
    check_url,
    comment_markdown,
    is_link,
    measured_text,
    publish,
    status_of,
)
from daskbench.pr.deliver import NO_TOKEN, SUMMARY_ENV, Target, client, deliver, run_link
from daskbench.pr.measure import (
    NUMBER_TAG,
    TAG,
    PrPlan,
    elapsed,
    judged,
    measure,
    new_group,
    tag_group,
)
from daskbench.pr.sides import Revision, dependency_changes, exported, resolve, side_python, uncommitted_note

__all__ = [
    "COLUMNS",
    "MARKER",
    "NO_TOKEN",
    "NUMBER_TAG",
    "STATUS_CONTEXT",
    "SUMMARY_ENV",
    "TAG",
    "Outcome",
    "Page",
    "PrPlan",
    "Revision",
    "Target",
    "check_url",
    "client",
    "comment_markdown",
    "deliver",
    "dependency_changes",
    "elapsed",
    "exported",
    "is_link",
    "judged",
    "measure",
    "measured_text",
    "new_group",
    "publish",
    "resolve",
    "run_link",
    "side_python",
    "status_of",
    "tag_group",
    "uncommitted_note",
]
