"""The report's right-sizing charts: the cost-runtime frontier and per-task memory bars."""

from __future__ import annotations

from pathlib import Path

from daskbench.report import write_report
from daskbench.report.rightsizing import frontier
from daskbench.store import Store
from tests.helpers import ADVISE_RUN, GIB, advise_config


def test_frontier_keeps_the_points_no_other_beats_on_both_time_and_cost() -> None:
    """(2 s, $1) beats (2 s, $2) and (3 s, $3); (1 s, $3) is the only faster one: both stay."""
    assert frontier([(1, 3), (2, 2), (3, 3), (2, 1)]) == [0, 3]
    assert frontier([(1, 1), (1, 1)]) == [0, 1]  # ties are both on it
    assert frontier([]) == []


def test_report_draws_the_frontier_and_the_task_prefix_bars_with_slots(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    store.add_run(ADVISE_RUN)
    for c in (
        advise_config(1, 2 * GIB, 10.0, 0.002),
        advise_config(2, 4 * GIB, 6.0, 0.003),
        advise_config(2, 2 * GIB, 7.0, 0.004),
    ):
        store.add_case(c.case)
        store.add_measurement(c.measurements[0])
    store.finish_run(ADVISE_RUN.run_id)
    html = write_report(store, tmp_path / "report.html", candidate=ADVISE_RUN.run_id).read_text()
    assert "Cost against runtime, every configuration" in html and "on the frontier" in html
    assert "Per-task peak memory by task prefix" in html and "read-block" in html
    label = "1 worker · 2 threads · 4GiB · sat 1.1 (3 slots)"  # as Bokeh's JSON escapes it
    assert label.replace("·", "\\\\u00b7") in html


def test_report_of_an_ab_group_lists_the_per_round_ratios(tmp_path: Path) -> None:
    """``report --group GROUP``: verdicts from the interleaved rounds, each round's ratio B/A in the note."""
    from daskbench.cli import main
    from daskbench.model import Case, ClusterSpec, Measurement, Run

    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    case = Case("sleepy", {}, ClusterSpec("local", 1, 1, GIB, 1.1))
    store.add_case(case)
    for number, (a, b) in enumerate([(1.0, 1.5), (1.2, 1.8), (0.9, 1.35)]):
        for side, runtime in (("A", a), ("B", b)):
            run = Run(run_id=f"r{number}{side}", label="ab", started_at=f"2026-11-01T0{number}:0{ord(side) - 65}:00+00:00",
                      tags={"ab_group": "g", "ab_side": side, "ab_round": str(number)})  # fmt: skip
            store.add_run(run)
            store.add_measurement(Measurement.of(run_id=run.run_id, fingerprint=case.fingerprint, repeat=0,
                                                 outcome="passed", runtime_s=runtime, cost_usd=runtime / 1000))  # fmt: skip
            store.finish_run(run.run_id, f"2026-11-01T0{number}:0{ord(side) - 65}:30+00:00")
    assert main(["report", "--db", db, "--group", "g", "-o", str(tmp_path / "ab.html")]) == 0
    html = (tmp_path / "ab.html").read_text()
    assert "per-round ratios 1.500, 1.500, 1.500" in html and "A/B group g: 3 interleaved rounds" in html
    assert main(["report", "--db", db, "--group", "g", "--history", "5"]) == 2
