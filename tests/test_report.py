"""The HTML comparison report: structure, data, escaping, charts and the CLI (no browser here)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bokeh.models import HBar, Line, Scatter, Text

from daskbench import catalog
from daskbench.cli import main
from daskbench.judge.compare import compare_runs
from daskbench.judge.format import comparison_to_json
from daskbench.report import render_report, write_report
from daskbench.report.charts import change_figure, memory_figure, representative
from daskbench.report.content import CASE_VERDICT, ReportData, gather
from daskbench.report.page import DATA_ELEMENT_ID, chart_groups, script_json
from daskbench.report.style import Palette
from daskbench.report.trends import history_figure
from daskbench.store import Store
from tests.report_data import (
    HOSTILE_LABEL,
    HOSTILE_MESSAGE,
    HOSTILE_URL,
    Element,
    ReportStore,
    build_report_store,
    parse_html,
    shared_report,
)


@pytest.fixture(scope="module")
def story() -> tuple[ReportStore, str]:
    return shared_report()


@pytest.fixture(scope="module")
def page(story: tuple[ReportStore, str]) -> Element:
    return parse_html(story[1])


@pytest.fixture(scope="module")
def data(story: tuple[ReportStore, str]) -> ReportData:
    store = story[0].store
    return gather(store, compare_runs(store))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> ReportStore:
    """One workload, three nightlies: quick to render, for tests that render again."""
    return build_report_store(
        tmp_path_factory.mktemp("small") / "db.sqlite", nightlies=3, workload_names=("wordcount",)
    )


def _embedded(page: Element) -> dict:
    return json.loads(page.one("script", id=DATA_ELEMENT_ID).text())


# -- structure -------------------------------------------------------------------------


def test_page_has_runs_differences_verdicts_and_one_section_per_workload(page: Element) -> None:
    """The top (runs, differences), the verdict table, then a section per workload."""
    for section_id in ("runs", "differences", "verdicts"):
        page.one(id=section_id)
    workloads = [section.one("h2").parts[0].strip() for section in page.select("section", cls="workload")]
    assert sorted(workloads) == ["array_sum", "ocean_anomaly", "wordcount"]


def test_runs_are_side_by_side_with_version_differences_marked(page: Element) -> None:
    """Baseline and candidate columns; the dask row, which differs, is highlighted."""
    table = page.one("table", cls="runs-table")
    assert [th.text() for th in table.one("thead").select("th")][1:] == ["Baseline: main", "Candidate"]
    labels = [td.text() for td in table.select("td", cls="label")]
    assert labels == ["nightly", "dask-2025.2.0"]
    dask_row = next(tr for tr in table.select("tr", cls="version") if tr.one("th").text() == "dask")
    assert "differs" in dask_row.classes
    assert [td.text() for td in dask_row.select("td")] == ["2025.1.0", "2025.2.0"]


def test_version_and_dask_config_differences_are_listed(page: Element) -> None:
    """The 'what else differs' tables name the changed package and config key with both values."""
    versions = page.one("table", data_diff="versions")
    config = page.one("table", data_diff="dask config")
    assert ["dask", "2025.1.0", "2025.2.0"] in [[td.text() for td in tr.select("td")] for tr in versions.select("tr")]
    assert ["array.chunk-size", "128MiB", "256MiB"] in [
        [td.text() for td in tr.select("td")] for tr in config.select("tr")
    ]


def test_verdict_table_has_one_body_per_metric_and_shows_runtime_first(page: Element) -> None:
    """One tbody per metric in catalog.compared() order; the body starts on runtime; one radio per metric."""
    bodies = page.one("table", id="verdict-table").select("tbody")
    assert [body.attrs["data-metric"] for body in bodies] == list(catalog.compared())
    assert page.one("body").attrs["data-metric"] == "runtime_s"
    radios = page.select("input", type="radio")
    assert [radio.attrs["value"] for radio in radios] == list(catalog.compared())
    assert "checked" in radios[0].attrs


def test_verdict_rows_are_sorted_by_effect_within_every_metric(page: Element) -> None:
    """Biggest effect first: data-effect never increases down a metric's rows."""
    for body in page.one("table", id="verdict-table").select("tbody"):
        effects = [math.inf if tr.attrs["data-effect"] == "inf" else float(tr.attrs["data-effect"])
                   for tr in body.select("tr")]  # fmt: skip
        assert len(effects) >= 18
        assert effects == sorted(effects, reverse=True)


def test_rows_are_coloured_by_their_verdict(page: Element) -> None:
    """Every row carries its verdict as a class (the colour) and as a badge."""
    rows = page.one("table", id="verdict-table").select("tr", cls=None)
    rows = [tr for tr in rows if "data-verdict" in tr.attrs]
    assert {tr.attrs["data-verdict"] for tr in rows} >= {"regressed", "improved", "newly-failing"}
    for tr in rows:
        assert f"v-{tr.attrs['data-verdict']}" in tr.classes
        assert f"v-{tr.attrs['data-verdict']}" in tr.one("span", cls="badge").classes


def test_newly_failing_case_heads_every_metric(page: Element) -> None:
    """The oom case is about the whole case: it leads the rows of every metric."""
    for body in page.one("table", id="verdict-table").select("tbody"):
        first = body.select("tr")[0]
        assert first.attrs["data-verdict"] == "newly-failing"
        assert "ocean_anomaly" in first.text() and "oom" in first.text()


def test_lede_names_what_got_worse(page: Element) -> None:
    """The first line says what regressed, per metric, before any table."""
    lede = page.one("p", cls="lede").text()
    assert "Got worse" in lede and "1 case newly failing" in lede and "runtime:" in lede


def test_embedded_json_round_trips_to_the_comparison(story: tuple[ReportStore, str], page: Element) -> None:
    """The page carries compare's JSON verbatim, plus where each case was drawn."""
    embedded = _embedded(page)
    expected = json.loads(json.dumps(comparison_to_json(compare_runs(story[0].store))))
    report = embedded.pop("report")
    assert embedded == expected
    drawn = {fp for section in report["sections"] for fp in section["cases"]}
    assert drawn == {v["fingerprint"] for v in expected["verdicts"]}


def test_every_chart_is_a_root_of_its_sections_bokeh_document(story: tuple[ReportStore, str], page: Element) -> None:
    """Each chart slot holds one Bokeh root; one embed script per section, inert until the page's script runs it
    (the page is usable before the charts are drawn), one copy of BokehJS, nothing fetched."""
    html = story[1]
    charts = page.select("div", cls="chart")
    listed = [key for section in _embedded(page)["report"]["sections"] for key in section["charts"]]
    assert [chart.attrs["data-chart"] for chart in charts] == listed
    assert all(
        len(chart.select("div", cls=None)) == 1 and "data-root-id" in chart.children[0].attrs for chart in charts
    )
    assert html.count("/* BEGIN bokeh.min.js */") == 1
    sections = _embedded(page)["report"]["sections"]
    later = [el for el in page.select("script") if el.attrs.get("type") == "text/x-daskbench-charts"]
    assert html.count("const docs_json") == len(later) == len(sections) > 1
    assert [el.attrs["data-section"] for el in later] == [section["id"] for section in sections]
    assert not [el for el in page.iter() if "src" in el.attrs or el.tag == "link"]


def test_the_charts_pass_bokehs_document_checks(data: ReportData) -> None:
    """Writing a report skips Bokeh's document validation (a sixth of its time): here it runs on every chart of
    the story report and finds no error and no warning."""
    from bokeh.core.validation.check import check_integrity
    from bokeh.document import Document

    palette = Palette(data.saturations, sorted({v.n_workers for s in data.sections for v in s.cases}))
    for section in data.sections:
        document = Document()
        for root in chart_groups(section, palette)[1].values():
            document.add_root(root)
        issues = check_integrity(list(document.models))
        assert issues.error == [] and issues.warning == [], section.workload


def test_writing_a_report_leaves_bokehs_validation_setting_as_it_was(small: ReportStore) -> None:
    from bokeh.settings import settings

    render_report(small.store)
    assert settings.perform_document_validation()


def test_report_is_small_enough_to_mail(story: tuple[ReportStore, str]) -> None:
    """BokehJS once plus 27 charts stays well under a 5 MB attachment."""
    assert len(story[1].encode()) < 3 * 2**20


# -- escaping --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportStore, str]:
    written = build_report_store(
        tmp_path_factory.mktemp("hostile") / "db.sqlite",
        candidate_label=HOSTILE_LABEL,
        oom_message=HOSTILE_MESSAGE,
        candidate_ci_url=HOSTILE_URL,
        nightlies=2,
        workload_names=("ocean_anomaly",),
    )
    return written, render_report(written.store)


def test_text_from_the_store_is_shown_as_text(hostile: tuple[ReportStore, str], page: Element) -> None:
    """A script-tag label and an img-tag error message appear as text and add no elements."""
    html = hostile[1]
    page = parse_html(html)
    scripts = 4 + len(_embedded(page)["report"]["sections"])  # BokehJS (2), the data, the page's JS, an embed a section
    assert HOSTILE_LABEL not in html and "<img" not in html
    assert len(page.select("script")) == scripts == html.count("</script")
    assert HOSTILE_LABEL in page.one("table", cls="runs-table").text()
    assert "<img src=x onerror=alert(2)>" in page.one("table", id="verdict-table").text()


def test_javascript_urls_are_not_links(hostile: tuple[ReportStore, str]) -> None:
    """A CI url that is not http(s) is shown, but never becomes an href."""
    page = parse_html(hostile[1])
    assert HOSTILE_URL in page.one("table", cls="runs-table").text()
    assert not [a for a in page.select("a") if a.attrs.get("href", "").startswith("javascript")]


def test_embedded_json_hides_tag_characters_and_round_trips(hostile: tuple[ReportStore, str]) -> None:
    """Inside the data script, <, > and & are \\u escapes; parsing gives back the exact label."""
    page = parse_html(hostile[1])
    raw = page.one("script", id=DATA_ELEMENT_ID).text()
    assert not {"<", ">", "&"} & set(raw)
    assert json.loads(raw)["candidate_run"]["label"] == HOSTILE_LABEL


def test_script_json_escapes_everything_that_could_end_a_script() -> None:
    """script_json keeps JSON valid and free of <, > and &."""
    value = {"a": "</script><!-- & -->", "b": ["\u2028", 1.5]}
    text = str(script_json(value))
    assert not {"<", ">", "&"} & set(text)
    assert json.loads(text) == value


# -- data and charts -------------------------------------------------------------------


def test_band_is_never_narrower_than_the_floor(data: ReportData) -> None:
    """A value inside the band does not count as a change: the band spans at least the floor."""
    for view in (view for section in data.sections for view in section.cases):
        for metric, band in view.bands.items():
            assert band.low < band.median < band.high
            assert band.high / band.median >= 1.1 - 1e-9, (view.label, metric)


def test_history_marks_the_run_that_lost_a_worker(data: ReportData) -> None:
    """The nightly that lost a worker is a failed point in that case's history, not dropped."""
    section = next(s for s in data.sections if s.workload == "wordcount")
    view = next(v for v in section.cases if v.n_workers == 2 and v.saturation == 1.0)
    failed = [p for p in view.history if p.outcome != "passed"]
    assert [(p.run_id, p.outcome) for p in failed] == [("nightly-05", "worker-lost")]
    assert view.history[-1].role == "candidate" and view.history[-2].role == "baseline"


def test_history_window_limits_the_runs_shown(story: tuple[ReportStore, str]) -> None:
    """With a window of 5, each case shows its 5 latest runs, ending with the candidate."""
    store = story[0].store
    found = gather(store, compare_runs(store), history_window=5)
    for view in (view for section in found.sections for view in section.cases):
        assert [p.run_id for p in view.history] == ["nightly-09", "nightly-10", "nightly-11", "nightly-12", "candidate"]


def test_representative_repeat_is_the_median_runtime_or_the_longest_failure(data: ReportData) -> None:
    """The memory chart draws the median-runtime repeat; for a failed case, the longest failed one."""
    view = data.sections[0].cases[0]
    chosen = representative(view.candidate)
    runtimes = sorted(m.runtime_s for m in view.candidate)
    assert chosen is not None and chosen.runtime_s == runtimes[1]
    oom = next(v for s in data.sections for v in s.cases if CASE_VERDICT in v.verdicts)
    failed = representative(oom.candidate)
    assert failed is not None and failed.outcome == "oom"


def test_memory_chart_has_a_line_per_saturation_and_side(data: ReportData) -> None:
    """Three saturations x (candidate, baseline) lines, and a cross where the oom repeat stopped."""
    section = next(s for s in data.sections if s.workload == "ocean_anomaly")
    fig = memory_figure(section, 1, Palette(data.saturations))
    lines = [r for r in fig.renderers if isinstance(r.glyph, Line)]
    crosses = [r for r in fig.renderers if isinstance(r.glyph, Scatter) and r.glyph.marker == "x"]
    assert len(lines) == 6 and len(crosses) == 1
    dashes = [tuple(r.glyph.line_dash) for r in lines]  # bokeh stores "solid" as () and "dashed" as a pattern
    assert dashes.count(()) == 3 and len(set(dashes)) == 2


def test_change_chart_bars_are_the_verdict_ratios(data: ReportData) -> None:
    """One bar per case; its length is the verdict's ratio as a percent; the oom case has none."""
    section = next(s for s in data.sections if s.workload == "array_sum")
    fig = change_figure(section, "runtime_s")
    source = next(r for r in fig.renderers if isinstance(r.glyph, HBar)).data_source
    assert source.data["case"] == [view.label for view in section.cases]
    expected = [(view.verdicts["runtime_s"].ratio - 1) * 100 for view in section.cases]
    assert source.data["pct"] == pytest.approx(expected)


def test_history_chart_carries_every_metric_for_the_switch(data: ReportData) -> None:
    """Each data source has a column per metric; the drawn column starts as the first metric."""
    section = data.sections[0]
    fig = history_figure(section, 2, Palette(data.saturations))
    sources = list(
        {r.data_source.id: r.data_source for r in fig.renderers if r.data_source.name == "history-points"}.values()
    )
    assert len(sources) == 3  # one per worker-saturation
    for source in sources:
        assert {f"y__{metric}" for metric in catalog.compared()} <= set(source.data)
        assert source.data["y"] == source.data[f"y__{catalog.compared()[0]}"]
    assert set(fig.tags[0]["titles"]) == set(catalog.compared())


def test_new_and_missing_cases_get_rows_and_only_the_candidates_get_sections(
    store: Store, factories: dict[str, Callable[..., Any]]
) -> None:
    """A workload only in the baseline is a missing row without a section; one only in the candidate is new and drawn."""
    make_run, make_case, make_measurement = factories["run"], factories["case"], factories["measurement"]
    base = make_run(run_id="run-a", started_at="2025-01-01T00:00:00+00:00")
    cand = make_run(run_id="run-b", started_at="2025-01-02T00:00:00+00:00")
    gone, added = make_case("wordcount"), make_case("array_sum")
    for run, case in ((base, gone), (cand, added)):
        store.add_run(run)
        store.add_case(case)
        store.add_measurement(make_measurement(run, case))
    page = parse_html(render_report(store, baseline="run-a", candidate="run-b"))
    rows = page.one("tbody", data_metric="runtime_s").select("tr")
    assert sorted(tr.attrs["data-verdict"] for tr in rows) == ["missing", "new"]
    assert [section.attrs["aria-label"] for section in page.select("section", cls="workload")] == ["array_sum"]


def test_a_chart_without_data_says_so(store: Store, factories: dict[str, Callable[..., Any]]) -> None:
    """A first run whose only repeat died leaves the scaling charts empty: they carry a note instead."""
    run, case = factories["run"](), factories["case"]("ocean_anomaly")
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(factories["measurement"](run, case, outcome="oom", runtime_s=None, message="boom"))
    comparison = compare_runs(store)
    section = gather(store, comparison).sections[0]
    _, roots = chart_groups(section, Palette((case.cluster.worker_saturation,)))
    notes = {key for key, fig in roots.items() for r in fig.renderers if isinstance(r.glyph, Text)
             and r.data_source.data.get("text") == ["nothing to draw: no passing repeats on either side"]}  # fmt: skip
    assert any("settings" in key for key in notes)
    assert all(fig.renderers for fig in roots.values())


# -- modes and the command line --------------------------------------------------------


def test_history_mode_report_says_so(story: tuple[ReportStore, str]) -> None:
    """--history 30: the page is labelled history and records the window."""
    page = parse_html(render_report(story[0].store, history=30))
    assert page.one("span", cls="mode").text() == "history"
    assert _embedded(page)["mode"] == "history"
    assert _embedded(page)["report"]["history_window"] == 30


def test_any_two_runs_can_be_compared(small: ReportStore) -> None:
    """--baseline RUN --candidate RUN: the page compares exactly those runs."""
    page = parse_html(render_report(small.store, baseline="nightly-01", candidate="nightly-02"))
    embedded = _embedded(page)
    assert embedded["candidate_run"]["run_id"] == "nightly-02"
    assert [run["run_id"] for run in embedded["baseline_runs"]] == ["nightly-01"]


def test_write_report_creates_folders(small: ReportStore, tmp_path: Path) -> None:
    """The output's parent folders are created; the file is the rendered page."""
    path = write_report(small.store, tmp_path / "a" / "b" / "report.html")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_writes_the_report_and_prints_its_size(
    small: ReportStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """daskbench report -o PATH: exit 0, the file exists, and the path and size are printed."""
    output = tmp_path / "review.html"
    assert main(["report", "--db", small.url, "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    assert output.exists() and str(output) in printed and "MiB" in printed


def test_cli_report_with_unknown_baseline_fails_with_a_hint(
    small: ReportStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown baseline is exit 2 with a message that says where to look; no file is written."""
    output = tmp_path / "never.html"
    assert main(["report", "--db", small.url, "--baseline", "nope", "-o", str(output)]) == 2
    assert "nope" in capsys.readouterr().err
    assert not output.exists()


def test_cli_report_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    """daskbench report --help exits 0 and documents every option."""
    with pytest.raises(SystemExit) as exited:
        main(["report", "--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    for option in ("--baseline", "--candidate", "--history", "--output", "--db"):
        assert option in shown
