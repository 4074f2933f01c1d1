"""What a culprit hunt searches: the path from the last good run's packages to tonight's, as the runs recorded them.

Two runs differ in some packages (`bisect.plan.recorded_refs`: their versions, and the commits of those had from
git). dask and distributed are bisected when they changed (another package that changed too is held at the good
run's version and named); else the one package that changed. A package is moved commit by commit when a run had it
from git (both ends' commits in a mirror of the repository it was installed from, `envs.mirror`; an end that had a
release is its tag there), else release by release (from the index, as ``daskbench bisect`` lists them; dask and
distributed both by releases move together, one step pinning both).

When both moved commit by commit, the path interleaves their commits by commit date: each point holds both packages
as their main branches stood at that moment, as a nightly installed then would have, so the culprit is one commit
of one of them. Holding distributed at the good end while dask moved first broke on real history: between 2024.11.2
and 2024.12.0, distributed 2024.11.2 imports ``dask._task_spec._inline_recursively``, which dask removed on
2024-11-19 (dask/dask#11477), so no dask commit after it imported beside it and all were skipped
(`measure/culprit-replay --issue 11735`). When one moved by commits and the other by releases, the path moves dask
first, then distributed, and its pivot, the point where dask has moved and distributed not yet, is measured right
after step 0: which package it was, then the commit.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from daskbench import envs
from daskbench.bisect.plan import (
    PAIRED,
    BisectPlan,
    Candidate,
    differing_names,
    make_plan,
    recorded_pins,
    recorded_refs,
)
from daskbench.bisect.points import Point, Ref
from daskbench.errors import DaskbenchError
from daskbench.model import Run, recorded_commits
from daskbench.text import first_few, plural

#: Lists the releases of a package on the index, oldest first (`envs.available_versions`).
Listed = Callable[[str], list[str]]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Route:
    """The path a hunt bisects: its `BisectPlan` (every candidate, oldest first, the pivot), each candidate's
    packages (``points``, by label; ``good_point`` the good end's), the mirror of each package moved by commits
    (``repos``) and the repository URL it was recorded from (``urls``: links), the packages that differ but
    are held at the good run's versions (``held``), and what was said about it (``notes``)."""

    good: Run
    bad: Run
    plan: BisectPlan
    good_point: Point
    points: Mapping[str, Point]
    repos: Mapping[str, Path] = field(default_factory=dict)
    urls: Mapping[str, str] = field(default_factory=dict)
    held: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def point(self, candidate: Candidate) -> Point:
        return self.good_point if candidate == self.plan.good else self.points[candidate.label()]

    def describe(self) -> str:
        """``standin 1.0.dev0 at dfe232926227 .. standin 1.0.dev3 at 04f9f90c67c3: 3 commits``."""
        good, bad = (_point_text(self.good, self.good_point, self.plan.moving),
                     _point_text(self.bad, self.points[self.plan.candidates[-1].label()], self.plan.moving))  # fmt: skip
        kinds = {"commit" if c.commit else "release" for c in self.plan.candidates}
        kind = kinds.pop() if len(kinds) == 1 else "candidate"
        return f"{good} (good) .. {bad} (bad): {plural(len(self.plan.candidates), kind)}"


def _point_text(run: Run, point: Point, names: tuple[str, ...]) -> str:
    return ", ".join(f"{name} {run.versions.get(name, '?')} at {point[name].text()}" if point[name].commit
                     else f"{name} {point[name].version}" for name in names)  # fmt: skip


def make_route(good: Run, bad: Run, mirrors: Path, listed: Listed, say: Say) -> Route:
    """The route from ``good`` to ``bad``; one line when they recorded the same packages, or differ in several
    packages none of which is dask or distributed (nothing says which to bisect)."""
    ours, theirs = recorded_refs(good), recorded_refs(bad)
    differ = differing_names(ours, theirs)
    if not differ:
        raise DaskbenchError(
            f"runs {good.run_id[:8]} (good) and {bad.run_id[:8]} (bad) recorded the same versions and commits: "
            "nothing to bisect (the change is one daskbench does not record, or the machine)"
        )
    lacking = [name for name in differ if name not in recorded_pins(good) or name not in recorded_pins(bad)]
    if lacking:
        raise DaskbenchError(
            f"only one of runs {good.run_id[:8]} and {bad.run_id[:8]} recorded {first_few(lacking, 3)}"
        )
    moving = tuple(name for name in PAIRED if name in differ) or tuple(differ)
    if len(moving) > 1 and set(moving) != set(PAIRED):
        raise DaskbenchError(
            f"runs {good.run_id[:8]} and {bad.run_id[:8]} differ in {plural(len(moving), 'package')} "
            f"({first_few(list(moving), 4)}), none of them dask or distributed: bisect one with daskbench bisect"
        )
    held = tuple(name for name in differ if name not in moving)
    ends = {name: (_ref(good, name), _ref(bad, name)) for name in differ}
    segments, repos, urls = _segments(good, bad, moving, ends, mirrors, listed, say)
    plan, start, points = _walk(moving, ends, segments)
    notes = tuple(
        f"{name} differs too ({ends[name][0].text()} .. {ends[name][1].text()}): held at the good run's"
        for name in held
    )
    return Route(good, bad, plan, start, points, repos, urls, held, notes)


def _ref(run: Run, name: str) -> Ref:
    found = recorded_commits(run.tags).get(name)
    return Ref(recorded_pins(run)[name], found.commit if found else "")


Segment = list[tuple[Candidate, dict[str, Ref]]]


def _segments(
    good: Run,
    bad: Run,
    moving: tuple[str, ...],
    ends: Mapping[str, tuple[Ref, Ref]],
    mirrors: Path,
    listed: Listed,
    say: Say,
) -> tuple[list[Segment], dict[str, Path], dict[str, str]]:
    """The path's segments, one per package (commits), or one for dask and distributed both by releases."""
    urls = {name: url for name in moving if (url := _url(good, bad, name))}
    by_releases = [name for name in moving if name not in urls]
    if len(by_releases) == len(PAIRED) == len(moving):
        return [_releases(moving, ends, listed)], {}, {}
    segments, repos = [], {}
    for name in moving:
        if name in urls:
            repos[name] = envs.mirror(urls[name], mirrors, [ref.commit for ref in ends[name] if ref.commit], say)
            segments.append(_commits(name, repos[name], ends[name], (good, bad)))
        else:
            segments.append(_releases((name,), ends, listed))
    if len(segments) > 1 and not by_releases:
        return [_interleaved(segments, repos)], repos, urls
    return segments, repos, urls


def _interleaved(segments: list[Segment], repos: Mapping[str, Path]) -> Segment:
    """The commits of several packages in one line by commit date, each package's own order kept (a merge; on
    a tie the first package's, dask's, first). One ``git log`` a package."""
    dated = []
    for segment in segments:
        when = envs.commit_dates(repos[segment[0][0].package], [c.commit for c, _ in segment]) if segment else {}
        dated.append([(datetime.fromisoformat(when[c.commit]), c, moved) for c, moved in segment])
    return [(candidate, moved) for _, candidate, moved in heapq.merge(*dated, key=lambda step: step[0])]


def _url(good: Run, bad: Run, name: str) -> str:
    """The repository a package was had from git at either end (the bad end's first); empty: releases."""
    found = [commits[name].url for run in (bad, good) if name in (commits := recorded_commits(run.tags))]
    return next((url for url in found if url), "")


def _commits(name: str, repo: Path, ends: tuple[Ref, Ref], runs: tuple[Run, Run]) -> Segment:
    """The commits of ``name`` after good's up to bad's (first-parent), each moving ``name`` alone; an end that
    had a release is its tag's commit."""
    good, bad = (ref.commit or _tagged(repo, name, ref.version, run) for ref, run in zip(ends, runs, strict=True))
    commits = envs.commits_between(repo, good, bad)
    subjects = envs.commit_subjects(repo, good, bad)
    return [
        (Candidate(commit=commit, subject=subjects.get(commit, ""), package=name, repo=str(repo)),
         {name: Ref(ends[1].version if commit == bad else "", commit)})
        for commit in commits
    ]  # fmt: skip


def _tagged(repo: Path, name: str, version: str, run: Run) -> str:
    found = envs.release_commit(repo, version)
    if found is None:
        raise DaskbenchError(
            f"run {run.run_id[:8]} had {name} {version} from an index and the other run from git, but {repo} has no "
            f"tag {version} (or v{version}) to start its commits from"
        )
    return found


def _releases(moving: tuple[str, ...], ends: Mapping[str, tuple[Ref, Ref]], listed: Listed) -> Segment:
    """The releases after good's up to bad's (`bisect.plan.make_plan`: dask and distributed together)."""
    good = {name: ends[name][0].version for name in moving}
    bad = {name: ends[name][1].version for name in moving}
    plan = make_plan(good, bad, moving, {name: listed(name) for name in moving}, "the index")
    return [(candidate, {name: Ref(version) for name, version in candidate.pins}) for candidate in plan.candidates]


def _walk(
    moving: tuple[str, ...], ends: Mapping[str, tuple[Ref, Ref]], segments: list[Segment]
) -> tuple[BisectPlan, Point, dict[str, Point]]:
    """The plan, the good end's point and each candidate's: the one before it with the candidate's package(s)
    moved."""
    start = {name: refs[0] for name, refs in ends.items()}
    point: Point = dict(start)
    points: dict[str, Point] = {}
    candidates: list[Candidate] = []
    for segment in segments:
        for candidate, moved in segment:
            point = {**point, **moved}
            points[candidate.label()] = dict(point)
            candidates.append(candidate)
    pivot = len(segments[0]) - 1 if len(segments) > 1 and len(segments[0]) else None
    first = Candidate(tuple((name, start[name].text()) for name in moving))
    return BisectPlan(moving, first, tuple(candidates), pivot=pivot), start, points
