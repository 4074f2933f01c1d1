"""``daskbench publish``: a static history site for GitHub Pages, self-contained like the report.

Why: "where does this data live?" A nightly's history belongs on a page anyone can open:
an index (every workload, the recent runs with their outcomes) and one page per workload
with the trend of each case over runs and commits (a metric switch redraws every chart
in runtime, memory or cost, as in the report), the baseline band and failed runs
marked, linking to each recent run's own report. Each page opens from disk with no
network: BokehJS is one file the pages share (``static/``, written once per site), and the
report's history charts (`daskbench.report.trends`), content (`daskbench.report.content`)
and styles are reused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from bokeh.model import Model
from markupsafe import Markup

import daskbench
from daskbench.judge.compare import compare
from daskbench.judge.selection import Selection
from daskbench.model import Run
from daskbench.report import tables, write_report
from daskbench.report.content import Section, drawn_first, gather
from daskbench.report.page import (
    COMPACT_CASES,
    SharedScripts,
    bokeh_js,
    embedded_later,
    metric_switch_css,
    static_text,
    template_environment,
)
from daskbench.report.style import Palette
from daskbench.report.tables import when_text
from daskbench.report.trends import history_figure
from daskbench.store import Store

#: The longest file name a page gets before its ``.html``, well inside every file system's 255 bytes.
NAME_LIMIT = 80
_HERE = resources.files(__name__)
_PLAIN = re.compile(f"[a-z0-9_-]{{1,{NAME_LIMIT}}}")
_REPORT = resources.files("daskbench.report")


@dataclass(frozen=True)
class RunRow:
    """One run on the index: when, what, how it went, and its report if one was written."""

    run: Run
    outcomes: str
    report: str | None


@dataclass(frozen=True)
class WorkloadPage:
    """One workload's page: its file name and the sections (parameter sets) drawn on it."""

    workload: str
    file: str
    sections: tuple[Section, ...]


def publish(
    store: Store,
    output: str | Path,
    *,
    history: int = 30,
    reports: int = 5,
    progress: Callable[[str], None] = print,
) -> Path:
    """Write the site into ``output``: index.html, workloads/<name>.html, runs/<id>.html and the scripts they
    share (static/); returns the index."""
    with store.snapshot():  # one run list for every page
        return _publish(store, Path(output), history, reports, progress)


def _publish(store: Store, root: Path, history: int, reports: int, progress: Callable[[str], None]) -> Path:
    (root / "workloads").mkdir(parents=True, exist_ok=True)
    (root / "runs").mkdir(exist_ok=True)
    comparison = compare(store, Selection(history=history, allow_mixed=True))
    data = gather(store, comparison, history_window=history)
    palette = Palette(data.saturations, tuple(sorted({v.n_workers for s in data.sections for v in s.cases})))
    pages = _workload_pages(data.sections)
    shared = SharedScripts(root / "static", "../static/")  # from runs/ and workloads/
    written = _run_reports(store, root, store.runs(limit=reports), history, shared, progress)
    rows = _run_rows(store, store.runs(limit=history), written)
    for page in pages:
        progress(f"  workload page {page.file}")
        html = _render_workload(page, palette, rows, history, shared)
        (root / "workloads" / page.file).write_text(html, encoding="utf-8")
    index = root / "index.html"
    index.write_text(_template("index.html").render(pages=pages, rows=rows, **_common()), encoding="utf-8")
    return index


def _workload_pages(sections: Sequence[Section]) -> list[WorkloadPage]:
    grouped: dict[str, list[Section]] = {}
    for section in sections:
        grouped.setdefault(section.workload, []).append(section)
    return [WorkloadPage(name, f"{_file_name(name)}.html", tuple(found)) for name, found in sorted(grouped.items())]


def _file_name(name: str) -> str:
    """A page's file name for ``name``: the name itself when it is plain (lower-case letters, digits, ``-``,
    ``_``) and short; else its plain characters cut to fit and a hash of the whole name, so two names never
    share a page (``col.lide`` and ``col-lide``, ``Ocean`` and ``ocean`` on a case-blind disk) and a name of any
    length fits the file system."""
    if _PLAIN.fullmatch(name):
        return name
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in name.lower())
    return f"{plain[: NAME_LIMIT - 13]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def _run_reports(
    store: Store,
    root: Path,
    runs: Sequence[Run],
    history: int,
    shared: SharedScripts,
    progress: Callable[[str], None],
) -> dict[str, str]:
    """Each recent run's own report (against its history), by run id -> path relative to the site."""
    written: dict[str, str] = {}
    for number, run in enumerate(runs, start=1):
        progress(f"  report {number}/{len(runs)}: run {run.run_id[:8]} ({run.label})")
        relative = f"runs/{_file_name(run.run_id)}.html"
        chosen = Selection(candidate=run.run_id, history=history, allow_mixed=True)
        write_report(store, root / relative, chosen, shared=shared)
        written[run.run_id] = relative
    return written


def _run_rows(store: Store, runs: Sequence[Run], written: dict[str, str]) -> list[RunRow]:
    rows = []
    counted = store.outcome_counts([run.run_id for run in runs])  # by the database: nothing decoded
    for run in runs:
        counts = counted.get(run.run_id, {})
        outcomes = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no measurements"
        rows.append(RunRow(run, outcomes, written.get(run.run_id)))
    return rows


#: A workload page draws the history charts (interactive: Bokeh) of at most this many cases, those whose verdicts
#: say something moved first (`drawn_first`): a workload of 10,000 cases took a gigabyte and more (issue 45).
DRAWN_CASES = COMPACT_CASES


def _render_workload(
    page: WorkloadPage, palette: Palette, rows: Sequence[RunRow], history: int, shared: SharedScripts
) -> str:
    roots: dict[str, Model] = {}
    scripts: list[str] = []
    divs: dict[str, str] = {}
    drawn = {section.slug for section in drawn_first(page.sections, DRAWN_CASES)}
    for index, section in enumerate(page.sections):  # a Bokeh document per section, drawn in turn (static.js)
        if section.slug not in drawn:
            continue
        section_roots = {f"s{index}-w{n}": history_figure(section, n, palette) for n in section.cluster_sizes}
        if section_roots:
            script, found = embedded_later(section_roots, f"s{index}")
            scripts.append(script)
            divs |= found
            roots |= section_roots
    return _template("workload.html").render(
        page=page,
        divs={key: Markup(div) for key, div in divs.items()},
        bokeh_js=bokeh_js(list(roots.values()), shared),
        bokeh_script=Markup("\n".join(scripts)),
        legend=palette.legend(),
        drawn=drawn,
        undrawn=_undrawn_line(page),
        rows=[row for row in rows if row.report],
        history=history,
        metrics=tables.metric_titles(),
        js=Markup(static_text("static.js")),
        **_common(),
    )


def _undrawn_line(page: WorkloadPage) -> str:
    cases = sum(len(section.cases) for section in page.sections)
    return (
        f"Not drawn: this workload has {cases} cases, and its page draws the charts of at most {DRAWN_CASES}, those "
        "whose latest verdicts say something moved first; the latest run's report has them all in its tables."
    )


def _common() -> dict[str, object]:
    return {
        "css": Markup(_REPORT.joinpath("static.css").read_text(encoding="utf-8") + metric_switch_css()),
        "when": when_text,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": daskbench.__version__,
    }


def _template(name: str):  # type: ignore[no-untyped-def]
    return template_environment(str(_HERE)).get_template(name)
