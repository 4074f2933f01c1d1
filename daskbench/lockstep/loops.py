"""How many calls of a case one lockstep measurement makes: its loops, calibrated at screening as pyperf does.

A measurement has a fixed cost beside the work it times: the workers restarted, warmed up, the collectors
started and stopped, the measurement stored (0.3-0.5 s on this project's 2-core machine). A case computing
for 0.1 s spends most of its rounds on that cost (rounds about 40% compute at ``--size tiny``), so a verdict
within 10% takes many rounds. pyperf's answer is ours: time several calls of the work inside one measurement
and record the time per call. The controller (`daskbench.lockstep.engine`) measures a case's first round with
one call on each side, reads the compute seen per call on both sides, and fixes from then on, for that case,

    loops = clamp(ceil(TARGET_S / compute per call of the slower side), 1, MAX_LOOPS)

the same on both sides in every later round (a round stays a like-for-like pair), carried into later parts
and fresh sessions. A side that ran fewer calls than asked (a test measured as a whole cannot loop; an older
daskbench ignores the ask) says so in its "done", and the case goes back to that many calls for both sides.
Every round, looped or not, is judged per call (``runtime_s`` is the window's compute over its calls), so the
first round's single call and later rounds' averaged calls estimate the same ratio; the later ones are quieter.

``DASKBENCH_LOOP_TARGET`` (seconds; ``0``: one call per measurement, as before) overrides the target.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from daskbench.errors import DaskbenchError
from daskbench.model import calls_said

#: Seconds of compute one measurement aims at. Against a fixed cost of 0.3-0.5 s a measurement, 1 s of compute
#: makes a round 65-75% compute (issue 43 asks for 0.7) where a 0.1 s case had 20%; more buys little share (2 s:
#: 80-85%) and doubles what each round costs, so fewer rounds fit a budget and a case stops later after its
#: verdict is reached. pyperf aims at 0.1 s a value, but its fixed cost per value is microseconds, not ours.
TARGET_S = 1.0
#: The most calls in one measurement: a case of 30 ms reaches the target; shorter ones (a few tasks, where the
#: client's round trip per compute is most of the time) stop at 32 calls, 32 times their compute, so that a
#: round of a case misjudged at screening (a first call far faster than the next) stays bounded.
MAX_LOOPS = 32
#: The variable that sets the target in seconds (0: one call per measurement).
ENV_TARGET = "DASKBENCH_LOOP_TARGET"


def target_from_env(environ: Mapping[str, str] = os.environ) -> float:
    """`TARGET_S`, or the seconds ``DASKBENCH_LOOP_TARGET`` sets (0: no loops); a value that is no number of
    seconds is one line saying how to fix it."""
    text = environ.get(ENV_TARGET, "").strip()
    if not text:
        return TARGET_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise DaskbenchError(f"{ENV_TARGET}={text!r} is no number of seconds; give e.g. 1.0, or 0 for one call")
    return seconds


def loops_for(per_call: Iterable[float | None], target: float = TARGET_S, most: int = MAX_LOOPS) -> int:
    """The calls per measurement for a case whose sides computed ``per_call`` seconds a call: enough for the
    slower side to reach ``target``, between 1 and ``most``. A side that measured no usable time (missing,
    zero, not finite) gives 1: nothing is known to amortise."""
    seen = list(per_call)
    usable = [s for s in seen if s is not None and math.isfinite(s) and s > 0]
    if not seen or len(usable) < len(seen) or target <= 0:
        return 1
    return max(1, min(most, math.ceil(target / max(usable))))


def ran(done: Mapping[str, Any]) -> int:
    """The calls a side's "done" says it made (1 when it does not say: an older session)."""
    return calls_said(done)


def per_call(done: Mapping[str, Any]) -> float | None:
    """The seconds one call took on a side: its compute (graph build included) over the calls it made."""
    found = done.get("phases")
    phases: Mapping[str, Any] = found if isinstance(found, dict) else {}
    seconds = [phases.get(name) for name in ("compute", "build")]
    values = [float(s) for s in seconds if isinstance(s, int | float) and not isinstance(s, bool)]
    if not values or not all(math.isfinite(v) and v >= 0 for v in values):
        return None
    return sum(values) / ran(done)


class Rounds(Protocol):
    """What `next_loops` reads of a case's rounds so far (`daskbench.lockstep.case.CaseResult`)."""

    loops: int  # the calls asked of each side in the round just measured
    calls: int  # the fewest calls a side made in it

    @property
    def rounds(self) -> int: ...


def next_loops(case: Rounds, dones: Sequence[Mapping[str, Any]], target: float = TARGET_S) -> int:
    """The calls per measurement of a case's next round, after a round whose sides said ``dones``: fixed from
    its very first round (one call each) by `loops_for`; fewer when a side made fewer than asked (it cannot
    loop: both sides go down to what it made); else as before."""
    if case.calls < case.loops:
        return case.calls
    if case.rounds == 1 and case.loops == 1:
        return loops_for([per_call(done) for done in dones], target)
    return case.loops
