"""Why a runtime changed: the activities of the time breakdown that moved most.

A verdict says "1.4x slower"; the next question is "doing what?". Each passed
measurement carries ``extra["time_breakdown"]`` (`daskbench.metrics.breakdown`): thread
seconds by activity. For a runtime verdict that changed (regressed, improved, or
inconclusive with a ratio beyond the floor), the median breakdown of each side is
compared and the activities that moved most are named, in seconds and in share of the
thread-seconds ("transfer +3.1 s (+41 pts), compute +0.2 s (-6 pts)"), and appended to the
verdict's note, which every rendering of a comparison already shows; so are the
performance reports kept with ``--evidence`` ("evidence: baseline <path>, candidate <path>").
A side measured on a release that has no breakdown (``extra["not_available"]``, distributed before
2023.3.2) is said so instead ("moved: no time breakdown on the baseline: <why>").

Pure functions over records; `daskbench.judge.compare` calls `explain_verdicts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from daskbench.judge.stats import median
from daskbench.metrics.collectors import NOT_AVAILABLE
from daskbench.model import Measurement
from daskbench.verdicts import Verdict

EXPLAINED_METRIC = "runtime_s"
#: How many activities a note names.
TOP = 2
#: Moves smaller than this (seconds) are noise, never named.
MIN_SECONDS = 0.05
NOTE_PREFIX = "moved: "


@dataclass(frozen=True)
class Move:
    """One activity's change between the sides' median breakdowns."""

    activity: str
    seconds: float
    share_points: float  # change of its share of all thread-seconds, in percentage points

    def text(self) -> str:
        return f"{self.activity} {self.seconds:+.1f} s ({self.share_points:+.0f} pts)"


def median_breakdown(measurements: Iterable[Measurement]) -> dict[str, float]:
    """The per-activity median over the passed measurements that have a breakdown."""
    found = [
        m.extra["time_breakdown"] for m in measurements if m.ok and isinstance(m.extra.get("time_breakdown"), dict)
    ]
    activities = sorted({name for breakdown in found for name in breakdown})
    return {name: median([float(b.get(name, 0.0)) for b in found]) for name in activities}


def moves(base: dict[str, float], cand: dict[str, float], top: int = TOP) -> list[Move]:
    """The activities that moved most in seconds (largest absolute change first), at most ``top``."""
    base_total, cand_total = sum(base.values()), sum(cand.values())
    if base_total <= 0 or cand_total <= 0:
        return []
    found = []
    for name in sorted({*base, *cand}):
        before, after = base.get(name, 0.0), cand.get(name, 0.0)
        share = 100.0 * (after / cand_total - before / base_total)
        found.append(Move(name, after - before, share))
    found.sort(key=lambda m: (-abs(m.seconds), m.activity))
    return [m for m in found if abs(m.seconds) >= MIN_SECONDS][:top]


def phrase(found: Sequence[Move]) -> str:
    """``transfer +3.1 s (+41 pts), compute +0.2 s (-6 pts)``, or "" when nothing moved."""
    return ", ".join(m.text() for m in found)


def changed(v: Verdict) -> bool:
    """Whether a verdict is a runtime change worth explaining."""
    if v.metric != EXPLAINED_METRIC or v.ratio is None or v.verdict not in ("regressed", "improved", "inconclusive"):
        return False
    if v.verdict != "inconclusive":
        return True
    floor = v.floor or 1.0
    return v.ratio > floor or v.ratio < 1.0 / floor


def explain(v: Verdict, base: Sequence[Measurement], cand: Sequence[Measurement]) -> Verdict:
    """``v`` with the moved activities appended to its note when it is a changed runtime."""
    if not changed(v):
        return v
    said = phrase(moves(median_breakdown(base), median_breakdown(cand))) or unavailable_text(base, cand)
    parts = (v.note, NOTE_PREFIX + said if said else "", evidence_text(base, cand))
    return replace(v, note="; ".join(part for part in parts if part))


def unavailable_text(base: Sequence[Measurement], cand: Sequence[Measurement]) -> str:
    """``no time breakdown on the baseline: <why>`` when a side's release could not break its time
    down (`daskbench.metrics.collectors.NOT_AVAILABLE`), or ""."""
    found = [(side, _why_no_breakdown(ms)) for side, ms in (("baseline", base), ("candidate", cand))]
    missing = [(side, why) for side, why in found if why]
    if not missing:
        return ""
    sides = " and the ".join(side for side, _ in missing)
    return f"no time breakdown on the {sides}: {missing[0][1]}"


def _why_no_breakdown(measurements: Sequence[Measurement]) -> str | None:
    reasons = [(m.extra.get(NOT_AVAILABLE) or {}).get("time_breakdown") for m in measurements if m.ok]
    return next((str(why) for why in reasons if why), None)


def evidence_text(base: Sequence[Measurement], cand: Sequence[Measurement]) -> str:
    """``evidence: baseline <report>, candidate <report>``: the performance reports kept with
    ``--evidence`` (the last of each side), or "" when neither side kept any."""
    found = [(side, _last_report(ms)) for side, ms in (("baseline", base), ("candidate", cand))]
    kept = [f"{side} {path}" for side, path in found if path]
    return "evidence: " + ", ".join(kept) if kept else ""


def _last_report(measurements: Sequence[Measurement]) -> str | None:
    paths = [(m.extra.get("evidence") or {}).get("performance_report") for m in measurements]
    return next((path for path in reversed(paths) if path), None)


def explain_verdicts(
    verdicts: Sequence[Verdict], base: Sequence[Measurement], cand: Sequence[Measurement]
) -> list[Verdict]:
    """Every verdict of one case, the changed runtime ones explained."""
    return [explain(v, base, cand) for v in verdicts]
