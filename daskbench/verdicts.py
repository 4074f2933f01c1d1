"""The judging records: a `Verdict` (one case and one metric judged) and a `Comparison` (a candidate run's
verdicts against a baseline, and what else differs), made by `daskbench.judge` and read by everything that
says or acts on a verdict (the formats, the report, alerts, pr, confirm, bisect); what a comparison lists as
differing between runs' versions (`versions_and_commits`).

As `daskbench.model`'s records do, each checks itself on construction (`daskbench.model.require`). Stdlib only
(and catalog, model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from daskbench import catalog
from daskbench.model import Run, recorded_commits, require

VerdictKind = Literal["regressed", "improved", "unchanged", "inconclusive", "new", "missing", "newly-failing", "fixed"]
VERDICTS: tuple[str, ...] = get_args(VerdictKind)


def versions_and_commits(run: Run) -> dict[str, str]:
    """A run's versions with, for each package it had from git, ``NAME commit`` and the commit's 12-char id:
    what ``compare`` lists as differing between runs."""
    commits = {f"{name} commit": found.short() for name, found in recorded_commits(run.tags).items()}
    return {**run.versions, **commits}


@dataclass(frozen=True)
class Verdict:
    """The judgement on one case and one metric: baseline vs candidate, effect and evidence.

    ``ratio`` is candidate / baseline (> 1 means more time, memory or money);
    ``ci_low``/``ci_high`` bound it at the stated confidence; ``floor`` is the minimum
    effect that counts (e.g. 1.10); ``score`` is the history mode's robust z-score of the
    candidate against the case's history (None in A/B mode).
    """

    fingerprint: str
    workload: str
    params: Mapping[str, Any]
    metric: str
    verdict: VerdictKind
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    floor: float | None = None
    baseline_values: tuple[float, ...] = ()
    candidate_values: tuple[float, ...] = ()
    cluster: Mapping[str, Any] = field(default_factory=dict)
    method: str = ""
    note: str = ""
    score: float | None = None

    def __post_init__(self) -> None:
        require(self.verdict in VERDICTS, "Verdict", "verdict", f"must be one of {VERDICTS}, got {self.verdict!r}")
        require(
            catalog.is_declared(self.metric), "Verdict", "metric", f"must be a declared metric, got {self.metric!r}"
        )

    @property
    def is_regression(self) -> bool:
        return self.verdict in ("regressed", "newly-failing")


@dataclass(frozen=True)
class Comparison:
    """The verdicts of one candidate run against a baseline, and what else differs.

    ``mode`` is ``ab`` (against named baseline runs) or ``history`` (each case against
    its own last good runs); the diffs map a key to (baseline, candidate) values.
    """

    mode: Literal["ab", "history"]
    baseline_runs: tuple[Run, ...]
    candidate_run: Run
    verdicts: tuple[Verdict, ...]
    version_diff: Mapping[str, tuple[str | None, str | None]]
    config_diff: Mapping[str, tuple[Any, Any]]
    host_diff: Mapping[str, tuple[Any, Any]]
    baseline_label: str = ""
    notes: tuple[str, ...] = ()
    #: Every run of the candidate side when it has several (an A/B group's sessions, a merged check's shards),
    #: ``candidate_run`` among them; empty: ``candidate_run`` alone.
    candidate_runs: tuple[Run, ...] = ()

    def __post_init__(self) -> None:
        require(self.mode in ("ab", "history"), "Comparison", "mode", f"must be 'ab' or 'history', got {self.mode!r}")
        require(not self.candidate_runs or self.candidate_run in self.candidate_runs, "Comparison", "candidate_runs",
                "must hold candidate_run when given")  # fmt: skip

    @property
    def candidates(self) -> tuple[Run, ...]:
        """The candidate side's runs: ``candidate_runs``, or ``candidate_run`` alone."""
        return self.candidate_runs or (self.candidate_run,)

    @property
    def regressions(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.is_regression)
