"""``daskbench advise``: right-sizing advice from planted measurements, every line citing them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daskbench.advise import DEFAULT_TARGET, Config, advise, configs_of, spill_target, task_peak
from daskbench.cli import main
from daskbench.metrics.cost import load_prices
from daskbench.model import Measurement, Run
from daskbench.store import Store
from tests.helpers import ADVISE_RUN, GIB, MIB, advise_config


def lines_of(configs: list[Config]) -> dict[str, list[str]]:
    (found,) = advise(ADVISE_RUN, configs, load_prices())
    topics: dict[str, list[str]] = {}
    for line in found.lines:
        assert line.cites or line.topic in ("not covered", "per-task memory", "measured"), line
        topics.setdefault(line.topic, []).append(line.text)
    return topics


def test_memory_needed_and_threads_allowed_follow_peak_times_threads_over_the_spill_target() -> None:
    """600 MiB per task, target 0.6: 1 thread needs 1000 MiB, 2 threads 2000 MiB; a 2 GiB
    worker holds floor(2048 x 0.6 / 600) = 2 tasks, a 4 GiB one floor(4096 x 0.6 / 600) = 4."""
    topics = lines_of([advise_config(1, 2 * GIB, 10.0, 0.002), advise_config(2, 4 * GIB, 6.0, 0.003)])
    assert (
        "largest per-task peak 600.0 MiB (prefix read-block, 63 tasks, exact, 1 thread)" in topics["per-task memory"][0]
    )
    assert any("at 1 thread a worker needs >= 1000.0 MiB (600.0 MiB x 1 / 0.6)" in t for t in topics["worker memory"])
    assert any("at 2 threads a worker needs >= 2.0 GiB (600.0 MiB x 2 / 0.6)" in t for t in topics["worker memory"])
    assert topics["threads"] == [
        "a 2GiB worker holds 2 such tasks at once below the spill threshold, so up to 2 threads",
        "a 4GiB worker holds 4 such tasks at once below the spill threshold, so up to 4 threads",
    ]


def test_cheapest_and_fastest_are_named_with_their_figures_and_the_trade_off() -> None:
    topics = lines_of([advise_config(1, 2 * GIB, 10.0, 0.002), advise_config(2, 4 * GIB, 6.0, 0.003)])
    assert topics["cheapest measured"][0].startswith(
        "1 worker x 1 thread, 2GiB, sat 1.1 (2 slots): 10.00 s, $0.0020 per run"
    )
    assert topics["fastest measured"][0].startswith(
        "1 worker x 2 threads, 4GiB, sat 1.1 (3 slots): 6.00 s, $0.0030 per run"
    )
    assert topics["trade-off"] == ["the fastest is 1.67x faster and 1.50x dearer than the cheapest"]


def test_a_failed_configuration_is_evidence_of_too_small_and_never_picked() -> None:
    topics = lines_of([advise_config(1, 2 * GIB, 10.0, 0.002), advise_config(2, 1 * GIB, 1.0, 0.0001, outcome="oom")])
    assert topics["too small"] == [
        "1 worker x 2 threads, 1GiB, sat 1.1 (3 slots): oom in 1 of 1 repeat: this shape is too small or broke"
    ]
    assert "fastest measured" in topics and topics["fastest measured"] == ["the same configuration"]


def test_a_configuration_cut_by_a_lost_cluster_is_no_evidence_of_too_small() -> None:
    lost = advise_config(2, 1 * GIB, 1.0, 0.0001, outcome="cluster-lost")
    assert lost.failed == ()
    assert "too small" not in lines_of([advise_config(1, 2 * GIB, 10.0, 0.002), lost])


def test_without_task_memory_or_a_second_value_it_says_which_sweep_to_run() -> None:
    plain = advise_config(1, 2 * GIB, 10.0, 0.002)
    bare = Config(plain.case, (Measurement.of(**{**plain.measurements[0].__dict__, "tasks": ()}),), ADVISE_RUN.run_id)
    topics = lines_of([bare])
    assert topics["per-task memory"] == ["not measured; re-run with --task-memory to size workers from it"]
    assert "one thread count (1); to compare: sweep --threads-per-worker 1,2,4" in topics["not covered"]
    assert "one memory limit; to compare: sweep --memory-per-worker 2GiB,4GiB" in topics["not covered"]


def test_spill_target_comes_from_the_swept_config_then_the_run_then_dask() -> None:
    swept = advise_config(1, 2 * GIB, 1.0, 0.001, target="0.5")
    assert spill_target(swept, ADVISE_RUN) == 0.5
    plain = advise_config(1, 2 * GIB, 1.0, 0.001)
    assert spill_target(plain, ADVISE_RUN) == DEFAULT_TARGET
    configured = Run(**{**ADVISE_RUN.__dict__, "dask_config": {"distributed.worker.memory.target": 0.8}})
    assert spill_target(plain, configured) == 0.8


def test_a_peak_measured_at_one_thread_wins_over_a_larger_shared_one() -> None:
    """Two threads charge each task their shared growth: the 1-thread figure (exact) is used."""
    peak = task_peak(
        [advise_config(1, 2 * GIB, 1.0, 0.001, peak=300 * MIB), advise_config(2, 2 * GIB, 1.0, 0.001, peak=700 * MIB)]
    )
    assert peak is not None and peak.task.peak_bytes == 300 * MIB and peak.exact


def test_cli_advise_prints_cited_lines_and_versioned_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    store.add_run(ADVISE_RUN)
    for c in (advise_config(1, 2 * GIB, 10.0, 0.002), advise_config(2, 4 * GIB, 6.0, 0.003)):
        store.add_case(c.case)
        store.add_measurement(c.measurements[0])
    assert configs_of(ADVISE_RUN, store.measurements([ADVISE_RUN.run_id]), store.cases())[0].measurements[0].tasks
    assert main(["advise", "abcdef12", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wordcount[size=small]\n") and "[run abcdef12 case " in out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert main(["advise", "abcdef12", "--db", db, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == 1 and data["workloads"][0]["workload"] == "wordcount"
    assert all({"topic", "text", "cites"} <= line.keys() for line in data["workloads"][0]["advice"])
    assert main(["advise", "nosuch", "--db", db]) == 2
