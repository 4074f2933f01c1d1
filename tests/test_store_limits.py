"""A store at its limits (issue 45): a run of many cases, a measurement with 1 MB of ``extra``, one case's long
history; ``compare``, ``report``, ``publish`` (and ``show``, ``export``) on each, in bounded time and memory.

The stores are written in seconds through the store's bulk path (`testing.big_store`, what ``import`` uses), at
sizes a test affords: 1,200 cases (past the report's 300 drawn cases and 1,000 quiet rows a table, the bounds that
keep a page of 10,000 cases usable), 5,000 runs of one case. ``measure/store-limits`` runs the sizes of the issue
(10,000 cases, 50,000 runs) and prints the figures docs/measured.md quotes. Each command runs as a user runs it, in
a fresh process under a wrapper that reports its wall time and peak memory (`_measured`); the bounds are generous
(a loaded machine runs several times slower), the page sizes and the charts drawn are exact.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from daskbench.report.page import DRAWN_CASES
from daskbench.report.tables import QUIET_ROWS
from daskbench.site import DRAWN_CASES as SITE_DRAWN_CASES
from daskbench.store import Store
from testing import big_store

#: Runs ``daskbench ARGS`` and prints its exit code, wall seconds and peak memory (MiB) as JSON; its own output
#: goes to the files named first.
MEASURE = """
import json, resource, subprocess, sys, time
out, err, *command = sys.argv[1:]
started = time.monotonic()
with open(out, "w") as o, open(err, "w") as e:
    code = subprocess.run([sys.executable, "-m", "daskbench", *command], stdout=o, stderr=e).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"code": code, "seconds": time.monotonic() - started, "mib": peak}))
"""
MIB = 1024 * 1024
CASES, HISTORY = 1200, 5000


@dataclass(frozen=True)
class Measured:
    code: int
    seconds: float
    mib: float
    out: str
    err: str


def _measured(tmp_path: Path, *command: str) -> Measured:
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    done = subprocess.run([sys.executable, "-c", MEASURE, str(out), str(err), *command], capture_output=True,
                          text=True, timeout=1200, check=True)  # fmt: skip
    found = json.loads(done.stdout)
    return Measured(found["code"], found["seconds"], found["mib"], out.read_text(), err.read_text())


def _store(tmp_path_factory: pytest.TempPathFactory, name: str, rows: big_store.Rows) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp(name) / f'{name}.db'}"
    big_store.write(Store(url), rows)
    return url


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two runs (``00000000-wide``, ``00000001-wide``) of the same 1,200 cases, 2 repeats each."""
    return _store(tmp_path_factory, "wide", partial(big_store.wide_rows, CASES, repeats=2))


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two runs of one case, each of its 3 measurements with 1 MB of text in ``extra``."""
    return _store(tmp_path_factory, "heavy", partial(big_store.heavy_rows, MIB))


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One case in 5,000 runs, the last 1.5x slower."""
    return _store(tmp_path_factory, "long", partial(big_store.history_rows, HISTORY, step=1.5))


# -- a run of many cases ------------------------------------------------------------------------------------------


def test_compare_of_two_runs_of_1200_cases_judges_every_case_in_bounded_time_and_memory(
    wide: str, tmp_path: Path
) -> None:
    """Every case judged (its metrics each a verdict: the summary counts them all), within 5 minutes and 400 MiB."""
    done = _measured(tmp_path, "compare", "--baseline", "00000000", "--candidate", "00000001", "--db", wide)
    assert done.code == 0, done.err
    summary = next(line for line in done.out.splitlines() if line.startswith("summary:"))
    assert sum(int(n) for n in re.findall(r"(\d+) \w+", summary)) == CASES * 3, summary
    assert done.seconds < 300 and done.mib < 400, done


def test_a_report_of_1200_cases_draws_the_charts_of_300_and_shows_1000_quiet_rows_a_metric(
    wide: str, tmp_path: Path
) -> None:
    """The report of a run of many cases draws the charts of at most 300 of them and says so in each section left
    undrawn; each metric's table shows at most 1,000 unchanged or inconclusive rows and says how many it left out;
    every verdict stays in the page's JSON. Its page and its time stay bounded (10,000 cases once took 154 s,
    1.1 GB and a 163 MiB page)."""
    page = tmp_path / "wide.html"
    done = _measured(tmp_path, "report", "--db", wide, "-o", str(page))
    assert done.code == 0, done.err
    html = page.read_text()
    drawn = set(re.findall(r'data-chart="(wl-\d+)-', html))  # a section a case here: its charts' keys begin so
    assert len(drawn) == DRAWN_CASES, len(drawn)
    assert html.count('class="caption undrawn"') == CASES - DRAWN_CASES
    left = re.findall(r"and (\d+) more unchanged or inconclusive rows", html)
    assert left and all(int(n) == CASES - QUIET_ROWS for n in left), left
    data = json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S)[1])
    assert len(data["verdicts"]) == CASES * 3
    assert page.stat().st_size < 12 * MIB and done.seconds < 400 and done.mib < 500, (page.stat().st_size, done)


def test_publishing_a_workload_of_1200_cases_draws_the_charts_of_100_on_its_page(wide: str, tmp_path: Path) -> None:
    """The site's workload page draws the interactive history charts of at most 100 cases (each section beyond
    says it is not drawn): a workload of many cases once grew the publishing process past a gigabyte."""
    done = _measured(tmp_path, "publish", "--db", wide, "-o", str(tmp_path / "site"), "--reports", "1")
    assert done.code == 0, done.err
    page = (tmp_path / "site" / "workloads" / "ocean_anomaly.html").read_text()
    assert page.count('<div class="chart">') == SITE_DRAWN_CASES
    assert page.count('class="caption undrawn"') == CASES - SITE_DRAWN_CASES
    assert done.seconds < 600 and done.mib < 500, done


# -- a measurement with 1 MB of extra --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "most"),
    [
        (["show", "00000001"], 20_000),
        (["show", "00000001", "--format", "json"], 20_000),
        (["compare", "--baseline", "00000000", "--candidate", "00000001"], 20_000),
        (["compare", "--baseline", "00000000", "--candidate", "00000001", "--format", "json"], 50_000),
        (["runs"], 20_000),
    ],
    ids=["show", "show-json", "compare", "compare-json", "runs"],
)
def test_a_measurement_with_1_mb_of_extra_is_read_without_its_extra_reaching_the_output(
    heavy: str, tmp_path: Path, command: list[str], most: int
) -> None:
    """What the commands print about a run whose measurements each carry 1 MB of ``extra`` stays small (``extra``
    is kept, not echoed) and is printed in bounded time and memory."""
    done = _measured(tmp_path, *command, "--db", heavy)
    assert done.code == 0, done.err
    assert len(done.out) < most and done.seconds < 120 and done.mib < 300, (len(done.out), done)


def test_a_report_a_site_and_an_export_of_1_mb_extras_stay_bounded_and_the_extra_survives_the_round_trip(
    heavy: str, tmp_path: Path
) -> None:
    """``report`` and ``publish`` do not embed the megabytes; ``export`` carries them whole, and ``import`` into a
    fresh store gives back the same 1 MB."""
    page, site, export = tmp_path / "heavy.html", tmp_path / "site", tmp_path / "heavy.jsonl"
    for command in (["report", "-o", str(page)], ["publish", "-o", str(site)], ["export", "-o", str(export)]):
        done = _measured(tmp_path, *command, "--db", heavy)
        assert done.code == 0 and done.seconds < 300 and done.mib < 300, (command, done)
    assert page.stat().st_size < 3 * MIB
    assert sum(path.stat().st_size for path in site.rglob("*.html")) < 12 * MIB
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert _measured(tmp_path, "import", str(export), "--db", fresh).code == 0
    (kept,) = {len(m.extra["note"]) for m in Store(fresh).measurements()}
    assert kept == MIB


# -- one case's long history -------------------------------------------------------------------------------------


def test_a_history_of_5000_runs_is_judged_from_its_window_and_finds_the_last_run_slower(
    long: str, tmp_path: Path
) -> None:
    """``compare --history 20`` on a case with 5,000 runs reads its last 20 good runs: the planted 1.5x step is a
    regression (exit 1), within bounded time and memory."""
    done = _measured(tmp_path, "compare", "--history", "20", "--db", long)
    assert done.code == 1, done.out + done.err
    assert re.search(r"regressed\s+runtime .* 1\.\d+x slower", done.out), done.out
    assert done.seconds < 120 and done.mib < 300, done


def test_a_report_and_a_site_of_5000_runs_draw_their_window_not_the_whole_history(long: str, tmp_path: Path) -> None:
    """The report and the site draw the last 30 runs of the case: their pages do not grow with the history."""
    page, site = tmp_path / "long.html", tmp_path / "site"
    for command in (["report", "-o", str(page)], ["publish", "-o", str(site), "--reports", "1"]):
        done = _measured(tmp_path, *command, "--db", long)
        assert done.code == 0 and done.seconds < 300 and done.mib < 300, (command, done)
    assert page.stat().st_size < 3 * MIB
    assert (site / "workloads" / "ocean_anomaly.html").stat().st_size < 3 * MIB
