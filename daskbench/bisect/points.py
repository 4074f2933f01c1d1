"""A point of a bisection: each moving package at a release or at a commit of its checkout, and the environment
that holds it.

Both ``daskbench bisect --repo`` and ``daskbench culprit`` move dask and distributed together: a step's
environment holds each package of its `Point` (a release pinned, or a commit exported from its checkout or mirror,
`envs.exported`), built once (`point_python`) and checked to import, so a commit that does not build or import is
an `envs.InstallFailed` the bisection skips, as ``git bisect skip`` does. `partner` is the rule of ``bisect
--repo``: at a commit of one package, the other at a matching commit of its own checkout (``--other-repo``: the
last one committed at or before it), or at the release the commit's tree pins (dask's ``distributed`` extra pins
``distributed == 2024.8.0``; distributed requires ``dask == 2024.8.0``), or else at the release named like the tag
the commit follows.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from daskbench import envs
from daskbench.errors import DaskbenchError

#: Packages released in lockstep, each named by the other's version: the fallback of `partner`.
LOCKSTEP = {"dask": "distributed", "distributed": "dask"}


@dataclass(frozen=True)
class Ref:
    """A package at one point of the path: a release (``version``), or a commit of its repository."""

    version: str
    commit: str = ""

    def text(self) -> str:
        """``2024.8.0``, or a commit's 12-character id."""
        return self.commit[:12] if self.commit else self.version


Point = Mapping[str, Ref]


def point_python(
    point: Point,
    repos: Mapping[str, Path],
    described: str,
    build: envs.BuildOptions,
    *,
    inherit: bool = True,
    era_from: Mapping[str, str] | None = None,
    say: Callable[[str], None],
) -> str:
    """The interpreter of an environment holding ``point``'s packages (releases pinned, commits exported from
    ``repos`` and built from source), each checked to import. With ``inherit`` an overlay over this interpreter;
    else with their dependencies and this daskbench, the libraries of ``era_from``'s era (`envs.known`).
    ``build``: how environments are built (`envs.BuildOptions`). `envs.InstallFailed` when it does not build
    or import."""
    pins = {name: ref.version for name, ref in point.items() if not ref.commit}
    cache = build.cache
    trees = tuple(
        str(envs.exported(repos[name], ref.commit, cache)) for name, ref in sorted(point.items()) if ref.commit
    )
    spec = envs.spec_from_pins(pins, with_daskbench=not inherit, source=described, sources=trees)
    python = str(envs.build(spec, build, say=say, inherit=inherit, era_from=era_from))
    check_imports(python, sorted(point))
    return python


def check_imports(python: str, names: Sequence[str]) -> None:
    """One `envs.InstallFailed` line when an environment cannot import the packages moved in it."""
    modules = [name.replace("-", "_") for name in names]
    code = "; ".join(f"import {module}" for module in modules)
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DaskbenchError(f"cannot run {python} to import {', '.join(modules)}: {exc}") from None
    if done.returncode != 0:
        raise envs.InstallFailed(f"it does not import ({envs.first_error(done.stderr)})")


@dataclass(frozen=True)
class Partner:
    """What `partner` found for one commit: the other packages' refs, and how (for the step's progress line)."""

    refs: Mapping[str, Ref]
    how: str


def partner(repo: Path, commit: str, tree: Path, other: tuple[str, Path] | None) -> Partner:
    """The other package(s) at ``repo``'s ``commit`` (its exported ``tree``): ``other``'s checkout (name, path)
    at its last commit at or before ``commit``'s, else the releases the tree pins exactly (`envs.exact_pins`),
    else, for dask or distributed, the other at the release named like the tag the commit follows; none: the
    tree alone."""
    if other is not None:
        name, checkout = other
        found = envs.last_commit_at(checkout, envs.commit_date(repo, commit))
        if found is not None:
            return Partner({name: Ref("", found)}, f"its last commit at or before {commit[:12]}'s date")
    pinned = envs.exact_pins(tree)
    if other is not None:
        pinned = {name: version for name, version in pinned.items() if name == other[0]}
    if pinned:
        return Partner({name: Ref(version) for name, version in pinned.items()}, "the release the tree pins")
    own, tag = envs.project_name(tree), envs.followed_tag(repo, commit)
    if own in LOCKSTEP and tag:
        return Partner({LOCKSTEP[own]: Ref(tag.removeprefix("v"))}, f"the release named like the tag {tag}")
    return Partner({}, "")
