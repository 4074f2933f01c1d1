"""Was it the code or the machine? Time verdicts between runs made at different machine speeds.

Every measurement records ``cpu_probe_s`` (`daskbench.metrics.probe`): a fixed piece of CPU work
timed on every worker and the client around the compute phase. A case's speed is the median probe
of its measurements, a run's the median of all of them. When the machine was measurably slower (or
faster) during the candidate's measurements of a case than during the baseline's, beyond
`TOLERANCE`, a time or cost change in the same direction that the speed could explain would judge
the machine, not the code: such verdicts are not called ``regressed`` or
``improved`` but ``inconclusive``, with both speeds in the note. A change against the machine's
direction, or beyond what its speed explains, stands; memory verdicts stand (memory does not
depend on the CPU's speed).

Only the part of a case's time spent on a CPU stretches on a slower machine: a task that sleeps or
waits on I/O (``compute-noncpu`` of the time breakdown, `daskbench.metrics.breakdown`) waits as long
on a loaded machine. So the reach of a speed ratio ``s`` is ``1 + cpu_share * (s ** CONTENTION_EXPONENT - 1)``,
``cpu_share`` read off the measurements made on the faster machine (on the slower one, time spent
waiting for a core also reads as non-CPU). That waiting is the machine's too: when the slower side's
tasks spent a smaller share of their time on a CPU than the faster side's (`moved`, the share that went from
computing to waiting), the reach grows to ``reach / (1 - moved)`` (`reach`). A short case of many round trips is
starved that way far beyond what the probe reads: a 0.1 s word count read 7.05x slower (interval 4.65-10.69) beside
a busy loop per core while the probe read 1.66x, with 46 points of its tasks' time moved to ``compute-noncpu``
(``.ci/run`` 42, 2026-11-29): a reach of 2.76x at most from the probe alone, 5.1x with the move. A case whose tasks
sleep as much on both sides moves nothing, so a slowdown of sleeping tasks still stands. Pure: records in, records
out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import replace

from daskbench import catalog
from daskbench.model import Measurement, group_measurements
from daskbench.text import plural
from daskbench.verdicts import Verdict

#: Run speeds further apart than this ratio are "a different machine" for time verdicts.
TOLERANCE = 1.10
#: How far beyond the probe a loaded machine can slow a graph: the probe is a pure CPU loop, while
#: short tasks also wait on round trips between client, scheduler and workers, which all compete
#: for the cores. Measured on this project's 2-core machine under a changing load (2026-11-23):
#: transpose_mean at tiny 5.22x slower while its probe read 2.40x (2.40 ** 1.9); so a change is
#: the machine's when the probe's slow-down to this power could explain it.
CONTENTION_EXPONENT = 2.0
#: The most of the slower side's time counted as moved to waiting (`moved`): a case starved all the way would
#: otherwise have a reach without end.
MOST_MOVED = 0.9
#: The metric kinds that depend on how fast the machine ran.
TIME_KINDS = ("runtime", "cost")


def speed(measurements: Iterable[Measurement]) -> float | None:
    """The median CPU probe (seconds) of these measurements; None when none has one (``daskbench runs``
    has the database take the same median: `Store.metric_medians`)."""
    probes = [float(m.metrics["cpu_probe_s"]) for m in measurements if m.metrics.get("cpu_probe_s")]
    return statistics.median(probes) if probes else None


def speed_note(base: float, cand: float) -> str:
    """``the machine was 1.25x slower during the candidate (CPU probe 37.5 ms against 30.0 ms)``."""
    ratio = cand / base
    word = "slower" if ratio > 1 else "faster"
    shown = ratio if ratio > 1 else 1 / ratio
    return f"the machine was {shown:.2f}x {word} during the candidate (CPU probe {cand * 1e3:.1f} ms against {base * 1e3:.1f} ms)"


def cpu_share(measurements: Iterable[Measurement]) -> float:
    """The median share of a measurement's thread-seconds that was not spent waiting inside tasks
    (1 minus ``compute-noncpu`` over ``thread_seconds``); 1.0 (all of it: the widest reach) when none was
    broken down, as on a distributed before 2023.3.2, which has no time breakdown (``extra["not_available"]``).
    Waits for the GIL count as waiting, so for multi-threaded pure-Python tasks this is a lower bound."""
    known = _known_share(measurements)
    return 1.0 if known is None else known


def moved(faster: Iterable[Measurement], slower: Iterable[Measurement]) -> float:
    """The share of the slower side's task time that went from computing to waiting (for a core): its
    `cpu_share` below the faster side's; 0 when it is not below or either side was not broken down."""
    fast, slow = _known_share(faster), _known_share(slower)
    return 0.0 if fast is None or slow is None else max(0.0, fast - slow)


def _known_share(measurements: Iterable[Measurement]) -> float | None:
    known = [share for share in map(_cpu_share, measurements) if share is not None]
    return statistics.median(known) if known else None


def _cpu_share(m: Measurement) -> float | None:
    seconds = m.extra.get("thread_seconds") or 0.0
    waiting = (m.extra.get("time_breakdown") or {}).get("compute-noncpu")
    if seconds <= 0 or waiting is None:
        return None
    return 1.0 - min(1.0, max(0.0, float(waiting) / float(seconds)))


def reach(slower: float, share: float = 1.0, waited: float = 0.0) -> float:
    """How much slower a case whose time is ``share`` CPU can run on a machine ``slower`` times slower
    (below 1 on a faster machine), when the slower side's tasks spent a share ``waited`` more of their time waiting
    (`moved`): that share of the slower side's time is the machine's as well."""
    stretch = 1.0 + share * (slower**CONTENTION_EXPONENT - 1.0)
    kept = 1.0 - min(waited, MOST_MOVED)
    return stretch / kept if slower >= 1.0 else stretch * kept


def guard(
    verdicts: Sequence[Verdict], base_ms: Sequence[Measurement], cand_ms: Sequence[Measurement]
) -> tuple[list[Verdict], list[str]]:
    """The verdicts with the time changes the machine's speed could explain set aside, and the notes.

    Each case is judged against the machine's speed during that case's own measurements (the load
    of a shared machine comes and goes within a run); the note names the runs' speeds."""
    base_by, cand_by = group_measurements(base_ms, "fingerprint"), group_measurements(cand_ms, "fingerprint")
    kept = [_guarded(v, base_by.get(v.fingerprint, []), cand_by.get(v.fingerprint, [])) for v in verdicts]
    explained = sum(1 for old, new in zip(verdicts, kept, strict=True) if old is not new)
    return kept, _notes(speed(base_ms), speed(cand_ms), explained)


def _apart(base: float | None, cand: float | None) -> tuple[float, float] | None:
    """Both speeds when they differ beyond `TOLERANCE`; None when either is unknown or they agree."""
    if base is None or cand is None or 1 / TOLERANCE <= cand / base <= TOLERANCE:
        return None
    return base, cand


def _guarded(v: Verdict, base_ms: Sequence[Measurement], cand_ms: Sequence[Measurement]) -> Verdict:
    speeds = _apart(speed(base_ms), speed(cand_ms))
    if speeds is None:
        return v
    faster, slower = (base_ms, cand_ms) if speeds[0] < speeds[1] else (cand_ms, base_ms)
    if not explained_by(v, speeds[1] / speeds[0], cpu_share(faster), moved(faster, slower)):
        return v
    return _set_aside(v, speed_note(*speeds))


def _notes(base: float | None, cand: float | None, explained: int) -> list[str]:
    """The run-level speed note (when the runs differ beyond `TOLERANCE`) and what was set aside."""
    speeds = _apart(base, cand)
    run_note = speed_note(*speeds) if speeds else ""
    if not explained:
        return [run_note] if run_note else []
    lead = run_note or "the machine's speed changed during some cases (CPU probe of each case)"
    what = plural(explained, "time verdict")
    return [f"{lead}: {what} the speed during its case could explain set aside as inconclusive; memory verdicts stand"]


def explained_by(v: Verdict, slower: float, share: float = 1.0, waited: float = 0.0) -> bool:
    """Whether a time verdict could be the machine's doing: a regression on a machine ``slower``
    times slower whose interval, divided by the `reach` of that speed for a case ``share`` CPU whose slower side
    waited a share ``waited`` more, no longer clears the floor (the mirror for an improvement on a faster
    machine). A change against the machine's direction, or beyond what its speed explains, stands."""
    if v.verdict not in ("regressed", "improved") or catalog.get(v.metric).kind not in TIME_KINDS:
        return False
    floor, stretch = v.floor or 1.0, reach(slower, share, waited)
    if v.verdict == "regressed":
        return slower > TOLERANCE and (v.ci_low or v.ratio or 1.0) / stretch <= floor
    return slower < 1 / TOLERANCE and (v.ci_high or v.ratio or 1.0) / stretch >= 1 / floor


def _set_aside(v: Verdict, note: str) -> Verdict:
    return replace(v, verdict="inconclusive", note="; ".join(part for part in (f"{note}: not judged", v.note) if part))
