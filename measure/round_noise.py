"""What makes a lockstep round noisy: pinned cores, simultaneous sides, worker restarts? (measure/round-noise)

Two local clusters of one worker and one thread each (the calibration benchmark's shape: four tasks
of a pure-Python loop, about 1 s in all), each in its own process, driven like a lockstep A/B: one
timed compute a side per round. Ways to run the two sides, measured in interleaved blocks so the
machine's drift over the hour hits every way alike:

- ``alternate``: A then B, B then A (ABBA), on any core, workers kept between measurements;
- ``pinned``: the same turns, side A's processes on core 0 and side B's on core 1;
- ``duet``: both sides at once, pinned to a core each (Bulej et al.'s duet benchmarking), so both
  see the same slow phase of the machine;
- ``restart``: the turns of ``alternate``, each measurement after a restart of the side's worker,
  as ``daskbench ab`` does (``client.restart`` without waiting, then ``wait_for_workers``);
- ``restart-settle``: the same, then 2 s of sleep before the timed compute (is it the restart's
  aftermath on the machine?);
- ``restart-warm``: the same, then one short untimed task of the loop on the new worker (is it the
  fresh process: unpickling the task's function, a cold interpreter?);
- ``restart-fork``: the turns of ``restart``, the worker forked from a preloading server as the harness
  now starts a local cluster's workers (`daskbench.clusters.forkserver`), not spawned.

It prints each way's per-round log ratio B/A (sd pooled over its blocks: what the sequential rule's
rounds grow with, as its square), the range of its blocks' mean log ratios (a bias that stays for a
whole block, such as one side's worker kept on a slower core, which no number of rounds averages
away) and rounds per minute (duet measures both sides in the time of one). Both sides run the same code: any spread is noise. A restart that does not come back within 60 s
is said and its round dropped (the sides keep restarted workers as the harness does:
`daskbench.clusters.common.keep_restarted_workers`).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from multiprocessing import get_context
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from daskbench.judge.stats import pooled_run_noise

if TYPE_CHECKING:
    from distributed import Client

#: Pure-Python loop iterations per task and tasks per graph: the calibration benchmark at tiny.
UNITS, TASKS = 3_200_000, 4
WAYS = ("alternate", "pinned", "duet", "restart", "restart-settle", "restart-warm", "restart-fork")
#: What a side does before its timed compute, per way: restart its worker, sleep, run a short task.
PREPARE = {
    "restart": (True, 0.0, False),
    "restart-settle": (True, 2.0, False),
    "restart-warm": (True, 0.0, True),
    "restart-fork": (True, 0.0, False),
}


def burn(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


def side(cpu: int | None, conn: Connection, fork: bool = False) -> None:
    """One side's cluster: measures whenever told, until told to stop; ``fork``: its workers forked from a
    preloading server (else spawned, Dask's default)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # the nanny and worker started below inherit it
    import sys

    import dask
    from distributed import Client, LocalCluster

    from daskbench.clusters.common import keep_restarted_workers
    from daskbench.clusters.forkserver import use_forkserver

    if fork:
        use_forkserver(list(sys.modules))
    keep_restarted_workers()  # as the harness does: else a restart every 2.5 s loses the worker for good
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        conn.send("ready")
        while (way := conn.recv()) != "stop":
            if not prepare(client, way):
                conn.send(None)
                continue
            start = time.perf_counter()
            dask.delayed(sum)([dask.delayed(burn)(UNITS) for _ in range(TASKS)]).compute()
            conn.send(time.perf_counter() - start)


def prepare(client: Client, way: str) -> bool:
    """What ``way`` does before the timed compute; False when the worker did not come back."""
    restart, settle, warm = PREPARE.get(way, (False, 0.0, False))
    if restart:
        client.restart(wait_for_workers=False)
        try:
            client.wait_for_workers(1, timeout=60)
        except TimeoutError:
            print(f"{way}: the worker did not come back within 60 s; round dropped", flush=True)
            return False
    time.sleep(settle)
    if warm:
        client.submit(burn, UNITS // 20, pure=False).result()
    return True


def block(way: str, rounds: int) -> tuple[list[float], float]:
    """One block of ``rounds`` rounds: the ratios B/A and the seconds the rounds took."""
    context = get_context("spawn")
    cpus = (0, 1) if way in ("pinned", "duet") else (None, None)
    pipes, processes = [], []
    for cpu in cpus:
        ours, theirs = context.Pipe()
        process = context.Process(target=side, args=(cpu, theirs, way == "restart-fork"))
        process.start()
        pipes.append(ours)
        processes.append(process)
    for pipe in pipes:
        pipe.recv()
    ratios, started = [], time.monotonic()
    for round_ in range(rounds):
        a, b = duet_round(pipes) if way == "duet" else turns_round(pipes, round_, way)
        if a is not None and b is not None:
            ratios.append(b / a)
    seconds = time.monotonic() - started
    for pipe in pipes:
        pipe.send("stop")
    for process in processes:
        process.join(timeout=60)
    return ratios, seconds


def duet_round(pipes: list[Connection]) -> list[float | None]:
    for pipe in pipes:
        pipe.send("duet")
    return [pipe.recv() for pipe in pipes]


def turns_round(pipes: list[Connection], round_: int, way: str) -> list[float | None]:
    times: list[float | None] = [0.0, 0.0]
    for index in (0, 1) if round_ % 2 == 0 else (1, 0):
        pipes[index].send(way)
        times[index] = pipes[index].recv()
    return times


def spread(logs: list[float]) -> str:
    return f"{statistics.stdev(logs):.4f}" if len(logs) > 1 else "  n/a "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4, help="blocks of each way (default 4)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds per block (default 12)")
    parser.add_argument(
        "--ways",
        default="alternate,pinned,duet",
        help=f"comma-separated ways to compare, of {', '.join(WAYS)} (default alternate,pinned,duet)",
    )
    args = parser.parse_args()
    ways = [way for way in args.ways.split(",") if way]
    if unknown := sorted(set(ways) - set(WAYS)):
        raise SystemExit(f"measure/round-noise: unknown way {', '.join(unknown)}; choose from {', '.join(WAYS)}")
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("measure/round-noise needs two cores")
    found: dict[str, list[list[float]]] = {way: [] for way in ways}
    seconds = dict.fromkeys(ways, 0.0)
    for number in range(args.blocks):
        for way in ways:
            ratios, took = block(way, args.rounds)
            found[way].append(ratios)
            seconds[way] += took
            logs = [math.log(ratio) for ratio in ratios]
            print(f"block {number + 1} {way:14s} sd {spread(logs)} mean {statistics.fmean(logs or [math.nan]):+.4f}",
                  flush=True)  # fmt: skip
    print("way             pooled sd  block means (bias)  rounds kept  rounds per minute")
    for way in ways:
        kept = [b for b in found[way] if b]
        means = [statistics.fmean(math.log(ratio) for ratio in b) for b in kept]
        bias = f"{min(means):+.3f} to {max(means):+.3f}" if means else "none"
        rounds = sum(len(b) for b in kept)
        # the within-block sd of the log ratios, pooled: a drift between blocks is not noise
        print(f"{way:14s}  {pooled_run_noise(kept, math.nan).sd:.4f}     {bias:18s}  {rounds:3d} of {args.blocks * args.rounds:<5d}  "
              f"{60 * rounds / seconds[way]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
