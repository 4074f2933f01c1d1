"""The libraries an environment of a dask/distributed release gets, and the releases daskbench cannot measure.

A resolver left alone gives dask 2023.1.0 today's pandas and numpy, with which it does not run. So every
environment built in full (not an overlay) gets **default pins** beside the spec's own, from two tables:

- **the era** (`ERA_LINES`): numpy, pandas, pyarrow and bokeh lines first released after the month of the
  release (dask's CalVer names it: 2023.6.0 is June 2023) are excluded, and xarray (CalVer too) is kept
  below the next month's; the libraries the release was made and tested with. A bisection takes the era of
  its good end for every step, so its steps differ in the bisected package alone where that resolves.
- **known incompatibilities** (`RULES`): what breaks although the packages' metadata allows it, each
  verified here; applied whatever the era (a user's ``--pin numpy<2`` on a new release brings ``pyarrow<26``).

A package the spec pins exactly keeps its pin (the era does not touch it; a rule it breaks is one line
before anything is built). The user's pins (``--pin NAME[SPEC]``, `parse_user_pin`) replace the defaults
of their package, and with a specifier its exact pin too; a bare ``--pin NAME`` drops the defaults alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from daskbench.envs.specs import EnvSpec, normalized
from daskbench.errors import DaskbenchError

#: The first month of each library line (first upload on PyPI), oldest first: the era table.
ERA_LINES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "numpy": (("1.24", "2022-12"), ("1.25", "2023-06"), ("1.26", "2023-09"), ("2.0", "2024-06"), ("2.1", "2024-08"),
              ("2.2", "2024-12"), ("2.3", "2025-06"), ("2.4", "2025-12"), ("2.5", "2026-06")),
    "pandas": (("1.5", "2022-09"), ("2.0", "2023-04"), ("2.1", "2023-08"), ("2.2", "2024-01"), ("2.3", "2025-06"),
               ("3.0", "2026-01"), ("3.1", "2026-10")),
    "pyarrow": (("11", "2023-01"), ("12", "2023-05"), ("13", "2023-08"), ("14", "2023-11"), ("15", "2024-01"),
                ("16", "2024-04"), ("17", "2024-07"), ("18", "2024-10"), ("19", "2025-01"), ("20", "2025-04"),
                ("21", "2025-07"), ("22", "2025-10"), ("23", "2026-01"), ("24", "2026-04"), ("25", "2026-07"),
                ("26", "2026-10")),
    "bokeh": (("3.1", "2022-12"), ("3.2", "2023-04"), ("3.3", "2023-06"), ("3.4", "2023-10"), ("3.5", "2024-03"),
              ("3.6", "2024-07"), ("3.7", "2024-09"), ("3.8", "2025-03"), ("3.9", "2025-08"), ("3.10", "2026-02"),
              ("4.0", "2026-07")),
}  # fmt: skip
#: The packages whose version names the era, in order: dask, else distributed (they move together).
ERA_OF = ("dask", "distributed")


@dataclass(frozen=True)
class Rule:
    """When ``when`` holds for the environment (a package's exact pin, or the upper bound of its pins),
    ``pin`` is added, because of ``why``."""

    when: str
    pin: str
    why: str


RULES = (
    Rule("dask<2023.2.0", "pandas<2", "import dask.dataframe fails on pandas 2 (no pandas.core.strings.StringMethods)"),
    Rule("numpy<2", "pyarrow<26", "pyarrow 26 needs numpy 2 at import, though its metadata allows numpy 1"),
    Rule(
        "distributed<2023.7.1", "pyarrow<13", "the p2p shuffle splits pyarrow 13's tables wrongly (fixed in 2023.7.1)"
    ),
    Rule("distributed<2023.4.0", "bokeh<3", "its dashboard and performance report (--evidence) need bokeh<3"),
    Rule(
        "distributed<2026.3.0", "bokeh<3.9", "its performance report (--evidence) needs bokeh's file.html, gone in 3.9"
    ),
    Rule("dask==2024.11.0", "dask-expr==1.1.17", "its one dask-expr is yanked: an installer takes it only when pinned"),
)


@dataclass(frozen=True)
class Pin:
    """One requirement added to an environment: ``name`` and its specifier (empty: no constraint), and why."""

    name: str
    specifier: str
    why: str

    @property
    def requirement(self) -> str:
        return f"{self.name}{self.specifier}"


def parse_user_pin(text: str, flag: str = "--pin") -> Pin:
    """``NAME``, ``NAME==VERSION`` or ``NAME<VERSION,>=VERSION`` (PEP 440 specifiers); one line otherwise."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        found = Requirement(text.strip())
    except InvalidRequirement:
        found = None
    if found is None or found.url or found.marker or found.extras:
        raise DaskbenchError(
            f"{flag} {text!r}: expected NAME or NAME with version specifiers, e.g. {flag} 'pandas<2.1'"
        )
    return Pin(normalized(found.name), str(found.specifier), f"{flag} {text.strip()}")


# -- the era ----------------------------------------------------------------------------------------


def era(pins: Mapping[str, str]) -> tuple[int, int] | None:
    """(year, month) of the release the pins name (dask's, else distributed's CalVer); None without one."""
    for name in ERA_OF:
        found = re.match(r"^(\d{4})\.(\d{1,2})\.", pins.get(name, ""))
        if found:
            return int(found.group(1)), int(found.group(2))
    return None


def era_pins(month: tuple[int, int]) -> list[Pin]:
    """The caps of a release made in ``month``: each library below its first line from a later month."""
    year, number = month
    said = f"the libraries of {year}.{number}"
    found = []
    for name, lines in ERA_LINES.items():
        later = next((line for line, first in lines if _month(first) > month), None)
        if later is not None:
            found.append(Pin(name, f"<{later}", said))
    following = (year + 1, 1) if number == 12 else (year, number + 1)
    found.append(Pin("xarray", f"<{following[0]}.{following[1]}", said))
    return found


def _month(text: str) -> tuple[int, int]:
    year, month = text.split("-")
    return int(year), int(month)


# -- the defaults of one environment ------------------------------------------------------------------


def default_pins(
    pins: Mapping[str, str], users: Iterable[Pin] = (), era_from: Mapping[str, str] | None = None
) -> list[Pin]:
    """The pins added to an environment whose exact pins are ``pins``: the era of ``era_from`` (default the
    pins' own) on what is not pinned, the rules that hold, and the user's pins replacing both for their
    packages. One line when a rule needs a version an exact pin does not have."""
    users = list(users)
    chosen = {pin.name for pin in users}
    month = era(era_from if era_from is not None else pins)
    found = [pin for pin in (era_pins(month) if month else []) if pin.name not in pins and pin.name not in chosen]
    for rule in RULES:
        pin = _applies(rule, pins, [*found, *users])
        if pin is None or pin.name in chosen:
            continue
        _check_exact(pin, pins)
        found.append(pin)
    return [*found, *(pin for pin in users if pin.specifier)]


def _applies(rule: Rule, pins: Mapping[str, str], added: list[Pin]) -> Pin | None:
    """The rule's pin when its condition holds for an exact pin, or for the upper bound of the pins added."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    condition, then = Requirement(rule.when), Requirement(rule.pin)
    name = normalized(condition.name)
    bound = pins.get(name) or _upper_bound(pin.specifier for pin in added if pin.name == name)
    if bound is None or not condition.specifier.contains(Version(bound), prereleases=True):
        return None
    return Pin(normalized(then.name), str(then.specifier), f"{rule.when}: {rule.why}")


def _upper_bound(specifiers: Iterable[str]) -> str | None:
    """The lowest ``<X`` among the specifiers, read as the version just below X (``<2`` holds what ``<2`` does)."""
    from packaging.version import Version

    caps = [Version(m.group(1)) for text in specifiers for m in re.finditer(r"<(?!=)\s*([0-9][0-9.]*)", text)]
    return _below(min(caps).release) if caps else None


def _below(release: tuple[int, ...]) -> str:
    """A version just below ``release``: ``2.1`` -> ``2.0.999``, ``2`` and ``2.0`` -> ``1.999``."""
    at = max((i for i, part in enumerate(release) if part > 0), default=None)
    if at is None:
        return "0"
    return ".".join(str(part) for part in (*release[:at], release[at] - 1, 999))


def _check_exact(pin: Pin, pins: Mapping[str, str]) -> None:
    """One line when the spec pins ``pin``'s package exactly to a version the rule excludes."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    have = pins.get(pin.name)
    if have is None or SpecifierSet(pin.specifier).contains(Version(have), prereleases=True):
        return
    raise DaskbenchError(
        f"{pin.name} {have} cannot run here: {pin.why}; give it a version with --pin '{pin.requirement}', "
        f"or build it anyway with --pin {pin.name}"
    )


# -- what cannot be measured ----------------------------------------------------------------------


#: The oldest releases the measuring side runs on, when daskbench's installed metadata does not say.
OLDEST = "2023.1.0"


def check_measurable(pins: Mapping[str, str]) -> None:
    """One line when the pins name a dask or distributed older than daskbench's measuring side runs on:
    which release, what breaks, the oldest that runs."""
    from packaging.version import InvalidVersion, Version

    for name in ERA_OF:
        version, oldest = pins.get(name), floor_of(name)
        try:
            too_old = version is not None and Version(version) < Version(oldest)
        except InvalidVersion:
            continue
        if too_old:
            raise DaskbenchError(
                f"{name} {version} cannot be measured here: daskbench's measuring side runs on {name}>={oldest} "
                f"(its declared floor); the oldest release that runs is {oldest}"
            )


def floor_of(name: str) -> str:
    """daskbench's declared floor of ``name`` (its installed metadata), else `OLDEST`."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        declared = metadata.requires("daskbench") or []
    except metadata.PackageNotFoundError:
        declared = []
    for text in declared:
        found = Requirement(text)
        if normalized(found.name) == name and not found.marker:
            lows = [spec.version for spec in found.specifier if spec.operator in (">=", "==", "~=")]
            if lows:
                return lows[0]
    return OLDEST


def requirements(pins: Iterable[Pin]) -> tuple[str, ...]:
    """One requirement per package, sorted: its specifiers together, of several upper bounds the lowest
    (``pyarrow<12`` and ``pyarrow<13`` are ``pyarrow<12``)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    by_name: dict[str, list[str]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).extend(str(spec) for spec in SpecifierSet(pin.specifier))
    found = []
    for name, specs in sorted(by_name.items()):
        caps = [spec for spec in specs if spec.startswith("<") and not spec.startswith("<=")]
        rest = sorted(set(specs) - set(caps))
        lowest = [min(caps, key=lambda spec: Version(spec[1:]))] if caps else []
        found.append(name + ",".join([*lowest, *rest]))
    return tuple(found)


def pinned(
    spec: EnvSpec, users: Sequence[Pin] = (), era_from: Mapping[str, str] | None = None, *, defaults: bool = True
) -> EnvSpec:
    """``spec`` with its extra requirements: the defaults (unless ``defaults`` is False: an overlay takes its
    packages as they are) and the user's pins, which replace an exact pin of their package too."""
    replaced = {pin.name for pin in users if pin.specifier}
    pins = {name: version for name, version in spec.pins if name not in replaced}
    added = default_pins(pins, users, era_from) if defaults else [pin for pin in users if pin.specifier]
    return replace(spec, pins=tuple(sorted(pins.items())), extra=requirements(added))
