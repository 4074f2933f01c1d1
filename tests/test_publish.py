"""daskbench publish: the static history site, written from a real store and opened offline in headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from daskbench.cli import main
from daskbench.store import Store
from tests.helpers import (
    CHROMIUM,
    add_results,
    add_run,
    make_case,
    metric_switch,
    needs_chromium,
    open_offline,
)
from tests.report_data import build_report_store

WORKLOADS = ("ocean_anomaly", "wordcount")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A site published from six nightlies and a candidate of two workloads, with the two newest runs' reports."""
    folder = tmp_path_factory.mktemp("site")
    store = build_report_store(folder / "r.db", nightlies=6, workload_names=WORKLOADS)
    assert main(["publish", "-o", str(folder / "site"), "--reports", "2", "--db", store.url]) == 0
    yield folder / "site"


def test_site_has_an_index_a_page_per_workload_and_run_reports(site: Path) -> None:
    """index.html links every workload's page and the reports it wrote, and each link resolves to a file."""
    index = (site / "index.html").read_text()
    assert sorted(p.name for p in (site / "workloads").iterdir()) == [f"{w}.html" for w in WORKLOADS]
    assert len(list((site / "runs").iterdir())) == 2
    for workload in WORKLOADS:
        assert f'href="workloads/{workload}.html"' in index
    assert index.count(">report</a>") == 2 and "run-failed" in index


def test_the_charting_library_is_one_file_the_pages_share(site: Path) -> None:
    """BokehJS is written once into static/ and every page with charts (workload pages, run reports) refers to it
    by a relative path instead of inlining its megabytes."""
    scripts = sorted((site / "static").glob("bokeh-*.js"), key=lambda path: path.stat().st_size)
    library = scripts[-1]
    assert library.stat().st_size > 500_000 and "Bokeh" in library.read_text()
    code = library.read_text()
    pieces = [code[n : n + 200] for n in (len(code) // 4, len(code) // 2)]  # from its body
    pages = [*(site / "workloads").iterdir(), *(site / "runs").iterdir()]
    for page in pages:
        html = page.read_text()
        assert f'<script src="../static/{library.name}"></script>' in html
        assert not [piece for piece in pieces if piece in html], f"{page.name} inlines the library"


def test_publish_of_an_empty_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A store with no runs is refused in one line, before any page is written."""
    assert main(["publish", "-o", str(tmp_path / "site"), "--db", f"sqlite:///{tmp_path / 'r.db'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and not (tmp_path / "site").exists()


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_page_opens_offline_and_draws_its_history(site: Path, workload: str) -> None:
    """Each workload page opens from disk in Chromium offline: no errors, no requests, every history chart
    drawn; the metric switch redraws them all in cost."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        for visit in open_offline(browser, site / "workloads" / f"{workload}.html"):
            assert visit.errors == [] and visit.requests[0] == (site / "workloads" / f"{workload}.html").as_uri()
            assert all(url.startswith((site / "static").as_uri()) for url in visit.requests[1:])
            titles = visit.page.evaluate(  # type: ignore[attr-defined]
                "() => Bokeh.documents.flatMap(d => [...d.all_models]).filter(m => m.name === 'history-figure').map(m => m.title.text)"
            )
            assert titles and all("over the last runs" in title for title in titles)
            assert visit.page.locator("h1").inner_text() == workload  # type: ignore[attr-defined]
            visit.page.click(metric_switch("cost_usd"))  # type: ignore[attr-defined]
            switched = visit.page.evaluate(  # type: ignore[attr-defined]
                "() => Bokeh.documents.flatMap(d => [...d.all_models]).filter(m => m.name === 'history-figure').map(m => m.title.text)"
            )
            assert len(switched) == len(titles) and all(title.startswith("Cost") for title in switched)
        browser.close()


def test_hostile_workload_names_and_labels_get_pages_of_their_own_and_stay_inert(tmp_path: Path) -> None:
    """A 10 KB workload name gets a page whose file name fits the file system; ``col.lide`` and ``col-lide`` get
    a page each (neither overwrites the other) and the index links both; an imported label's raw ESC and BEL
    bytes never reach index.html (shown escaped)."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    run = add_run(store, 1, label="night\x1b[31m\x07")
    names = ("w" * 10_000, "col.lide", "col-lide", "ocean_anomaly")
    for name in names:
        add_results(store, run, make_case(name), 1.0)
    assert main(["publish", "-o", str(tmp_path / "site"), "--reports", "1", "--db", store.url]) == 0
    index = (tmp_path / "site" / "index.html").read_text()
    pages = sorted((tmp_path / "site" / "workloads").iterdir())
    assert len(pages) == len(names) and max(len(page.name) for page in pages) <= 90
    assert (tmp_path / "site" / "workloads" / "ocean_anomaly.html").exists()  # a plain name keeps its page
    for page in pages:
        assert f'href="workloads/{page.name}"' in index
    assert "\x1b" not in index and "\x07" not in index and "night\\x1b[31m\\x07" in index
