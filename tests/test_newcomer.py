"""A newcomer's first hour (issue 14): one run, wrong results, --db mistakes, terminal width."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from daskbench import catalog
from daskbench.cli import main
from daskbench.config import parse_db
from daskbench.judge.compare import compare_runs
from daskbench.judge.format import format_table
from daskbench.model import SELECT_K, WRONG_RESULT, Case, ClusterSpec
from daskbench.report import render_report
from daskbench.store import Store
from daskbench.text import WIDTH
from tests.helpers import GIB, add_results, add_run, make_case, make_measurement, make_run, run_pytest

WRONG_FILE = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_right(measure):
    assert measure(dask.delayed(sum)([1, 2, 3]), name="right", params={"n": 3}) == 6


def test_wrong(measure):
    assert measure(dask.delayed(sum)([1, 2, 3]), name="wrong", params={"n": 3}) == 7
"""


def test_bare_db_file_path_becomes_a_sqlite_url(tmp_path: Path) -> None:
    """``--db results/bench.db`` means that SQLite file; URLs pass through unchanged."""
    assert parse_db(str(tmp_path / "bench.db")) == f"sqlite:///{tmp_path / 'bench.db'}"
    assert parse_db("postgresql://host/db") == "postgresql://host/db"


@pytest.mark.parametrize("form", ["--db={path}", "--db {path}", "--db {name}", "--db=nosuch://host/db"])
def test_db_directory_or_bare_name_is_one_error_line_before_collection(tmp_path: Path, form: str) -> None:
    """A directory, a bare name or an unknown database after --db: one ERROR line naming --db and the fix."""
    (tmp_path / "test_bench.py").write_text(WRONG_FILE)
    folder = tmp_path / "some dir"
    folder.mkdir()
    args = form.format(path=folder, name="results").split(" ", 1)
    result = run_pytest(tmp_path, "-m", "benchmark", *args)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and errors[0].startswith("ERROR: --db:") and "sqlite:///" in errors[0], result.stderr
    assert "collected" not in result.stdout and "Traceback" not in result.stderr + result.stdout


def test_wrong_result_is_recorded_and_terminal_output_fits(tmp_path: Path) -> None:
    """A test failing after measure() returned leaves wrong-result measurements; the output fits 120 columns;
    the header plans (2 measurements, the time they take here) and each progress line counts them."""
    (tmp_path / "test_bench.py").write_text(WRONG_FILE)
    db = tmp_path / "bench.db"
    result = run_pytest(tmp_path, "-m", "benchmark", "-k", "right or wrong", "--db", str(db), "--size", "tiny",
                        "--workers", "1", "--saturation", "inf", "--benchmark-json", str(tmp_path / "b.json"))  # fmt: skip
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    store = Store(f"sqlite:///{db}")
    run = store.latest_run()
    outcomes = {m.extra["test"].split("::")[1].split("[")[0]: m.outcome for m in store.measurements([run.run_id])}
    assert outcomes == {"test_right": "passed", "test_wrong": WRONG_RESULT}
    assert run.tags[SELECT_K] == "right or wrong"
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("daskbench: ") and " r0 " in line]
    assert len(progress) == 2 and all(len(line) <= WIDTH for line in progress)
    plan = next(line for line in lines if "measurements planned" in line)  # the header: how many, how long here
    assert plan.startswith("daskbench: 2 measurements planned, about ") and "as documented, x" in plan, plan
    assert "(1/2 measured" in progress[0] and "(2/2 measured)" in progress[1], progress
    assert "Benchmark fixture was not used" not in result.stdout + result.stderr
    assert any("recorded as wrong-result: AssertionError: assert 6 == 7" in line for line in lines)
    assert result.stdout.count("test_bench.py ") == 1 and "\n.\n" not in result.stdout
    assert "Name (time in" not in result.stdout  # pytest-benchmark's table only with --benchmark-columns
    assert len(json.loads((tmp_path / "b.json").read_text())["benchmarks"]) == 2


def test_wrong_result_is_never_a_baseline_value(tmp_path: Path) -> None:
    """Flagged measurements of the baseline are not compared: the case reads as fixed, with no baseline values."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    case = make_case("shuffle", size="small")
    base, cand = add_run(store, 1), add_run(store, 2)
    add_results(store, base, case, 10.0)
    add_results(store, cand, case, 10.0)
    assert store.flag_measurements(base.run_id, case.fingerprint, WRONG_RESULT, "assert 1 == 2") > 0
    (verdict,) = compare_runs(store, baseline=base.run_id).verdicts
    assert verdict.verdict == "fixed" and verdict.baseline_values == ()


def test_compare_with_one_run_says_so_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After the first sweep (and after naming it main) compare explains there is nothing yet, exit 0."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    run = add_run(store, 1)
    add_results(store, run, make_case("shuffle", size="small"), 10.0)
    assert main(["compare", "--db", db]) == 0
    first = capsys.readouterr().out
    assert "is the only run" in first and "run the benchmarks again" in first
    assert main(["baseline", "set", "main", run.run_id, "--db", db]) == 0
    assert main(["compare", "--db", db]) == 0
    assert "nothing to compare yet" in capsys.readouterr().out


def test_readme_then_block_after_an_interrupted_first_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's "Then:" commands, in order, after Ctrl-C cut the first (small) run short: runs and show
    list it, report shows it alone in its own words, baseline set refuses it without --force, compare says no
    run finished (exit 0); after a finished tiny run compare still has nothing to judge; a forced small
    baseline against the tiny run is "nothing judged" with the sizes named, in compare and in the report."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    first = add_run(store, 1, label="first")
    add_results(store, first, make_case("ocean_anomaly", size="small"), 10.0)
    store.record_event(first.run_id, "interrupted", "3 measurements stored; Ctrl-C")
    assert main(["runs", "--db", db]) == 0 and "interrupted" in capsys.readouterr().out
    assert main(["show", first.run_id[:8], "--db", db]) == 0 and "ocean_anomaly" in capsys.readouterr().out
    assert main(["report", "--db", db, "-o", str(tmp_path / "report.html")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "no run has finished yet" in said and "interrupted run" in said and "compare" not in said.split("report:")[0]
    assert "daskbench compare" not in said
    assert main(["baseline", "set", "main", first.run_id[:8], "--db", db]) == 2
    refused = capsys.readouterr().err
    assert "is interrupted" in refused and "--force" in refused and len(refused.strip().splitlines()) == 1
    assert store.baselines() == {}
    assert main(["compare", "--db", db]) == 0
    said = " ".join(capsys.readouterr().out.split())  # notes wrap at 120 columns
    assert "has finished yet" in said and "pytest -m benchmark --size tiny" in said
    second = add_run(store, 2, label="second")  # "pytest -m benchmark": a finished (tiny) run
    add_results(store, second, make_case("ocean_anomaly", size="tiny"), 1.0)
    assert main(["compare", "--db", db]) == 0
    assert "is the only finished run" in capsys.readouterr().out
    assert main(["baseline", "set", "main", first.run_id[:8], "--force", "--db", db]) == 0
    assert main(["compare", "--db", db]) == 0
    judged = " ".join(capsys.readouterr().out.split())  # notes wrap at 120 columns
    assert "nothing judged" in judged and "size small -> tiny" in judged, judged
    html = render_report(store)
    assert "Nothing judged" in html and "Nothing got worse" not in html and "size small -&gt; tiny" in html


def test_compare_table_fits_and_explains_notes_once(tmp_path: Path) -> None:
    """Every line of the table fits 120 columns, and a shared note is listed once below it."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    base, cand = add_run(store, 1), add_run(store, 2)
    for saturation in (1.0, 1.1, float("inf")):
        case = make_case("a_workload_with_a_rather_long_name", n_workers=16, saturation=saturation, size="medium")
        add_results(store, base, case, 10.0)
        add_results(store, cand, case, 10.3)
    table = format_table(compare_runs(store, baseline=base.run_id))
    assert all(len(line) <= WIDTH for line in table.splitlines())
    notes = [line for line in table.splitlines() if line.startswith("[1] ")]
    assert len(notes) == 1 and table.count("[1]") > 2


def test_report_of_a_single_run_shows_its_tradeoffs(tmp_path: Path) -> None:
    """With one run, the report renders it alone, leading with its saturation trade-off table."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    run = add_run(store, 1)
    for saturation in (1.0, float("inf")):
        add_results(
            store, run, make_case("shuffle", saturation=saturation, size="small"), 10.0 if saturation == 1.0 else 8.0
        )
    html = render_report(store)
    assert html.index('id="tradeoffs"') < html.index('id="verdicts"')
    assert 'data-reference="inf"' in html and "(1.25x)" in html


def test_a_single_runs_report_claims_no_comparison_and_its_time_axis_ends_at_the_run(tmp_path: Path) -> None:
    """One run: the lede says it is alone and not "Nothing got worse", the differences do not say "same on both
    sides" (there is no second side), and the history axis, a day wide, ends just past the run, not hours after;
    runs six hours apart keep the axis's end as near to the newest."""
    from bokeh.models import Range1d

    from daskbench.report.content import gather
    from daskbench.report.style import Palette
    from daskbench.report.trends import MIN_SPAN_MS, history_figure, time_span

    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    run = add_run(store, 1)
    add_results(store, run, make_case("shuffle", size="small"), 10.0)
    html = render_report(store)
    assert "alone: no other run to compare it with yet" in html and "no other run yet" in html
    assert "Nothing got worse" not in html and "same on both sides" not in html
    data = gather(store, compare_runs(store))
    axis = history_figure(data.sections[0], 2, Palette(data.saturations)).x_range
    last = datetime.fromisoformat(run.started_at).timestamp() * 1000
    assert isinstance(axis, Range1d) and 0 < axis.end - last <= 0.05 * MIN_SPAN_MS
    assert axis.end - axis.start >= MIN_SPAN_MS
    later = datetime.fromisoformat(run.started_at) + timedelta(hours=6)
    start, end = time_span([datetime.fromisoformat(run.started_at), later])
    assert 0 < end - later.timestamp() * 1000 <= 0.05 * MIN_SPAN_MS and end - start >= MIN_SPAN_MS


def test_report_lists_a_shared_verdict_note_once_and_one_link_per_workload() -> None:
    """A note shared by many verdict rows is printed once per metric table; the menu links each workload once."""
    from tests.report_data import parse_html, shared_report

    page = parse_html(shared_report()[1])
    refs = page.one("tbody", data_metric="runtime_s").select("a", cls="note-ref")
    notes = page.one("ol", data_metric="runtime_s").select("li")
    assert len(refs) > len(notes) >= 1
    links = [a.attrs["href"] for a in page.one("nav", cls="toc").select("a")]
    assert len(links) == len(set(links)) == 3


def test_memory_chart_scales_to_the_traces_not_the_limit() -> None:
    """The memory chart's range follows the traces only; a limit far above them becomes a label."""
    from bokeh.models import DataRange1d, HSpan, Label

    from daskbench.judge.compare import compare_runs
    from daskbench.report.charts import LIMIT_IN_VIEW, memory_figure
    from daskbench.report.content import gather
    from daskbench.report.style import Palette
    from tests.report_data import MEMORY_LIMIT, shared_report

    written, _ = shared_report()
    data = gather(written.store, compare_runs(written.store))
    section = data.sections[0]
    fig = memory_figure(section, 2, Palette(data.saturations, [1, 2]))
    y_range = fig.y_range
    assert isinstance(y_range, DataRange1d) and y_range.renderers
    assert all(not isinstance(r.glyph, HSpan) for r in y_range.renderers)
    highest = max(y for r in y_range.renderers for y in r.data_source.data["gib"])
    far = highest * LIMIT_IN_VIEW < 2 * MEMORY_LIMIT / 2**30
    labels = [a for a in fig.center if isinstance(a, Label) and a.name == "memory-limit"]
    assert bool(labels) == far


def test_cases_outside_a_k_selection_are_one_missing_line(tmp_path: Path) -> None:
    """A -k run's unselected cases are explained in one line of the table and the report, not one row each."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    base, cand = add_run(store, 1), add_run(store, 2, tags={SELECT_K: "shuffle"})
    kept = make_case("shuffle", size="small")
    add_results(store, base, kept, 10.0)
    add_results(store, cand, kept, 10.0)
    for name in ("wordcount", "join_big", "ocean_anomaly"):
        add_results(store, base, make_case(name, size="small"), 10.0)
    comparison = compare_runs(store, baseline=base.run_id)
    assert sum(v.verdict == "missing" for v in comparison.verdicts) == 3
    lines = format_table(comparison).splitlines()
    missing = [line for line in lines if "missing" in line and not line.startswith("summary")]
    assert missing == [
        "missing: 3 cases outside this run's selection (-k 'shuffle'), not compared: join_big, ocean_anomaly, wordcount"
    ]
    html = render_report(store, baseline=base.run_id)
    assert 'data-verdict="missing"' not in html and "outside this run&#39;s selection (-k &#39;shuffle&#39;)" in html


def _every_shown_metric() -> dict[str, float]:
    """A plausible value of each metric ``show`` has a column for (a small cost: $0.000012)."""
    by_unit = {"s": 12.3, "bytes": int(1.1 * GIB), "usd": 1.17e-05, "fraction": 0.85, "count": 1234}
    return {m.name: by_unit[m.unit] for m in catalog.shown()}


def test_show_fits_120_columns_naming_each_case_once_above_its_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A swept case with long params: every line of ``show`` fits 120 columns, the case (with its memory
    and config) is one line above its two repeats, and every shown metric has a column."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store, run = Store(db), make_run()
    spec = ClusterSpec(
        "local", 2, 2, int(11.8 * GIB), 1.1, scheduler_config=(("distributed.worker.memory.target", "0.6"),)
    )
    case = Case("a_workload_with_a_long_name", {"size": "small", "input": "s3://bucket/" + "x" * 40}, spec)
    store.add_run(run)
    store.add_case(case)
    for repeat in (0, 1):
        store.add_measurement(make_measurement(run, case, repeat, **_every_shown_metric()))
    assert main(["show", run.run_id, "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    (first,) = [n for n, line in enumerate(lines) if line.startswith("a_workload_with_a_long_name")]
    label = lines[first] + lines[first + 1]  # wrapped between whole items, the second line indented
    assert "11.8GiB" in label and "memory.target=0.6" in label and "(3 slots)" in label
    assert [line.split()[:2] for line in lines[first + 2 :]] == [["r0", "passed"], ["r1", "passed"]]
    header = " ".join(lines[1:3]).split()
    assert all(word in header for m in catalog.shown() for word in m.short.split()) and "$0.000012" in lines[-1]
