"""Do pinned cores or simultaneous sides make a lockstep round quieter? (ci/pinning)

Two local clusters of one worker and one thread each (the calibration benchmark's shape: four tasks
of a pure-Python loop, about 1 s in all), each in its own process, driven like a lockstep A/B: one
timed compute a side per round. Unlike ``daskbench ab`` it does not restart the workers between
measurements: in three tries here a restart hung once in about 200 (the worker never came back),
and what is measured is the machine's noise during the compute phase, not the restart. Three ways
to run the two sides, measured in interleaved blocks so the machine's drift over the hour hits
every way alike:

- ``alternate``: A then B, B then A (ABBA), on any core: what ``daskbench ab`` does;
- ``pinned``: the same turns, side A's processes on core 0 and side B's on core 1;
- ``duet``: both sides at once, pinned to a core each (Bulej et al.'s duet benchmarking), so both
  see the same slow phase of the machine.

It prints each way's per-round log ratio B/A (sd pooled over its blocks: what the sequential rule's
rounds grow with, as its square) and rounds per minute (duet measures both sides in the time of one).
Both sides run the same code: any spread is noise.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from multiprocessing import get_context
from multiprocessing.connection import Connection

#: Pure-Python loop iterations per task and tasks per graph: the calibration benchmark at tiny.
UNITS, TASKS = 3_200_000, 4
WAYS = ("alternate", "pinned", "duet")


def burn(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


def side(cpu: int | None, conn: Connection) -> None:
    """One side's cluster: measures whenever told, until told to stop."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # the nanny and worker started below inherit it
    import dask
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        conn.send("ready")
        while conn.recv() == "go":
            start = time.perf_counter()
            dask.delayed(sum)([dask.delayed(burn)(UNITS) for _ in range(TASKS)]).compute()
            conn.send(time.perf_counter() - start)


def block(way: str, rounds: int) -> tuple[list[float], float]:
    """One block of ``rounds`` rounds: the log ratios B/A and the seconds the rounds took."""
    context = get_context("spawn")
    cpus = (0, 1) if way in ("pinned", "duet") else (None, None)
    pipes, processes = [], []
    for cpu in cpus:
        ours, theirs = context.Pipe()
        process = context.Process(target=side, args=(cpu, theirs))
        process.start()
        pipes.append(ours)
        processes.append(process)
    for pipe in pipes:
        pipe.recv()
    logs, started = [], time.monotonic()
    for round_ in range(rounds):
        times = duet_round(pipes) if way == "duet" else turns_round(pipes, round_)
        logs.append(math.log(times[1] / times[0]))
    seconds = time.monotonic() - started
    for pipe in pipes:
        pipe.send("stop")
    for process in processes:
        process.join(timeout=60)
    return logs, seconds


def duet_round(pipes: list[Connection]) -> list[float]:
    for pipe in pipes:
        pipe.send("go")
    return [float(pipe.recv()) for pipe in pipes]


def turns_round(pipes: list[Connection], round_: int) -> list[float]:
    times = [0.0, 0.0]
    for index in (0, 1) if round_ % 2 == 0 else (1, 0):
        pipes[index].send("go")
        times[index] = float(pipes[index].recv())
    return times


def pooled_sd(blocks: list[list[float]]) -> float:
    """The within-block sd, pooled (each block's mean removed, so a drift between blocks is not noise)."""
    squares = sum(sum((x - statistics.fmean(b)) ** 2 for x in b) for b in blocks)
    return math.sqrt(squares / sum(len(b) - 1 for b in blocks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4, help="blocks of each way (default 4)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds per block (default 12)")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("ci/pinning needs two cores")
    found: dict[str, list[list[float]]] = {way: [] for way in WAYS}
    seconds = dict.fromkeys(WAYS, 0.0)
    for number in range(args.blocks):
        for way in WAYS:
            logs, took = block(way, args.rounds)
            found[way].append(logs)
            seconds[way] += took
            print(f"block {number + 1} {way:9s} sd {statistics.stdev(logs):.4f} mean {statistics.fmean(logs):+.4f}",
                  flush=True)  # fmt: skip
    print("way        pooled sd  blocks x rounds  rounds per minute")
    for way in WAYS:
        rounds = sum(len(b) for b in found[way])
        print(f"{way:9s}  {pooled_sd(found[way]):.4f}     {args.blocks} x {args.rounds:<11d}  "
              f"{60 * rounds / seconds[way]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
