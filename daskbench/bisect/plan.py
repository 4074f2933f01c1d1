"""What a bisection searches: the candidates between a good and a bad end, oldest first.

Releases (`make_plan`): the packages whose versions differ between the two ends (`moving_packages`;
dask and distributed move together) and their releases between the two on the index
(`daskbench.envs.available_versions`). Commits (`commit_plan`): the commits of a local git checkout after
good up to bad, first-parent, each installed from its source tree (`daskbench.envs.exported`).
`daskbench.bisect.search` runs the search over a `BisectPlan`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from daskbench import envs
from daskbench.errors import DaskbenchError
from daskbench.model import Run, recorded_commits
from daskbench.text import first_few, plural, terminal_safe

if TYPE_CHECKING:
    from packaging.version import Version

#: How much of a commit's subject a step line shows.
SUBJECT_WIDTH = 36
#: Packages that move together: when both differ, a step pins both to one version.
PAIRED = ("dask", "distributed")

Pins = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Candidate:
    """One point of a bisection: the versions of the bisected packages (a release, or a dask+distributed
    pair), or a commit of a git checkout (its full id, and its subject as the commit has it; ``package`` and
    ``repo`` name the package and checkout when a bisection moves more than one: ``daskbench culprit``)."""

    pins: Pins = ()
    commit: str = ""
    subject: str = ""
    package: str = ""
    repo: str = ""

    def label(self) -> str:
        """``1.5`` when every package has one version, else ``dask==X,distributed==Y``; a commit's 12-char id."""
        if self.commit:
            return self.commit[:12]
        versions = {version for _, version in self.pins}
        return versions.pop() if len(versions) == 1 else ",".join(f"{n}=={v}" for n, v in self.pins)

    def describe(self) -> str:
        """``standin 1.5``, ``dask 2026.7.0, distributed 2026.7.0``, or ``1a2b3c4d5e6f the subject``
        (escaped, cut to `SUBJECT_WIDTH`)."""
        if self.commit:
            package = f"{self.package} " if self.package else ""
            return f"{package}{self.label()} {shortened(self.subject, SUBJECT_WIDTH)}"
        return ", ".join(f"{name} {version}" for name, version in self.pins)


def shortened(text: str, width: int) -> str:
    """``text`` inert on a terminal, cut to ``width`` characters (``...`` ends a cut one)."""
    safe = terminal_safe(text)
    return safe if len(safe) <= width else safe[: width - 3] + "..."


@dataclass(frozen=True)
class BisectPlan:
    """What is bisected: the moving packages, the good point and the candidates after it, oldest first
    (the last is the bad end), and notes (a release of one of a pair only, skipped). ``pivot``: a candidate
    measured first after step 0 (where one package has moved to the bad end's and the next not yet: which
    package it was), then the binary search goes on from there."""

    moving: tuple[str, ...]
    good: Candidate
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    pivot: int | None = None

    def max_steps(self) -> int:
        """Step 0 (the bad end), the pivot and the binary search over the rest."""
        return 1 + (self.pivot is not None) + math.ceil(math.log2(len(self.candidates)))


# -- what is bisected -------------------------------------------------------------------------


def recorded_pins(run: Run) -> dict[str, str]:
    """A run's recorded versions as pins (normalized names; python and daskbench left out)."""
    found = {envs.normalized(name): version for name, version in run.versions.items()}
    return {name: version for name, version in found.items() if name not in envs.NOT_PINNED}


def recorded_refs(run: Run) -> dict[str, str]:
    """`recorded_pins` with the commit of each package the run had from git after its version (``1.0 @ <id>``):
    two runs of one version at other commits differ (`differing_names` compares them as text)."""
    commits = recorded_commits(run.tags)
    pins = recorded_pins(run)
    return {
        name: f"{version} @ {commits[name].commit}" if name in commits else version for name, version in pins.items()
    }


def moving_packages(good: Mapping[str, str], bad: Mapping[str, str], only: Collection[str] | None) -> tuple[str, ...]:
    """The packages to bisect: those that differ (or ``only`` these); one line when there is nothing
    to bisect, or more than one package (dask with distributed counts as one)."""
    differ = differing_names(good, bad)
    if not differ:
        raise DaskbenchError(f"--good and --bad name the same versions ({_shown(good)}): nothing to bisect")
    chosen = sorted(envs.normalized(name) for name in only) if only else differ
    for name in chosen:
        if name not in good or name not in bad:
            side = "--good" if name not in good else "--bad"
            raise DaskbenchError(f"{side} has no version of {name}; give it as a pin, e.g. {side} {name}==VERSION")
        if name not in differ:
            raise DaskbenchError(f"--only {name}: it is {good[name]} at both ends; they differ in {', '.join(differ)}")
    if len(chosen) > 1 and set(chosen) != set(PAIRED):
        raise DaskbenchError(
            f"good and bad differ in {plural(len(chosen), 'package')} ({first_few(chosen, 4)}); "
            "bisect one at a time: --only NAME (dask and distributed move as one) or pins "
            "that differ in one"
        )
    return tuple(chosen)


def differing_names(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """The package names whose versions differ between two version sets (one lacking a name differs), sorted."""
    return sorted(name for name in {*a, *b} if not _same(a.get(name), b.get(name)))


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and envs.same_version(a, b)


def _shown(pins: Mapping[str, str]) -> str:
    return first_few([f"{name}=={version}" for name, version in sorted(pins.items())], 4)


def make_plan(
    good: Mapping[str, str],
    bad: Mapping[str, str],
    moving: tuple[str, ...],
    listed: Mapping[str, list[str]],
    where: str,
) -> BisectPlan:
    """The candidates strictly after good up to bad, from each moving package's ``listed`` versions
    (oldest first); one line for an end the index (``where``) does not have, or a bad not newer."""
    for name in moving:
        for flag, end in (("--good", good), ("--bad", bad)):
            _check_listed(name, end[name], listed[name], flag, where)
        if _key(bad[name]) <= _key(good[name]):
            raise DaskbenchError(f"--bad {name}=={bad[name]} is not newer than --good {name}=={good[name]}")
    first = moving[0]
    low, high = _key(good[first]), _key(bad[first])
    between = {name: [v for v in listed[name] if low < _key(v) < high] for name in moving}
    common = [v for v in between[first] if all(_has(between[name], v) for name in moving)]
    notes = tuple(
        f"{name} {v} has no matching {_other(moving, name)} release: skipped"
        for name in moving
        for v in between[name]
        if not _has(common, v)
    )
    candidates = [Candidate(tuple((name, v) for name in moving)) for v in common]
    ends = (Candidate(tuple((name, good[name]) for name in moving)), Candidate(tuple((n, bad[n]) for n in moving)))
    return BisectPlan(moving, ends[0], (*candidates, ends[1]), notes)


def _check_listed(name: str, version: str, listed: list[str], flag: str, where: str) -> None:
    if not _has(listed, version):
        offers = f"it offers {first_few(listed[::-1], 5)}" if listed else "it has no version of it"
        raise DaskbenchError(f"{flag} {name}=={version} is not on the index (asked {where}); {offers}")


def _has(versions: list[str], version: str) -> bool:
    return any(envs.same_version(v, version) for v in versions)


def _key(version: str) -> Version:
    from packaging.version import Version

    return Version(version)


def _other(moving: tuple[str, ...], name: str) -> str:
    return "/".join(other for other in moving if other != name)


def commit_plan(repo: Path, good_ref: str, bad_ref: str) -> BisectPlan:
    """The commits of ``repo`` after ``good_ref`` up to ``bad_ref`` (first-parent, oldest first); one line
    for an unknown ref, identical ends, a good that is not an ancestor of bad, or a bad whose tree is no package."""
    good = envs.resolve_commit(repo, good_ref, "--good")
    bad = envs.resolve_commit(repo, bad_ref, "--bad")
    if good == bad:
        raise DaskbenchError(
            f"--good {good_ref} and --bad {bad_ref} are the same commit ({good[:12]}): nothing to bisect"
        )
    commits = envs.commits_between(repo, good, bad)
    if not any(envs.has_file(repo, bad, name) for name in ("pyproject.toml", "setup.py")):
        raise DaskbenchError(
            f"--bad {bad_ref}: {repo} has no pyproject.toml or setup.py there: not a package's checkout; give a "
            "checkout of dask or distributed (git clone https://github.com/dask/dask)"
        )
    subjects = envs.commit_subjects(repo, good, bad)
    candidates = tuple(Candidate(commit=commit, subject=subjects.get(commit, "")) for commit in commits)
    return BisectPlan((repo.name,), Candidate(commit=good, subject=envs.commit_subject(repo, good)), candidates)
