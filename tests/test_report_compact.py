"""The report's compact form: a long report's section charts as static inline SVG (report/compact.py, svg.py).

The story store of tests/report_data.py, rendered in the compact form (forced: it has 18 cases, a long report
has over `page.COMPACT_CASES`): no Bokeh at all, one trend chart per case and compared metric with its runs, the
candidate and the failed runs marked, change bars and memory lines per section, store text escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench import catalog
from daskbench.cli import main
from daskbench.report import page, render_report
from daskbench.report.svg import Frame, Labels, Series, chart, extent
from tests.report_data import HOSTILE_LABEL, HOSTILE_MESSAGE, Element, ReportStore, build_report_store, parse_html


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReportStore]:
    yield build_report_store(tmp_path_factory.mktemp("compact") / "db.sqlite")


@pytest.fixture(scope="module")
def html(story: ReportStore) -> str:
    return render_report(story.store, compact=True)


def _history_charts(root: Element) -> list[Element]:
    return [el for el in root.select("div", "chart") if "-history-" in el.attrs["data-chart"]]


def test_a_compact_report_has_no_bokeh(html: str) -> None:
    """Nothing for the browser to run: no BokehJS, no chart scripts, no Bokeh roots; the page's own script only."""
    assert _scripts(html) == ['<script type="application/json" id="daskbench-data">', "<script>"]
    assert "data-root-id" not in html


def _scripts(html: str) -> list[str]:
    return re.findall(r"<script[^>]*>", html)


def test_a_long_reports_trend_chart_is_an_inline_svg_with_its_points(story: ReportStore, html: str) -> None:
    """One chart slot per case, holding one SVG per compared metric; its line passes through every passed run
    (12 nightlies and the candidate), and the candidate is a diamond with a tooltip."""
    root = parse_html(html)
    slots = _history_charts(root)
    assert len(slots) == len(story.cases)
    for slot in slots:
        svgs = slot.select("svg", "mini")
        assert [svg.attrs["data-metric"] for svg in svgs] == list(catalog.compared())
    runtime = [svg for slot in slots for svg in slot.select("svg", data_metric="runtime_s")]
    vertices = [len(re.findall(r"[ML]", path.attrs["d"])) for svg in runtime for path in svg.select("path")[1:2]]
    assert max(vertices) == 13  # 12 nightlies and the candidate, in one line
    diamonds = [poly for svg in runtime for poly in svg.select("polygon")]
    assert len(diamonds) == len(story.cases) - 1  # the one whose candidate died of memory is a cross
    assert all(poly.one("title").text().startswith("candidate ") for poly in diamonds)


def test_the_regressed_candidate_is_red_and_a_failed_run_a_cross(html: str) -> None:
    """array_sum got 30% slower: its candidate's runtime diamond is the regressed colour; the night a worker was
    lost, and the candidate's oom, are crosses whose tooltips say what failed."""
    root = parse_html(html)
    regressed = [svg for svg in root.select("svg", data_metric="runtime_s", data_verdict="regressed")]
    assert regressed
    assert all(svg.one("polygon").attrs["fill"] == "#c62828" for svg in regressed)
    crosses = [path for svg in root.select("svg", data_metric="runtime_s") for path in svg.select("path")
               if path.select("title")]  # fmt: skip
    said = " ".join(path.one("title").text() for path in crosses)
    assert "oom" in said and "CommClosedError" in said


def test_compact_sections_have_change_bars_and_memory_lines(story: ReportStore, html: str) -> None:
    """Per section: memory over time per cluster size, change bars for runtime and peak memory (one per case)."""
    root = parse_html(html)
    sections = root.select("section", "workload")
    assert len(sections) == 3
    for section in sections:
        keys = [el.attrs["data-chart"] for el in section.select("div", "chart")]
        assert len([k for k in keys if "-memory-" in k]) == 2  # one and two workers
        change = [k for k in keys if "-change-" in k]
        assert [k.rsplit("-", 1)[-1] for k in change] == ["runtime_s", "peak_memory_bytes"]
        bars = section.one("div", "chart", data_chart=change[0]).one("svg").select("rect")
        assert len(bars) == 1 + len(story.cases) // 3  # the floor band and one bar per case


def test_a_report_over_the_case_limit_is_compact_by_default(
    story: ReportStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page, "COMPACT_CASES", 5)
    assert len(_scripts(render_report(story.store))) == 2


def test_report_charts_flag_chooses_the_form(story: ReportStore, tmp_path: Path) -> None:
    """``daskbench report --charts compact`` draws a short report compact; ``interactive`` keeps Bokeh."""
    counts = {}
    for form in ("compact", "interactive"):
        out = tmp_path / f"{form}.html"
        assert main(["report", "--db", story.url, "--charts", form, "-o", str(out)]) == 0
        counts[form] = len(_scripts(out.read_text(encoding="utf-8")))
    assert counts["compact"] == 2 and counts["interactive"] > 2  # BokehJS and a chart script per section


def test_store_text_in_svg_stays_text(tmp_path: pytest.TempPathFactory) -> None:
    """A hostile label and error message reach the SVG tooltips escaped, never as markup."""
    written = build_report_store(tmp_path / "db.sqlite", candidate_label=HOSTILE_LABEL,  # type: ignore[operator]
                                 oom_message=HOSTILE_MESSAGE, nightlies=2, workload_names=("ocean_anomaly",))  # fmt: skip
    text = render_report(written.store, compact=True)
    assert "<script>alert(1)" not in text and "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text


def test_a_line_breaks_where_a_value_is_missing() -> None:
    svg = chart([Series([(0, 1.0), (1, None), (2, 2.0), (3, 3.0)], "#000")], Frame((0, 3), (0, 3), 200, 80),
                Labels("x", ("a", "b"), ("0", "3")))  # fmt: skip
    line = re.search(r'<path d="(M[^"]*)" fill="none" stroke="#000"', svg)
    assert line is not None and line.group(1).count("M") == 2 and line.group(1).count("L") == 1


def test_extent_pads_and_widens_a_single_value() -> None:
    low, high = extent([5.0, 5.0], minimum=2.0)
    assert low < 4.0 and high > 6.0
    assert extent([]) == (0.0, 1.0)
