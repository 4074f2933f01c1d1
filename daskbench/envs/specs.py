"""What an environment holds: an `EnvSpec`, the exact ``name==version`` pins plus this daskbench.

`spec_from_run` turns a run's recorded versions (``Run.versions``: dask, distributed, numpy, ...)
into an `EnvSpec`, with this daskbench installed the way it is installed here (its PEP 610 record: ``-e PATH``
for an editable checkout, a pinned VCS commit, an archive URL, else ``daskbench==VERSION``). `spec_from_pins`
makes one from any version set, and ``overrides`` replace recorded versions (a bisection's "the good run's
versions but dask X").
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from daskbench.errors import DaskbenchError
from daskbench.model import Run, recorded_commits

#: Recorded names that are not pins: the interpreter, and daskbench (this one is installed instead).
NOT_PINNED = frozenset({"python", "daskbench"})
#: Packages released in lockstep with another (each dask-expr requires one dask exactly): when an override
#: changes the package, the recorded version of its companion is dropped and the resolver picks the match.
COMPANIONS = {"dask": ("dask-expr",)}
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")


def normalized(name: str) -> str:
    """A package name as the index compares it (PEP 503): ``Dask_ML`` -> ``dask-ml``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def interpreter_tag() -> str:
    """The interpreter environments are built on (this one): implementation, version, machine."""
    return f"{sys.implementation.name}-{platform.python_version()}-{platform.machine()}"


@dataclass(frozen=True)
class EnvSpec:
    """What an environment holds: exact pins, this daskbench's install arguments (empty: without it),
    the interpreter it is built on; ``source`` says where the pins came from (for messages only), and
    ``recorded_python`` the interpreter version the record names (a note when it differs)."""

    pins: tuple[tuple[str, str], ...]
    daskbench: tuple[str, ...] = ()
    source: str = "the version set"
    recorded_python: str | None = None
    python: str = field(default_factory=interpreter_tag)
    overlay: str | None = None  # an overlay over this site-packages folder (`build(inherit=True)`)
    sources: tuple[str, ...] = ()  # source trees installed too: `exported` commits of a git checkout
    extra: tuple[str, ...] = ()  # requirements beside the pins (`envs.known`: defaults and --pin), e.g. pandas<2

    def lines(self) -> list[str]:
        """The identity of the environment, one fact a line: the sorted pins, the extra requirements, the
        source trees, daskbench, the interpreter (and, for an overlay, the site-packages it sees)."""
        pins = sorted(f"{normalized(name)}=={version}" for name, version in self.pins)
        extra = [f"also: {requirement}" for requirement in self.extra]
        sources = [f"source: {tree}" for tree in self.sources]
        overlay = [f"overlay of: {self.overlay}"] if self.overlay else []
        daskbench = f"daskbench: {' '.join(self.daskbench) or 'not installed'}"
        return [*pins, *extra, *sources, daskbench, f"python: {self.python}", *overlay]

    def key(self) -> str:
        """A stable hash of `lines`: the name of the environment's folder."""
        return hashlib.sha256("\n".join(self.lines()).encode()).hexdigest()[:16]

    def requirements(self) -> list[str]:
        """The installer's arguments: one ``name==version`` per pin, the extra requirements, the source trees,
        then daskbench's."""
        pins = (f"{name}=={version}" for name, version in self.pins)
        return [*pins, *self.extra, *self.sources, *self.daskbench]

    def describe(self) -> str:
        """``dask 2026.7.0, distributed 2026.7.0, ...`` (every pin), then each source tree's folder name."""
        return ", ".join([*(f"{name} {version}" for name, version in self.pins), *map(_source_name, self.sources)])


def _source_name(source: str) -> str:
    """A source tree's folder name, or ``dask at 1a2b3c4d5e6f`` for a requirement from git (`git_sources`)."""
    name, at, url = source.partition(" @ git+")
    return f"{name} at {url.rpartition('@')[2][:12]}" if at else Path(source).name


def parse_pins(text: str, flag: str) -> dict[str, str]:
    """``dask==2026.7.0,distributed==2026.7.0`` -> ``{"dask": "2026.7.0", ...}``; one line per bad item."""
    pins: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        found = _PIN.match(item)
        if found is None:
            raise DaskbenchError(f"{flag} {item!r}: expected NAME==VERSION, e.g. {flag} dask==2026.7.0")
        pins[normalized(found.group(1))] = found.group(2)
    if not pins:
        raise DaskbenchError(f"{flag} {text!r} names no package; e.g. {flag} dask==2026.7.0,distributed==2026.7.0")
    return pins


def parse_names(text: str, flag: str) -> list[str]:
    """``standin,dask`` -> normalized names; one line when it names none."""
    names = [normalized(part.strip()) for part in text.split(",") if part.strip()]
    if not names:
        raise DaskbenchError(f"{flag} {text!r} names no package; e.g. {flag} dask,distributed")
    return names


def spec_from_run(
    run: Run,
    *,
    overrides: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
    with_daskbench: bool = True,
) -> EnvSpec:
    """The environment of ``run``'s recorded versions (``only`` those names, if given), with
    ``overrides`` replacing or adding versions, plus this daskbench unless ``with_daskbench`` is False."""
    recorded = {normalized(name): version for name, version in run.versions.items()}
    pins = {name: version for name, version in recorded.items() if name not in NOT_PINNED}
    source = f"run {run.run_id[:8]}"
    if only is not None:
        pins = _narrowed(pins, [normalized(name) for name in only], source)
    changed = {normalized(name): version for name, version in (overrides or {}).items()}
    for name in changed:  # a companion pinned to the recorded version of a package that changes goes with it
        for companion in COMPANIONS.get(name, ()):
            if companion not in changed:
                pins.pop(companion, None)
    pins.update(changed)
    if not pins:
        raise DaskbenchError(f"{source} recorded no package versions to rebuild; choose another run (daskbench runs)")
    daskbench = daskbench_requirement() if with_daskbench else ()
    sources = git_sources(run, [name for name in pins if name not in changed])
    kept = tuple(sorted((name, version) for name, version in pins.items() if name not in sources))
    return EnvSpec(kept, daskbench, source, recorded.get("python"), sources=tuple(sources.values()))


def git_sources(run: Run, names: Collection[str]) -> dict[str, str]:
    """The requirements that install ``names`` as ``run`` had them from git (``NAME @ git+URL@COMMIT``, by
    name), for those it recorded a commit and repository of (`model.recorded_commits`): a version such as
    ``2024.8.1.dev12+g1a2b3c4`` is on no index. A repository recorded with a password (shown ``***``) is left
    out: it cannot be cloned again from the record."""
    found = recorded_commits(run.tags)
    return {
        name: f"{name} @ git+{commit.url}@{commit.commit}"
        for name in names
        if (commit := found.get(name)) is not None and commit.url and "***" not in commit.url
    }


def _narrowed(pins: Mapping[str, str], names: list[str], source: str) -> dict[str, str]:
    """``pins`` of ``names`` only; one line naming a name the record does not have."""
    for name in names:
        if name not in pins:
            raise DaskbenchError(f"{source} recorded no version of {name}; it recorded {', '.join(sorted(pins))}")
    return {name: pins[name] for name in names}


def spec_from_pins(
    pins: Mapping[str, str],
    *,
    with_daskbench: bool = True,
    source: str = "the version set",
    sources: tuple[str, ...] = (),
) -> EnvSpec:
    """The environment of an arbitrary version set (e.g. `parse_pins` of ``dask==X,distributed==X``),
    plus ``sources``: source trees (`exported` commits) or requirements to install; pins may be empty when there are
    some, or when daskbench is (an environment of daskbench and its dependencies alone)."""
    if not pins and not sources and not with_daskbench:
        raise DaskbenchError("an environment needs at least one NAME==VERSION")
    cleaned = sorted((normalized(name), version) for name, version in pins.items() if normalized(name) != "daskbench")
    daskbench = daskbench_requirement() if with_daskbench else ()
    return EnvSpec(tuple(cleaned), daskbench, source, sources=sources)


def daskbench_requirement() -> tuple[str, ...]:
    """The installer arguments that install this daskbench again, the way it is installed here."""
    record, version = install_record(
        "so an environment cannot get it; install it (pip install -e .) or build without it (--without-daskbench)"
    )
    return requirement_from_record(record, version)


def install_record(fix: str) -> tuple[Mapping[str, object] | None, str]:
    """This daskbench's PEP 610 install record (``direct_url.json``; None: from an index) and version;
    ``fix`` ends the one line said when daskbench is not installed as a package."""
    # A checkout's own daskbench.egg-info (left by a setuptools build) is found first when python runs from
    # the checkout, and holds no install record: the installed distribution's record is the one meant.
    found = list(metadata.distributions(name="daskbench"))
    if not found:
        raise DaskbenchError(f"daskbench is not installed as a package here, {fix}")
    records = [(_record(dist), dist.version) for dist in found]
    return next((pair for pair in records if pair[0] is not None), records[0])


def _record(dist: metadata.Distribution) -> Mapping[str, object] | None:
    try:
        record = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        record = None
    return record if isinstance(record, Mapping) else None


def requirement_from_record(
    record: Mapping[str, object] | None, version: str, *, editable: bool = True
) -> tuple[str, ...]:
    """Install arguments from a PEP 610 record (``direct_url.json``; None: from an index): ``-e PATH``
    for an editable local checkout (unless ``editable`` is False), ``daskbench @ vcs+URL@commit``,
    ``daskbench @ URL``, or the version."""
    if record is None or not record.get("url"):
        return (f"daskbench=={version}",)
    url = str(record["url"])
    dir_info = record.get("dir_info")
    if editable and isinstance(dir_info, Mapping) and dir_info.get("editable") and urlsplit(url).scheme == "file":
        return ("-e", unquote(urlsplit(url).path))
    vcs = record.get("vcs_info")
    if isinstance(vcs, Mapping):
        revision = vcs.get("commit_id") or vcs.get("requested_revision")
        url = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
    if record.get("subdirectory"):
        url += f"#subdirectory={record['subdirectory']}"
    return (f"daskbench @ {url}",)
