"""Stores at their limits, written fast: one run of many cases, one case's long history, a huge ``extra``.

Rows go in through `Store.merge_rows` (what ``daskbench import`` uses: a batch of inserts per thousand rows in one
transaction), made from daskbench's own records (`Run`, `Case`, `Measurement.of`) and its row functions, so they
are the rows a session writes. Used by ``tests/test_store_limits.py`` (sizes a test can write in seconds) and
``measure/store-limits`` (the sizes of issue 45: 10,000 cases, 50,000 runs, 1 MB).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from daskbench.model import Case, ClusterSpec, Measurement, Run
from daskbench.store import Store
from daskbench.store.rows import dumps, measurement_to_row, run_to_row

GIB = 1024**3
#: When run 0 started; run ``i`` starts ``i`` hours later (a night's run a day would take 50,000 days).
START = datetime(2026, 1, 1, tzinfo=UTC)
HOST = {"cpu_model": "Test CPU @ 3GHz", "cores": 8, "memory_bytes": 16 * GIB, "platform": "Linux-test"}
Rows = Iterator[tuple[str, Mapping[str, Any]]]


def make_case(index: int) -> Case:
    """Case ``index``: one workload, its own ``n`` parameter, on a 2-worker local cluster."""
    return Case("ocean_anomaly", {"size": "tiny", "n": index}, ClusterSpec("local", 2, 1, 4 * GIB, 1.1))


def make_run(index: int, label: str) -> Run:
    """Finished run ``index`` of ``label`` (its id says both, its first 8 characters the index), ``index`` hours
    after `START`."""
    started = START + timedelta(hours=index)
    return Run(
        run_id=f"{index:08d}-{label}",
        label=label,
        started_at=started.isoformat(),
        ended_at=(started + timedelta(minutes=30)).isoformat(),
        versions={"dask": "2026.8.0", "python": "3.11.7"},
        host=HOST,
    )


def case_row(case: Case) -> dict[str, Any]:
    return {
        "fingerprint": case.fingerprint,
        "workload": case.workload,
        "params": dumps(case.params),
        "cluster": dumps(case.cluster.identity()),
        "first_seen_at": START.isoformat(),
    }


def measurement(run: Run, case: Case, repeat: int, runtime: float, extra: Mapping[str, Any] | None = None) -> Rows:
    """The row of one passed measurement with its metrics (runtime, memory, cost)."""
    yield "measurement", measured_row(run.run_id, case.fingerprint, repeat, runtime, run.started_at, extra)


def measured_row(
    run_id: str, fingerprint: str, repeat: int, runtime: float, at: str, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """`measurement`'s row, from the template row of a measurement made once (`_template`): only its keys, time,
    metrics and ``extra`` differ, so a million rows cost a dict copy each."""
    row = {**_template(), "run_id": run_id, "fingerprint": fingerprint, "repeat": repeat, "recorded_at": at}
    if extra:
        row["extra"] = dumps(dict(extra))
    metrics = {"runtime_s": runtime, "peak_memory_bytes": float(int(GIB * runtime)), "cost_usd": 0.001 * runtime}
    return {**row, "metrics": metrics}


_TEMPLATE: dict[str, Any] = {}


def _template() -> dict[str, Any]:
    """The row of a passed measurement, as `measurement_to_row` writes it (its keys and figures replaced per row)."""
    if not _TEMPLATE:
        made = Measurement.of(run_id="-", fingerprint="-", repeat=0, outcome="passed", runtime_s=1.0, recorded_at="-")
        _TEMPLATE.update(measurement_to_row(made))
    return _TEMPLATE


def _runtime(rng: random.Random, base: float) -> float:
    return base * rng.lognormvariate(0.0, 0.03)


def wide_rows(cases: int, runs: int = 2, repeats: int = 3, seed: int = 1) -> Rows:
    """``runs`` runs (``00000000-wide``, ...) of the same ``cases`` cases, ``repeats`` measurements each."""
    rng = random.Random(seed)
    made = [make_run(index, "wide") for index in range(runs)]
    every = [case_row(make_case(index)) for index in range(cases)]
    yield from (("run", run_to_row(run)) for run in made)
    yield from (("case", row) for row in every)
    for run in made:
        for case in every:
            for repeat in range(repeats):
                row = measured_row(run.run_id, case["fingerprint"], repeat, _runtime(rng, 1.0), run.started_at)
                yield "measurement", row


def history_rows(runs: int, repeats: int = 3, step: float = 1.0, seed: int = 2) -> Rows:
    """One case measured in ``runs`` runs (``00000000-long``, ...), the last run ``step`` times slower."""
    rng = random.Random(seed)
    case = make_case(0)
    made = [make_run(index, "long") for index in range(runs)]
    yield from (("run", run_to_row(run)) for run in made)
    yield "case", case_row(case)
    fingerprint = case.fingerprint
    for index, run in enumerate(made):
        base = step if index == runs - 1 else 1.0
        for repeat in range(repeats):
            yield "measurement", measured_row(run.run_id, fingerprint, repeat, _runtime(rng, base), run.started_at)


def heavy_rows(extra_bytes: int, repeats: int = 3) -> Rows:
    """Two runs (``00000000-heavy``, ``00000001-heavy``) of one case, each measurement with ``extra_bytes`` of text in
    its ``extra`` (what a collector or a benchmark put there)."""
    case = make_case(0)
    made = [make_run(index, "heavy") for index in range(2)]
    yield from (("run", run_to_row(run)) for run in made)
    yield "case", case_row(case)
    blob = "".join(random.Random(3).choices("abcdefghij", k=extra_bytes))
    for run in made:
        for repeat in range(repeats):
            yield from measurement(run, case, repeat, 1.0, {"note": blob})


def write(store: Store, rows: Callable[[], Rows]) -> None:
    """The rows ``rows()`` makes into ``store``, in one transaction, streamed (parents come first in every generator
    here; a retry makes them again, alike: they are seeded)."""
    store.merge_rows(rows)
