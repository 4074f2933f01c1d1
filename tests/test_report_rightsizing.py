"""The report's right-sizing charts: the cost-runtime frontier and per-task memory bars."""

from __future__ import annotations

from pathlib import Path

from daskbench.report import write_report
from daskbench.report.rightsizing import frontier
from daskbench.store import Store
from tests.test_advise import GIB, RUN, config


def test_frontier_keeps_the_points_no_other_beats_on_both_time_and_cost() -> None:
    """(2 s, $1) beats (2 s, $2) and (3 s, $3); (1 s, $3) is the only faster one: both stay."""
    assert frontier([(1, 3), (2, 2), (3, 3), (2, 1)]) == [0, 3]
    assert frontier([(1, 1), (1, 1)]) == [0, 1]  # ties are both on it
    assert frontier([]) == []


def test_report_draws_the_frontier_and_the_task_prefix_bars_with_slots(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    store.add_run(RUN)
    for c in (config(1, 2 * GIB, 10.0, 0.002), config(2, 4 * GIB, 6.0, 0.003), config(2, 2 * GIB, 7.0, 0.004)):
        store.add_case(c.case)
        store.add_measurement(c.measurements[0])
    store.finish_run(RUN.run_id)
    html = write_report(store, tmp_path / "report.html", candidate=RUN.run_id).read_text()
    assert "Cost against runtime, every configuration" in html and "on the frontier" in html
    assert "Per-task peak memory by task prefix" in html and "read-block" in html
    label = "1 worker · 2 threads · 4GiB · sat 1.1 (3 slots)"  # as Bokeh's JSON escapes it
    assert label.replace("·", "\\\\u00b7") in html
