"""A realistic results store for the report's tests, written through the real Store API,
and a small HTML tree (stdlib html.parser) to check the rendered page's structure.

TEST FIXTURE: every number here is invented (shaped after the coiled-benchmarks notes:
queuing at worker-saturation 1.0 costs time and saves memory, inf the reverse), not
measured. Real reports come from real runs (pytest -m benchmark).

The story the store tells: twelve nightly runs on dask 2025.1.0 (the last one, with
three repeats, is baseline ``main``), then a candidate run on dask 2025.2.0 with a
bigger ``array.chunk-size``, in which

- ``array_sum`` got about 30% slower everywhere (regressed runtime and cost);
- ``ocean_anomaly`` at worker-saturation inf takes about 25% more memory, and on one
  worker it no longer fits: the candidate's repeats die of memory (``oom``);
- ``wordcount`` got about 15% faster (improved runtime and cost);
- one old nightly lost a worker in one case (a failed run in the history charts).
"""

from __future__ import annotations

import atexit
import math
import random
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from daskbench.model import Case, ClusterSpec, Measurement, Run
from daskbench.report import render_report
from daskbench.store import Store
from tests.helpers import GIB, HOST

SATURATIONS = (1.0, 1.1, math.inf)
CLUSTER_SIZES = (1, 2)
MEMORY_LIMIT = 4 * GIB
#: c6i.large per worker and an m6i.large scheduler, USD per hour (prices.json, 2025-06-01).
WORKER_PRICE, SCHEDULER_PRICE = 0.085, 0.096

#: workload -> (params, runtime on one worker at saturation 1.1 in s, peak per worker in bytes).
WORKLOADS: dict[str, tuple[dict[str, object], float, float]] = {
    "ocean_anomaly": ({"size": "small", "use_flox": False}, 21.0, 2.45 * GIB),
    "array_sum": ({"size": "small", "variant": "fast-thin"}, 14.0, 1.9 * GIB),
    "wordcount": ({"size": "small"}, 9.5, 0.9 * GIB),
}
#: saturation -> (runtime factor, memory factor) against 1.1 (queuing trades time for memory).
SATURATION_EFFECT = {1.0: (1.07, 0.93), 1.1: (1.0, 1.0), math.inf: (0.9, 1.45)}
#: (workload, saturation or None for all) -> (runtime factor, memory factor) in the candidate.
CANDIDATE_EFFECT = {
    ("array_sum", None): (1.30, 1.0),
    ("ocean_anomaly", math.inf): (1.0, 1.25),
    ("wordcount", None): (0.85, 1.0),
}
OOM_MESSAGE = "KilledWorker: Attempted to run task ('mean_chunk-3f2a', 17) on 4 different workers, but all those workers died while running it"
LOST_MESSAGE = "CommClosedError: Worker tcp://127.0.0.1:40213 left during compute"


@dataclass(frozen=True)
class ReportStore:
    """What the fixture wrote: the store, its URL and the ids a test needs."""

    store: Store
    url: str
    history_runs: tuple[str, ...]
    baseline_run: str
    candidate_run: str
    cases: tuple[Case, ...]


def build_report_store(
    path: Path,
    *,
    candidate_label: str = "dask-2025.2.0",
    oom_message: str = OOM_MESSAGE,
    candidate_ci_url: str | None = "https://github.com/example/daskbench/actions/runs/1234",
    nightlies: int = 12,
    workload_names: tuple[str, ...] = tuple(WORKLOADS),
) -> ReportStore:
    """Write the story above into a new SQLite store at ``path`` and name baseline ``main``."""
    url = f"sqlite:///{path}"
    store = Store(url)
    rng = random.Random(20250613)
    cases = tuple(_cases(workload_names))
    for case in cases:
        store.add_case(case)
    nightly_ids = [_write_nightly(store, cases, day, rng, repeats=3 if day == nightlies else 1)
                   for day in range(1, nightlies + 1)]  # fmt: skip
    store.set_baseline("main", [nightly_ids[-1]])
    candidate = _run("candidate", candidate_label, "2025-06-13T10:15:00+00:00", "2025.2.0", "256MiB", "9c1e0d4b",
                     candidate_ci_url)  # fmt: skip
    store.add_run(candidate)
    for case in cases:
        for repeat in range(3):
            store.add_measurement(_candidate_measurement(candidate.run_id, case, repeat, rng, oom_message))
    store.finish_run(candidate.run_id, "2025-06-13T10:41:00+00:00")
    return ReportStore(store, url, tuple(nightly_ids), nightly_ids[-1], candidate.run_id, cases)


def _cases(workload_names: tuple[str, ...]) -> list[Case]:
    return [
        Case(name, WORKLOADS[name][0], ClusterSpec("local", n, 2, MEMORY_LIMIT, saturation))
        for name in workload_names
        for n in CLUSTER_SIZES
        for saturation in SATURATIONS
    ]


def _run(run_id: str, label: str, started: str, dask: str, chunk_size: str, sha: str, ci_url: str | None = None) -> Run:
    return Run(
        run_id=run_id,
        label=label,
        started_at=started,
        git_sha=sha * 5,
        ci_url=ci_url,
        versions={
            "python": "3.11.9",
            "dask": dask,
            "distributed": dask,
            "numpy": "2.2.6",
            "pandas": "2.2.3",
            "xarray": "2025.1.2",
            "pyarrow": "19.0.1",
        },
        host=HOST,
        dask_config={
            "array.chunk-size": chunk_size,
            "distributed.scheduler.worker-saturation": 1.1,
            "distributed.worker.memory.target": 0.6,
            "distributed.worker.memory.spill": 0.7,
        },
    )


def _write_nightly(store: Store, cases: tuple[Case, ...], day: int, rng: random.Random, repeats: int) -> str:
    run = _run(f"nightly-{day:02d}", "nightly", f"2025-06-{day:02d}T02:00:00+00:00", "2025.1.0", "128MiB", "4b7a21f0")
    store.add_run(run)
    run_noise = rng.lognormvariate(0, 0.02)
    for case in cases:
        lost = day == 5 and case.workload == "wordcount" and case.cluster.n_workers == 2
        for repeat in range(repeats):
            if lost and case.cluster.worker_saturation == 1.0:
                store.add_measurement(_failed(run.run_id, case, repeat, "worker-lost", LOST_MESSAGE, 4.1, rng))
                continue
            store.add_measurement(_passed(run.run_id, case, repeat, rng, (run_noise, 1.0)))
    store.finish_run(run.run_id, f"2025-06-{day:02d}T02:24:00+00:00")
    return run.run_id


def _candidate_measurement(run_id: str, case: Case, repeat: int, rng: random.Random, oom_message: str) -> Measurement:
    runtime_f, memory_f = 1.0, 1.0
    for (workload, saturation), (rt, mem) in CANDIDATE_EFFECT.items():
        if workload == case.workload and saturation in (None, case.cluster.worker_saturation):
            runtime_f, memory_f = rt, mem
    if _peak_worker(case) * memory_f > 0.95 * MEMORY_LIMIT:
        return _failed(run_id, case, repeat, "oom", oom_message, 11.5, rng)
    return _passed(run_id, case, repeat, rng, (runtime_f, memory_f))


def _runtime(case: Case) -> float:
    base = WORKLOADS[case.workload][1] * SATURATION_EFFECT[case.cluster.worker_saturation][0]
    return base / case.cluster.n_workers**0.8


def _peak_worker(case: Case) -> float:
    base = WORKLOADS[case.workload][2] * SATURATION_EFFECT[case.cluster.worker_saturation][1]
    return base / case.cluster.n_workers**0.55


def _cost(runtime: float, n_workers: int) -> float:
    return runtime * (n_workers * WORKER_PRICE + SCHEDULER_PRICE) / 3600


def _passed(run_id: str, case: Case, repeat: int, rng: random.Random, factors: tuple[float, float]) -> Measurement:
    n = case.cluster.n_workers
    runtime = _runtime(case) * factors[0] * rng.lognormvariate(0, 0.025)
    worker_peak = int(_peak_worker(case) * factors[1] * rng.lognormvariate(0, 0.02))
    timeline = memory_timeline(runtime, int(worker_peak * n * 0.93), case.cluster.worker_saturation, rng)
    return Measurement.of(
        run_id=run_id, fingerprint=case.fingerprint, repeat=repeat, outcome="passed",
        runtime_s=round(runtime, 4),
        phases={"cluster_start": 1.9, "restart": 1.2, "prepare": 3.4, "build": 0.21, "compute": round(runtime, 4)},
        peak_memory_bytes=max(v for _, v in timeline), mean_memory_bytes=sum(v for _, v in timeline) // len(timeline),
        peak_worker_memory_bytes=worker_peak, peak_worker_memory_fraction=round(worker_peak / MEMORY_LIMIT, 4),
        spilled_bytes=0, spill_count=0, task_count=1840 * n, bytes_transferred=int(0.6 * GIB) * (n - 1),
        worker_restarts=0, cost_usd=round(_cost(runtime, n), 6), rightsized_cost_usd=round(_cost(runtime, n) * 0.9, 6),
        client_peak_memory_bytes=worker_peak // 4 + 200 * 2**20, client_peak_memory_above_idle_bytes=worker_peak // 8,
        timeline=timeline, extra={"instance": "c6i.large", "rightsized_instance": "c6i.large"},
    )  # fmt: skip


def _failed(
    run_id: str, case: Case, repeat: int, outcome: str, message: str, after_s: float, rng: random.Random
) -> Measurement:
    limit = MEMORY_LIMIT * case.cluster.n_workers
    timeline = memory_timeline(after_s * 2, int(limit * 0.98), case.cluster.worker_saturation, rng)
    timeline = tuple(point for point in timeline if point[0] <= after_s)
    return Measurement.of(
        run_id=run_id, fingerprint=case.fingerprint, repeat=repeat, outcome=outcome, message=message,  # type: ignore[arg-type]
        phases={"cluster_start": 1.9, "restart": 1.2, "prepare": 3.4, "compute": after_s},
        peak_memory_bytes=max(v for _, v in timeline), peak_worker_memory_bytes=int(MEMORY_LIMIT * 0.97),
        peak_worker_memory_fraction=0.97, worker_restarts=4 if outcome == "oom" else 1, timeline=timeline,
    )  # fmt: skip


def memory_timeline(
    runtime: float, peak: int, saturation: float, rng: random.Random, points: int = 60
) -> tuple[tuple[float, int], ...]:
    """Cluster memory over the compute phase: without queuing (inf) memory climbs to one big
    hump as every root task loads at once; with queuing it saw-tooths on a lower plateau."""
    idle = 0.09 * peak
    values = []
    for i in range(points):
        x = i / (points - 1)
        if math.isinf(saturation):
            shape = math.sin(math.pi * min(x / 0.9, 1.0)) ** 0.7
        else:
            shape = min(x / 0.15, 1.0) * (0.82 + 0.18 * abs(math.sin(x * 9 * math.pi))) * (1 - max(x - 0.9, 0) * 8)
        values.append(idle + (peak - idle) * max(shape, 0) * rng.uniform(0.97, 1.0))
    scale = (peak - idle) / (max(values) - idle)
    return tuple((round(runtime * i / (points - 1), 3), int(idle + (v - idle) * scale)) for i, v in enumerate(values))


# -- reading the rendered page --------------------------------------------------------

#: Text a hostile store could hold; the report must show it as text, never run it.
HOSTILE_LABEL = "<script>alert(1)</script>"
HOSTILE_MESSAGE = "</script><img src=x onerror=alert(2)>&amp; \u2028"
HOSTILE_URL = "javascript:alert(3)"
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


@dataclass
class Element:
    """One parsed HTML element: enough of a DOM to check a page's structure."""

    tag: str
    attrs: dict[str, str]
    children: list[Element] = field(default_factory=list)
    parts: list[str | Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(part if isinstance(part, str) else part.text() for part in self.parts)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            yield from child.iter()

    def select(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Element]:
        """Descendants by tag, class and attributes (``data_metric`` matches ``data-metric``)."""
        wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
        return [
            el
            for el in self.iter()
            if el is not self
            and (tag is None or el.tag == tag)
            and (cls is None or cls in el.classes)
            and all(el.attrs.get(name) == value for name, value in wanted.items())
        ]

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Element:
        found = self.select(tag, cls, **attrs)
        assert len(found) == 1, f"expected one {tag}.{cls} {attrs}, found {len(found)}"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        self.stack[-1].parts.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def parse_html(text: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


_SHARED: dict[str, tuple[ReportStore, str]] = {}


def shared_report() -> tuple[ReportStore, str]:
    """The story store and its default report (latest run vs baseline main), built once per
    test process: rendering is the slow part, and the structure and browser tests share it."""
    if "default" not in _SHARED:
        folder = tempfile.mkdtemp(prefix="daskbench-report-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        written = build_report_store(Path(folder) / "daskbench.db")
        _SHARED["default"] = (written, render_report(written.store))
    return _SHARED["default"]
