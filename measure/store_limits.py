"""A store at its limits (issue 45), timed (measure/store-limits): a run of 10,000 cases, one case's history of
50,000 runs, measurements with 1 MB of ``extra``; ``compare``, ``report``, ``publish`` (and ``show``, ``export``) on
each, as a user runs them, with their wall time, CPU time, peak memory and what they wrote.

The stores are written through the store's bulk path (`testing.big_store`: what ``import`` uses), then each command
runs in a fresh process (`measure.scale.timed`). tests/test_store_limits.py checks the same at sizes a test affords.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from daskbench.store import Store
from measure.scale import header, timed
from testing import big_store

DASKBENCH = ".venv/bin/daskbench"
#: Per store: its rows and the commands timed on it (``{db}`` and ``{out}`` filled in).
SHAPES: dict[str, tuple[str, ...]] = {
    "wide": ("compare --baseline 00000000 --candidate 00000001", "report -o {out}/wide.html",
             "publish -o {out}/wide-site --reports 1"),
    "long": ("compare --history 20", "report -o {out}/long.html", "publish -o {out}/long-site --reports 1", "runs"),
    "heavy": ("show 00000001", "compare --baseline 00000000 --candidate 00000001", "report -o {out}/heavy.html",
              "publish -o {out}/heavy-site", "export -o {out}/heavy.jsonl"),
}  # fmt: skip


def rows_of(shape: str, cases: int, runs: int, extra_mib: int) -> Callable[[], big_store.Rows]:
    if shape == "wide":
        return partial(big_store.wide_rows, cases)
    if shape == "long":
        return partial(big_store.history_rows, runs, step=1.5)
    return partial(big_store.heavy_rows, extra_mib * 1024 * 1024)


def written(path: Path) -> str:
    """The size of what a command wrote (a file, or a folder's files), in MiB; "-" for nothing."""
    if path.is_dir():
        return f"{sum(p.stat().st_size for p in path.rglob('*') if p.is_file()) / 2**20:.1f}"
    return f"{path.stat().st_size / 2**20:.1f}" if path.is_file() else "-"


def measure(work: Path, shapes: Sequence[str], cases: int, runs: int, extra_mib: int) -> None:
    print(header())
    print(f"# wide: 2 runs x {cases} cases x 3 repeats; long: 1 case x {runs} runs x 3 repeats; heavy: 2 runs x 1 "
          f"case x 3 repeats, {extra_mib} MiB of extra each")  # fmt: skip
    print(f"{'store':>6} {'command':<52} {'wall s':>8} {'cpu s':>8} {'MiB':>6} {'exit':>4} {'out MiB':>8}")
    for shape in shapes:
        db = work / f"{shape}.db"
        db.unlink(missing_ok=True)
        began = time.perf_counter()
        big_store.write(Store(f"sqlite:///{db}"), rows_of(shape, cases, runs, extra_mib))
        print(f"{shape:>6} {'(written through the bulk path)':<52} {time.perf_counter() - began:8.1f}", flush=True)
        for command in SHAPES[shape]:
            args = command.format(out=work).split()
            target = Path(args[args.index("-o") + 1]) if "-o" in args else None
            if target is not None:
                shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
            cost = timed([DASKBENCH, *args, "--db", f"sqlite:///{db}"])
            out = written(target) if target else f"{len(cost.output) / 2**20:.1f}"
            print(f"{shape:>6} {command.split(' -o')[0]:<52} {cost.wall:8.1f} {cost.cpu:8.1f} "
                  f"{cost.max_rss_mib:6.0f} {cost.returncode:>4} {out:>8}", flush=True)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--stores", default="wide,long,heavy", help="which stores: wide, long, heavy")
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--extra-mib", type=int, default=1)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    measure(args.work, args.stores.split(","), args.cases, args.runs, args.extra_mib)


if __name__ == "__main__":
    main()
