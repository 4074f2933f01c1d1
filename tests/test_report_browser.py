"""The report in a real headless Chromium, opened from disk with the network off.

Needs Debian's ``chromium`` at /usr/bin/chromium (ci/setup installs it); skipped without
it. Leaves a full-page screenshot in $DASKBENCH_SCREENSHOT_DIR for CI to keep as an
artifact (without it, in a temporary folder: tests never write into the checkout).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, READY, RENDERED, Visit, daskbench_cli, metric_switch, needs_chromium, open_offline
from tests.report_data import HOSTILE_LABEL, HOSTILE_MESSAGE, HOSTILE_URL, build_report_store, shared_report

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip

pytestmark = [pytest.mark.browser, needs_chromium]

HISTORY = """() => {
  const out = {titles: [], drawn: []};
  for (const model of Bokeh.documents.flatMap(doc => [...doc.all_models])) {
    if (model.name === "history-figure") out.titles.push(model.title.text);
    if (model.name === "history-points") {
      const data = model.data instanceof Map ? Object.fromEntries(model.data) : model.data;
      out.drawn.push(JSON.stringify(Array.from(data.y)) === JSON.stringify(Array.from(data.y__cost_usd)));
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def report(browser: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Visit]:
    path = tmp_path_factory.mktemp("browser") / "report.html"
    path.write_text(shared_report()[1], encoding="utf-8")
    yield from open_offline(browser, path)


def test_report_renders_offline_without_errors_or_requests(report: Visit) -> None:
    """From file:// with the network off: no console errors, no request but the file itself."""
    assert report.errors == []
    assert len(report.requests) == 1 and report.requests[0].startswith("file://")


def test_every_chart_is_drawn_with_a_size(report: Visit) -> None:
    """36 Bokeh roots (12 per workload: with the time breakdown, the cost-runtime frontier and the
    per-task memory bars), each with a non-zero box, and a canvas for each."""
    found = report.page.evaluate(RENDERED)  # type: ignore[attr-defined]
    assert len(found["roots"]) == 36
    assert all(width > 100 and height > 100 for width, height in found["roots"])
    assert len([c for c in found["canvases"] if c[0] > 0 and c[1] > 0]) >= 36


def test_metric_switch_changes_the_table_and_the_history_charts(report: Visit) -> None:
    """Choosing Cost shows the cost rows (and hides runtime's), and redraws history in cost."""
    page = report.page
    page.click(metric_switch("cost_usd"))  # type: ignore[attr-defined]
    assert page.get_attribute("body", "data-metric") == "cost_usd"  # type: ignore[attr-defined]
    assert page.is_visible('tbody[data-metric="cost_usd"]') and not page.is_visible('tbody[data-metric="runtime_s"]')  # type: ignore[attr-defined]
    first = page.inner_text('tbody[data-metric="cost_usd"] tr:nth-child(2)')  # type: ignore[attr-defined]
    assert "dearer" in first or "cheaper" in first
    history = page.evaluate(HISTORY)  # type: ignore[attr-defined]
    assert len(history["titles"]) == 6 and all(title.startswith("Cost") for title in history["titles"])
    assert history["drawn"] and all(history["drawn"])
    assert page.url.endswith("#metric=cost_usd")  # type: ignore[attr-defined]


def test_charts_drawn_after_the_page_opened_in_cost_are_drawn_in_cost(browser: object, tmp_path: Path) -> None:
    """Opened at #metric=cost_usd, the sections drawn one after another (each its own Bokeh document) all come
    in cost, and the page marks when every section is drawn."""
    path = tmp_path / "report.html"
    path.write_text(shared_report()[1], encoding="utf-8")
    context = browser.new_context(offline=True)  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(path.as_uri() + "#metric=cost_usd")
    page.wait_for_function("() => document.body.dataset.charts === 'all'", timeout=60_000)
    page.wait_for_function(READY, timeout=60_000)
    history = page.evaluate(HISTORY)
    assert page.evaluate("() => Bokeh.documents.length") == 3
    assert len(history["titles"]) == 6 and all(title.startswith("Cost") for title in history["titles"])
    assert history["drawn"] and all(history["drawn"])
    context.close()


def test_hide_unchanged_filters_rows(report: Visit) -> None:
    """The filter hides unchanged rows and leaves the others."""
    page = report.page
    page.click(metric_switch("runtime_s"))  # type: ignore[attr-defined]
    selector = 'tbody[data-metric="runtime_s"] tr.v-unchanged'
    assert page.is_visible(selector)  # type: ignore[attr-defined]
    page.check("#hide-unchanged")  # type: ignore[attr-defined]
    assert not page.is_visible(selector) and page.is_visible('tbody[data-metric="runtime_s"] tr.v-regressed')  # type: ignore[attr-defined]
    page.uncheck("#hide-unchanged")  # type: ignore[attr-defined]


def test_screenshot_is_kept_for_review(report: Visit, tmp_path: Path) -> None:
    """A full-page screenshot of the runtime view lands where CI collects artifacts (else a temporary folder)."""
    folder = Path(os.environ.get("DASKBENCH_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    report.page.click(metric_switch("runtime_s"))  # type: ignore[attr-defined]
    report.page.evaluate("window.scrollTo(0, 0)")  # type: ignore[attr-defined]
    shot = folder / "report-screenshot.png"
    report.page.screenshot(path=str(shot), full_page=True)  # type: ignore[attr-defined]
    assert shot.stat().st_size > 50_000


def test_hostile_store_text_never_runs(browser: object, tmp_path: Path) -> None:
    """Script and img tags in a label and an error message show as text: no dialog, no error."""
    written = build_report_store(tmp_path / "db.sqlite", candidate_label=HOSTILE_LABEL, oom_message=HOSTILE_MESSAGE,
                                 candidate_ci_url=HOSTILE_URL, nightlies=2, workload_names=("ocean_anomaly",))  # fmt: skip
    path = tmp_path / "hostile.html"
    from daskbench.report import write_report

    write_report(written.store, path)
    for visit in open_offline(browser, path):
        visit.page.click("text=" + HOSTILE_URL)  # type: ignore[attr-defined]
        assert visit.dialogs == [] and visit.errors == []
        assert HOSTILE_LABEL in visit.page.inner_text("table.runs-table")  # type: ignore[attr-defined]
        assert visit.page.evaluate("document.querySelectorAll('img').length") == 0  # type: ignore[attr-defined]


#: Every trade-off cell on the page: workload, workers, saturation, metric, raw value, and where it sits.
TRADEOFFS = """() => [...document.querySelectorAll("table.tradeoffs")].flatMap(table =>
  [...table.querySelectorAll("tbody tr")].flatMap(row => [...row.querySelectorAll("td[data-column]")].map(cell => ({
    workload: table.dataset.workload, workers: Number(table.dataset.workers), saturation: row.dataset.saturation,
    reference: table.dataset.reference,
    metric: cell.dataset.column, value: cell.dataset.value === "" ? null : Number(cell.dataset.value),
    ratio: cell.dataset.ratio === "" ? null : Number(cell.dataset.ratio), text: cell.innerText}))))"""


def _show_medians(url: str, run_id: str) -> dict[tuple[str, int, str, str], float]:
    """Medians over passing repeats per (workload, workers, saturation, metric), from ``daskbench show --format json``."""
    import json
    import statistics

    shown = daskbench_cli("show", run_id, "--db", url, "--format", "json", check=True)
    values: dict[tuple[str, int, str, str], list[float]] = {}
    for row in json.loads(shown.stdout)["measurements"]:
        for metric in ("peak_memory_bytes", "peak_worker_memory_bytes", "runtime_s", "cost_usd"):
            if row["outcome"] == "passed" and row[metric] is not None:
                key = (row["workload"], row["n_workers"], str(row["worker_saturation"]), metric)
                values.setdefault(key, []).append(float(row[metric]))
    return {key: statistics.median(found) for key, found in values.items()}


def test_tradeoff_summary_leads_and_matches_show_json(report: Visit) -> None:
    """The trade-off tables come before the verdicts, and their figures and ratios are show --format json's medians."""
    written, _ = shared_report()
    page = report.page
    top = page.evaluate(
        """() => ["tradeoffs", "verdicts"].map(id => document.getElementById(id).getBoundingClientRect().top)"""
    )  # type: ignore[attr-defined]
    assert top[0] < top[1]
    cells = page.evaluate(TRADEOFFS)  # type: ignore[attr-defined]
    expected = _show_medians(written.url, written.candidate_run)
    measured = [c for c in cells if c["value"] is not None]
    assert len(measured) >= 12
    for cell in measured:
        key = (
            cell["workload"],
            cell["workers"],
            _saturation_key(cell["saturation"]),
            cell["metric"],
        )
        assert cell["value"] == pytest.approx(expected[key], rel=1e-9), cell
        reference = expected[(*key[:2], _saturation_key(cell["reference"]), key[3])]
        assert cell["ratio"] == pytest.approx(expected[key] / reference, rel=1e-6), cell


def _saturation_key(text: str) -> str:
    """A saturation as show --format json spells it (``inf``, ``1.1``)."""
    return "inf" if text == "inf" else str(float(text))


#: Every chart slot of a compact report: its visible SVGs' sizes, and the metric each visible trend chart shows.
COMPACT = """() => [...document.querySelectorAll(".chart")].map(slot => [...slot.querySelectorAll("svg.mini")]
  .filter(svg => svg.getBoundingClientRect().width > 0)
  .map(svg => [svg.getBoundingClientRect().width, svg.getBoundingClientRect().height, svg.dataset.metric || ""]))"""


def test_a_compact_report_draws_every_chart_at_once_without_errors(browser: object, tmp_path: Path) -> None:
    """The compact form (static SVG): offline, no console errors and no requests; the page marks every chart
    drawn at once, each slot shows its SVG with a size, and the metric switch shows the cost trend charts only."""
    from daskbench.report import render_report

    written, _ = shared_report()
    path = tmp_path / "compact.html"
    path.write_text(render_report(written.store, compact=True), encoding="utf-8")
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    page.wait_for_function("() => document.body.dataset.charts === 'all'", timeout=60_000)
    slots = page.evaluate(COMPACT)
    assert len(slots) == 3 * (2 + 2 + 6)  # per section: memory on 1 and 2 workers, 2 change charts, 6 cases
    assert all(slot and all(w > 100 and h > 50 for w, h, _ in slot) for slot in slots)
    trends = [svg for slot in slots for svg in slot if svg[2]]
    assert len(trends) == 18 and {metric for _, _, metric in trends} == {"runtime_s"}
    page.click(metric_switch("cost_usd"))
    trends = [svg for slot in page.evaluate(COMPACT) for svg in slot if svg[2]]
    assert len(trends) == 18 and {metric for _, _, metric in trends} == {"cost_usd"}
    assert errors == [] and requests == [path.as_uri()]
    context.close()
