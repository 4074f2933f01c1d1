"""Was it the code or the machine? Time verdicts between runs made at different machine speeds.

Every measurement records ``cpu_probe_s`` (`daskbench.metrics.probe`): a fixed piece of CPU work
timed on every worker and the client around the compute phase. A run's speed is the median probe
of its measurements. When the candidate run's machine was measurably slower (or faster) than the
baseline's, beyond `TOLERANCE`, a time or cost change in the same direction that the speed could
explain would judge the machine, not the code: such verdicts are not called ``regressed`` or
``improved`` but ``inconclusive``, with both speeds in the note. A change against the machine's
direction, or beyond what its speed explains, stands; memory verdicts stand (memory does not
depend on the CPU's speed). Pure: records in, records out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import replace

from daskbench import catalog
from daskbench.model import Measurement, Verdict

#: Run speeds further apart than this ratio are "a different machine" for time verdicts.
TOLERANCE = 1.10
#: The metric kinds that depend on how fast the machine ran.
TIME_KINDS = ("runtime", "cost")


def speed(measurements: Iterable[Measurement]) -> float | None:
    """The median CPU probe (seconds) of these measurements; None when none has one."""
    probes = [float(m.metrics["cpu_probe_s"]) for m in measurements if m.metrics.get("cpu_probe_s")]
    return statistics.median(probes) if probes else None


def speed_note(base: float, cand: float) -> str:
    """``the machine was 1.25x slower during the candidate (CPU probe 37.5 ms against 30.0 ms)``."""
    ratio = cand / base
    word = "slower" if ratio > 1 else "faster"
    shown = ratio if ratio > 1 else 1 / ratio
    return f"the machine was {shown:.2f}x {word} during the candidate (CPU probe {cand * 1e3:.1f} ms against {base * 1e3:.1f} ms)"


def guard(verdicts: Sequence[Verdict], base: float | None, cand: float | None) -> tuple[list[Verdict], list[str]]:
    """The verdicts with the time changes the machine's speed could explain set aside, and the notes."""
    if base is None or cand is None or 1 / TOLERANCE <= cand / base <= TOLERANCE:
        return list(verdicts), []
    note = speed_note(base, cand)
    explained = [v for v in verdicts if explained_by(v, cand / base)]
    kept = [_set_aside(v, note) if v in explained else v for v in verdicts]
    if not explained:
        return kept, [note]
    return kept, [f"{note}: {len(explained)} time verdict(s) it could explain are inconclusive; memory verdicts stand"]


def explained_by(v: Verdict, slower: float) -> bool:
    """Whether a time verdict could be the machine's doing: a regression on a machine ``slower``
    times slower whose interval, divided by that, no longer clears the floor (the mirror for an
    improvement on a faster machine). A change against the machine's direction, or beyond what
    its speed explains, stands."""
    if v.verdict not in ("regressed", "improved") or catalog.get(v.metric).kind not in TIME_KINDS:
        return False
    floor = v.floor or 1.0
    if v.verdict == "regressed":
        return slower > TOLERANCE and (v.ci_low or v.ratio or 1.0) / slower <= floor
    return slower < 1 / TOLERANCE and (v.ci_high or v.ratio or 1.0) / slower >= 1 / floor


def _set_aside(v: Verdict, note: str) -> Verdict:
    return replace(v, verdict="inconclusive", note="; ".join(part for part in (f"{note}: not judged", v.note) if part))
