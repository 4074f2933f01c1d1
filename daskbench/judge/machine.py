"""Was it the code or the machine? Time verdicts between runs made at different machine speeds.

Every measurement records ``cpu_probe_s`` (`daskbench.metrics.probe`): a fixed piece of CPU work
timed on every worker and the client around the compute phase. A run's speed is the median probe
of its measurements. When the candidate run's machine was measurably slower (or faster) than the
baseline's, beyond `TOLERANCE`, a time or cost verdict would judge the machine, not the code: such
verdicts are not called ``regressed`` or ``improved`` but ``inconclusive``, with both speeds in the
note; memory verdicts stand (memory does not depend on the CPU's speed). Pure: records in, records out.
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
    """The verdicts with time changes set aside when the machine's speed differed, and the notes."""
    if base is None or cand is None or 1 / TOLERANCE <= cand / base <= TOLERANCE:
        return list(verdicts), []
    note = speed_note(base, cand)
    changed = [v for v in verdicts if _is_time_change(v)]
    kept = [_set_aside(v, note) if _is_time_change(v) else v for v in verdicts]
    lines = [
        f"{note}: {len(changed)} time verdict(s) are inconclusive, not a change of the code; memory verdicts stand"
    ]
    return kept, lines if changed else [note]


def _is_time_change(v: Verdict) -> bool:
    return v.verdict in ("regressed", "improved") and catalog.get(v.metric).kind in TIME_KINDS


def _set_aside(v: Verdict, note: str) -> Verdict:
    return replace(v, verdict="inconclusive", note="; ".join(part for part in (f"{note}: not judged", v.note) if part))
