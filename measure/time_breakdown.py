"""The time breakdown on real clusters, printed (run by measure/time-breakdown).

1. A join with the p2p shuffle on 2 workers: transfer and shuffle time.
2. An array reduction on 1 worker: almost no transfer.
3. A planted slowdown that only delays data transfer (each worker's ``get_data`` handler
   sleeps 50 ms, installed by a module imported on the restarted workers): ``compare``
   names transfer as the activity that moved.
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import pandas as pd

from daskbench.clusters import open_cluster
from daskbench.judge.compare import compare_runs
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec, Run, now_iso
from daskbench.plugin.measuring import Measurer
from daskbench.store import Store

PLANT = textwrap.dedent("""
    import asyncio
    from distributed.worker import Worker

    for worker in list(Worker._instances):
        original = worker.handlers["get_data"]

        async def slowed(comm, *args, _original=original, **kwargs):
            await asyncio.sleep(0.05)
            return await _original(comm, *args, **kwargs)

        worker.handlers["get_data"] = slowed
""")


def join() -> object:
    left = dd.from_pandas(pd.DataFrame({"k": range(400_000), "a": 1.0}), npartitions=16)
    right = dd.from_pandas(pd.DataFrame({"k": range(0, 800_000, 2), "b": 2.0}), npartitions=16)
    with dask.config.set({"dataframe.shuffle.method": "p2p"}):
        return left.merge(right, on="k").a.sum()


def reduction() -> object:
    x = da.random.random((3000, 3000), chunks=(300, 300))
    return (x @ x.T).sum()


def transfers() -> object:
    x = da.random.random((4000, 4000), chunks=(250, 250))
    return (x + x.T).sum()


def show(title: str, extra: dict) -> None:
    bd = extra["time_breakdown"]
    print(
        f"{title}: thread-seconds {extra['thread_seconds']:.2f}, sum {sum(bd.values()):.2f}; "
        + ", ".join(f"{k} {v:.2f}" for k, v in bd.items() if v)
    )


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="daskbench-breakdown-"))
    (scratch / "plant_transfer_delay.py").write_text(PLANT)
    sys.path.insert(0, str(scratch))  # the worker processes start with the parent's path
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(scratch), os.environ.get("PYTHONPATH"))))
    for n in (2, 1):
        opened = open_cluster(ClusterSpec("local", n, 1, 2 * 2**30, 1.1))
        try:
            measurer = Measurer(opened.client, "check", load_prices(), 600, n)
            case = Case("check", {}, opened.spec)
            if n == 1:
                show("array reduction, 1 worker", measurer.measure(case, 0, reduction(), {}, {})[0].extra)
                continue
            show("p2p join, 2 workers", measurer.measure(case, 0, join(), {}, {})[0].extra)
            store = Store(f"sqlite:///{scratch / 'planted.db'}")
            runs = []
            for index, preload in enumerate(((), ("plant_transfer_delay",))):
                run = Run(run_id=f"planted-{index}", label="planted", started_at=now_iso(), ended_at=now_iso())
                store.add_run(run)
                store.add_case(case)
                measurer.run_id = run.run_id
                for repeat in range(3):
                    measurement, _ = measurer.measure(case, repeat, transfers(), {}, {}, preload)
                    store.add_measurement(measurement)
                    show(f"{'delayed' if preload else 'plain'} transfers, repeat {repeat}", measurement.extra)
                runs.append(run)
            comparison = compare_runs(store, baseline=runs[0].run_id, candidate=runs[1].run_id)
            verdict = next(v for v in comparison.verdicts if v.metric == "runtime_s")
            print(f"compare: {verdict.verdict} ratio {verdict.ratio:.2f}; note: {verdict.note}")
        finally:
            opened.close()


if __name__ == "__main__":
    main()
