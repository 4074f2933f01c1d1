"""The collector loop on planted collectors (no cluster): start in order, stop in reverse,
failures and invalid values noted, what they return merged into one `Collected`."""

from __future__ import annotations

from typing import Any

import pytest

from daskbench.clusters import address
from daskbench.metrics import breakdown, collectors, memory, probe, taskmemory
from daskbench.metrics.breakdown import BreakdownCollector
from daskbench.metrics.clientmemory import ClientMemoryCollector
from daskbench.metrics.collectors import Collected, Collector, Window
from daskbench.metrics.memory import MemorySummary
from daskbench.model import Case, ClusterSpec, TaskMemory
from daskbench.plugin.measuring import classify
from tests.helpers import MIB, wait_for

CLIENT = object()  # the planted collectors never use the client
TASK = TaskMemory("sum", tasks=4, peak_bytes=100, p95_bytes=90)


class _Logged:
    """Appends ``(event, class name)`` to a shared log at start and stop."""

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log

    def start(self, client: Any) -> None:
        self.log.append(("start", type(self).__name__))

    def stop(self, client: Any) -> Any:
        self.log.append(("stop", type(self).__name__))
        return {}


class Plain(_Logged):
    def stop(self, client: Any) -> Any:
        super().stop(client)
        return {"task_count": 3, "spill_count": None}


class Rich(_Logged):
    def stop(self, client: Any) -> Any:
        super().stop(client)
        return Collected({"spilled_bytes": 10}, {"note": "rich"}, (TASK,), ((0.0, 5), (0.05, 7)))


class FailsInStart(_Logged):
    def start(self, client: Any) -> None:
        super().start(client)
        raise RuntimeError("no scheduler")


class FailsInStop(_Logged):
    def stop(self, client: Any) -> Any:
        super().stop(client)
        raise ValueError("lost the\nworkers")


class Undeclared(_Logged):
    def stop(self, client: Any) -> Any:
        super().stop(client)
        return {"made_up_seconds": 1.0, "bytes_transferred": 8}


class Negative(_Logged):
    def stop(self, client: Any) -> Any:
        super().stop(client)
        return {"spill_count": -1}


def _run(found: list[Collector]) -> tuple[Collected, dict[str, str]]:
    errors: dict[str, str] = {}
    started = collectors.start_all(CLIENT, found, errors)
    return collectors.merge(collectors.stop_all(CLIENT, started, errors)), errors


def test_collectors_stop_in_the_reverse_order_of_their_start() -> None:
    """Started in the given order, stopped last-first; one that failed to start is never stopped."""
    log: list[tuple[str, str]] = []
    _run([Plain(log), FailsInStart(log), Rich(log), Undeclared(log)])
    assert log == [("start", "Plain"), ("start", "FailsInStart"), ("start", "Rich"), ("start", "Undeclared"),
                   ("stop", "Undeclared"), ("stop", "Rich"), ("stop", "Plain")]  # fmt: skip


def test_mappings_and_collected_values_merge_into_one() -> None:
    """A plain mapping is read as metrics (None: not measured); a Collected brings extra, tasks and a timeline."""
    log: list[tuple[str, str]] = []
    found, errors = _run([Plain(log), Rich(log)])
    assert found == Collected(
        metrics={"task_count": 3, "spilled_bytes": 10}, extra={"note": "rich"}, tasks=(TASK,),
        timeline=((0.0, 5), (0.05, 7)),
    )  # fmt: skip
    assert errors == {}


def test_failures_and_invalid_values_are_noted_under_the_class_name() -> None:
    """A collector that raises is left out; an undeclared or refused value is dropped, the
    collector's valid values kept; each error under the collector's class name, on one line."""
    log: list[tuple[str, str]] = []
    found, errors = _run([Plain(log), FailsInStart(log), FailsInStop(log), Undeclared(log), Negative(log)])
    assert found.metrics == {"task_count": 3, "bytes_transferred": 8}
    assert errors == {
        "FailsInStart": "RuntimeError: no scheduler",
        "FailsInStop": "ValueError: lost the workers",
        "Undeclared": "returned 'made_up_seconds', which is not a declared metric (daskbench.catalog.declare)",
        "Negative": "spill_count must be >= 0, got -1",
    }


def test_a_later_collector_wins_a_name_and_the_last_timeline_is_kept() -> None:
    """Merging in start order: metrics and extra by name (later wins), tasks appended, the last non-empty timeline."""
    first = Collected({"task_count": 1}, {"a": 1}, (TASK,), ((0.0, 1),))
    second = Collected({"task_count": 2, "spill_count": 0}, {"b": 2}, (TASK,))
    merged = collectors.merge([first, second])
    assert merged == Collected({"task_count": 2, "spill_count": 0}, {"a": 1, "b": 2}, (TASK, TASK), ((0.0, 1),))
    assert collectors.merge([]) == Collected()


def test_the_memory_summary_decides_the_outcome_through_the_merged_value() -> None:
    """Deaths (``worker_restarts``) and OOM deaths (``extra["oom_deaths"]``) classify a failure;
    without the memory collector's value a failure is ``failed``, as when it did not run."""
    summary = MemorySummary(500, 300, 400, None, ((0.0, 500),), deaths=2, oom_deaths=1)
    found = memory.collected(summary)
    assert found.metrics == {"peak_memory_bytes": 500, "mean_memory_bytes": 300, "peak_worker_memory_bytes": 400,
                             "worker_restarts": 2}  # fmt: skip
    assert found.extra == {"oom_deaths": 1} and found.timeline == ((0.0, 500),)
    lost = memory.collected(MemorySummary(500, 300, 400, 0.1, (), deaths=1, oom_deaths=0))
    error = RuntimeError("worker died")
    assert classify(error, found)[0] == "oom" and classify(error, lost)[0] == "worker-lost"
    assert classify(error, Collected())[0] == "failed" and classify(None, Collected()) == ("passed", "")
    assert classify(None, found)[0] == "worker-lost"  # finished, but one death was not for memory: re-run tasks


class _ScriptedClient:
    """Answers ``run``/``run_on_scheduler`` with planted values, by function."""

    def __init__(self, answers: dict[Any, list[Any]]) -> None:
        self.answers = answers

    def run(self, fn: Any, **kwargs: Any) -> Any:
        return self.answers[fn].pop(0)

    def run_on_scheduler(self, fn: Any) -> Any:
        return self.answers[fn].pop(0)


def test_the_breakdown_reads_the_runtime_from_its_window_at_stop() -> None:
    """Two workers x three threads x 2 s (set in the window after the start) are 12 thread-seconds;
    the tasks' thread CPU (6 s) is also the metric task_cpu_s."""
    window = Window(Case("sum", {}, ClusterSpec("local", 2, 3, 2**30, 1.1)))
    counters = {"cpu": 0.0, "ticks": 0.0, "tick_seconds": 0.0, "interval": 0.02, "transitions": 0.0}
    client = _ScriptedClient({
        breakdown._worker_seconds: [{"w": {}}, {"w": {"execute\tsum\tthread-cpu\tseconds": 6.0}}],
        breakdown._scheduler_start: [counters],
        breakdown._scheduler_stop: [{**counters, "cpu": 0.5, "transitions": 7.0, "max_queued": 3.0}],
    })  # fmt: skip
    collector = BreakdownCollector(window)
    collector.start(client)
    window.runtime_s = 2.0
    found = collector.stop(client)
    assert found.extra["thread_seconds"] == 12.0
    assert found.extra["time_breakdown"]["compute"] == 6.0 and found.extra["time_breakdown"]["idle"] == 6.0
    assert found.metrics == {"scheduler_cpu_s": 0.5, "scheduler_blocked_s": 0.0, "transition_count": 7,
                             "max_tasks_queued": 3, "task_cpu_s": 6.0}  # fmt: skip


@pytest.mark.parametrize("name", [memory.PLUGIN_NAME, taskmemory.PLUGIN_NAME])
def test_the_harness_plugins_carry_the_prefix_a_shared_scheduler_is_cleaned_by(name: str) -> None:
    """`clusters.address.close` removes plugins by this prefix, so the metrics' plugins must carry it."""
    assert name.startswith(address.HARNESS_PLUGIN_PREFIX)


def test_the_speed_probe_brackets_the_compute_phase_and_scales_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readings 0.030 and 0.036 s before, 0.036 and 0.042 s after (a worker and the client each time):
    median 0.036 s, so a 2 s runtime at the nominal 0.030 s probe is 2 x 0.030 / 0.036 s."""
    window = Window(Case("sum", {}, ClusterSpec("local", 1, 1, 2**30, 1.1)))
    readings = iter([[0.030, 0.036], [0.036, 0.042]])
    monkeypatch.setattr(probe, "probe_cluster", lambda client: next(readings))
    collector = probe.SpeedProbe(window)
    collector.start(None)
    window.runtime_s = 2.0
    found = collector.stop(None)
    assert found.metrics["cpu_probe_s"] == pytest.approx(0.036)
    assert found.metrics["runtime_norm_s"] == pytest.approx(2.0 * 0.030 / 0.036)
    assert found.extra["cpu_probes_s"] == [0.03, 0.036, 0.036, 0.042]
    assert {"cpu_probes_s", "load_1m", "others_cores"} <= set(found.extra), "how busy the machine was meanwhile"
    before, after = probe.CpuSnapshot(100.0, 50.0, 3.0), probe.CpuSnapshot(102.0, 54.0, 4.0)
    assert probe.others_cores(before, after) == 1.5, "4 busy CPU seconds in 2 s, 1 of them the session's own"
    assert probe.others_cores(before, None) is None and probe.others_cores(after, before) is None
    monkeypatch.setattr(probe.os, "getloadavg", lambda: (3.456, 2.0, 1.0))
    assert probe.load_read() == {"load_1m": 3.46}
    monkeypatch.setattr(probe.os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("none here")))
    assert probe.load_read() == {}


def test_the_probe_is_fixed_cpu_work_of_tens_of_milliseconds() -> None:
    assert 0.001 < probe.probe_seconds() < 1.0


def test_the_client_memory_collector_keeps_the_peak_of_what_this_process_allocated_in_its_window() -> None:
    """100 MiB written (so resident) and freed again inside the window: the sampling thread saw the peak,
    and the peak above idle is those 100 MiB (within what the interpreter itself moved)."""
    collector = ClientMemoryCollector(interval=0.005)
    collector.start(CLIENT)
    block = b"\x01" * (100 * MIB)
    wait_for(lambda: collector.peak - collector.idle >= 100 * MIB, "the sampler to see the block")
    del block
    found = collector.stop(CLIENT)
    assert 100 * MIB <= found["client_peak_memory_above_idle_bytes"] < 120 * MIB
    assert found["client_peak_memory_bytes"] - found["client_peak_memory_above_idle_bytes"] == collector.idle
