"""What measure/estimate-error prints: for each of a few sessions of the bundled suite, the header's estimate
against the time the session took, and the time left its progress lines said at each quarter against the time
that was left, with the date, the machine and its load (read from the lines a session prints, timed here)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import dask
import distributed

from daskbench import provenance

#: The header's plan: ``daskbench: 42 measurements planned, about 27 s here (...)``.
PLAN = re.compile(r"daskbench: (\d+) measurements? planned, about (.+?) here")
#: A progress line's count and time left: ``(3/42 measured, about 7 min left)``.
PROGRESS = re.compile(r"\((\d+)/(\d+) measured(?:, about (.+?) left)?\)")
CLOCK = re.compile(r"(?:(\d+) h )?(\d+) (s|min)$")


def clock_seconds(text: str) -> float:
    """The seconds of a `daskbench.plugin.pace.clock` text: ``45 s``, ``12 min``, ``2 h 05 min``."""
    found = CLOCK.match(text.strip())
    if found is None:
        raise ValueError(f"not a clock text: {text!r}")
    hours, amount, unit = found.groups()
    return int(hours or 0) * 3600 + int(amount) * (1 if unit == "s" else 60)


@dataclass
class Session:
    """What one session said and did, its lines timed from when the header was read."""

    planned: int = 0
    estimate: float | None = None
    planned_at: float | None = None
    ended_at: float = 0.0
    lefts: list[tuple[int, float, float]] = field(default_factory=list)  # (done, seconds said left, said at)

    def read(self, line: str, at: float) -> None:
        plan = PLAN.search(line)
        if plan is not None:
            self.planned, self.estimate, self.planned_at = int(plan[1]), clock_seconds(plan[2]), at
        progress = PROGRESS.search(line)
        if progress is not None and progress[3]:
            self.lefts.append((int(progress[1]), clock_seconds(progress[3]), at))


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def run_session(db: str, size: str, label: str, extra: list[str]) -> tuple[Session, int]:
    """One ``pytest -m benchmark`` session of the bundled suite, its output read line by line as it comes."""
    command = [sys.executable, "-m", "pytest", "-m", "benchmark", "-p", "no:cacheprovider", "--size", size,
               "--db", db, "--label", label, *extra]  # fmt: skip
    session, began = Session(), time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            session.read(line, time.monotonic() - began)
    session.ended_at = time.monotonic() - began
    return session, process.returncode


def report(index: int, session: Session, code: int) -> None:
    if session.planned_at is None:
        print(f"session {index}: no plan line (exit {code}); is the suite there?")
        return
    took = session.ended_at - session.planned_at
    said = f"{session.estimate:.0f} s" if session.estimate is not None else "no estimate"
    ratio = f", actual/estimate {took / session.estimate:.2f}" if session.estimate else ""
    print(f"session {index}: {session.planned} measurements, estimated {said}, took {took:.0f} s{ratio} "
          f"(exit {code}; load after {load()})")  # fmt: skip
    for quarter in (1, 2, 3):
        wanted = session.planned * quarter / 4
        near = min(session.lefts, key=lambda found: abs(found[0] - wanted), default=None)
        if near is not None:
            done, left, at = near
            actual = session.ended_at - at
            print(f"  at {done}/{session.planned}: said {left:.0f} s left, {actual:.0f} s were "
                  f"(actual/said {actual / left if left else float('nan'):.2f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--db", required=True)
    parser.add_argument("extra", nargs="*", help="pytest arguments after --")
    args = parser.parse_args()
    print(f"# {datetime.now(UTC):%Y-%m-%dT%H:%MZ} · {os.cpu_count()} cores · {provenance.host()['cpu_model']}"
          f" · dask {dask.__version__} · distributed {distributed.__version__} · load {load()}")  # fmt: skip
    print(f"# {args.runs} sessions: pytest -m benchmark --size {args.size} {' '.join(args.extra)}".rstrip())
    for index in range(1, args.runs + 1):
        session, code = run_session(args.db, args.size, f"estimate-{index}", args.extra)
        report(index, session, code)


if __name__ == "__main__":
    main()
