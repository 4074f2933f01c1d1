"""What a stored side-by-side confirmation was: the tags ``daskbench confirm`` writes on its runs, read back.

A confirmation (`daskbench.confirm`) tags both runs of its lockstep group with the candidate run it
confirms (`OF`), the good run whose environment was side A (`GOOD`), the versions of the packages that
differ on each side (`PINS`, the good run's; `TONIGHT`, the candidate's; ``name==version`` joined by
commas) and the floors it was judged with (`FLOORS`, JSON). `stored` reads one group back for the alert,
`of_candidate` every group of a candidate for the report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from daskbench.errors import DaskbenchError
from daskbench.judge.compare import AB_GROUP
from daskbench.store import Store

OF, GOOD, PINS, TONIGHT, FLOORS = "confirm_of", "confirm_good", "confirm_pins", "confirm_tonight", "confirm_floors"

Pins = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Stored:
    """A confirmation read back from its runs' tags; ``pins`` and ``tonight`` as `describe_pins` says them."""

    group: str
    candidate: str
    good: str
    pins: str
    tonight: str
    floors: Mapping[str, float]

    def versions(self) -> str:
        """``standin 1.0 against standin 1.1``, as the alert and the report say it."""
        return f"{self.pins} against {self.tonight}"


def describe_pins(pins: Pins) -> str:
    """``standin 1.0, dask 2026.7.0`` (user text: the caller escapes it for its medium)."""
    return ", ".join(f"{name} {version}" for name, version in pins)


def pins_text(pins: Pins) -> str:
    """The tag's form: ``standin==1.0,dask==2026.7.0``."""
    return ",".join(f"{name}=={version}" for name, version in pins)


def parse_pins(text: str) -> Pins:
    """`pins_text` read back; items without ``==`` are left out."""
    return tuple(tuple(item.split("==", 1)) for item in text.split(",") if "==" in item)  # type: ignore[misc]


def tags(candidate: str, good: str, pins: Pins, tonight: Pins, floors: Mapping[str, float]) -> dict[str, str]:
    """The tags a confirmation's runs carry."""
    return {
        OF: candidate,
        GOOD: good,
        PINS: pins_text(pins),
        TONIGHT: pins_text(tonight),
        FLOORS: json.dumps(dict(floors), sort_keys=True),
    }


def _read(group: str, found: Mapping[str, str]) -> Stored:
    return Stored(
        group,
        found[OF],
        found.get(GOOD, ""),
        describe_pins(parse_pins(found.get(PINS, ""))),
        describe_pins(parse_pins(found.get(TONIGHT, ""))),
        json.loads(found.get(FLOORS) or "{}"),
    )


def stored(store: Store, group: str) -> Stored:
    """The confirmation of A/B group ``group``; one line when no run of it is tagged as one."""
    for run in store.runs():
        if run.tags.get(AB_GROUP) == group and OF in run.tags:
            return _read(group, run.tags)
    raise DaskbenchError(
        f"no confirmation {group!r} in {store.display_url} (no run tagged {OF} in that "
        "A/B group); run one with: daskbench confirm --group GROUP"
    )


def of_candidate(store: Store, candidate: str) -> tuple[Stored, ...]:
    """Every confirmation of run ``candidate``, oldest first, one per group."""
    groups: dict[str, Stored] = {}
    for run in reversed(store.runs()):
        if run.tags.get(OF) == candidate and run.tags.get(AB_GROUP):
            groups.setdefault(run.tags[AB_GROUP], _read(run.tags[AB_GROUP], run.tags))
    return tuple(groups.values())
