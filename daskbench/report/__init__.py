"""The comparison report: one self-contained HTML file (no network needed to open it).

    from daskbench.report import write_report
    path = write_report(store, "results/report.html", baseline="main")

`render_report` compares what a `daskbench.judge.selection.Selection` asks for (as ``daskbench
compare`` does) and renders; the modules below split the work: `content` reads
the store into plain records, `charts`/`trends`/`tradeoffs` build Bokeh figures, `tables`
makes the text rows, and `page` puts it all into `template.html` with BokehJS inlined once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from daskbench.judge.compare import compare
from daskbench.judge.selection import Selection
from daskbench.report.content import gather
from daskbench.report.page import SharedScripts, render_page
from daskbench.store import Store
from daskbench.verdicts import Comparison

__all__ = ["SharedScripts", "render_report", "write_report"]


def render_report(
    store: Store,
    selection: Selection | None = None,
    *,
    shared: SharedScripts | None = None,
    compact: bool | None = None,
    judged: Comparison | None = None,
    **fields: Any,
) -> str:
    """The HTML of the report on what ``selection`` compares (or a `Selection` of ``fields``:
    ``candidate=``, ``baseline=``, ``history=``, ``ab_group=``...; by default the latest run against
    ``main``); an A/B group's verdicts come from its per-round ratios, listed in the notes. A page of a
    site refers to BokehJS in the site's ``shared`` scripts instead of inlining it. ``compact``: the section
    charts as static SVG (by default when the report has more than `page.COMPACT_CASES` cases). ``judged``: a
    comparison already made (``daskbench merge``'s of every shard), drawn instead of one the selection asks for."""
    chosen = selection or Selection(**fields)
    with store.snapshot():  # the comparison and what the page draws read one run list
        data = gather(store, judged or compare(store, chosen), history_window=chosen.history)
    return render_page(data, shared, compact=compact)


def write_report(
    store: Store,
    output: str | Path,
    selection: Selection | None = None,
    *,
    shared: SharedScripts | None = None,
    compact: bool | None = None,
    judged: Comparison | None = None,
    **fields: Any,
) -> Path:
    """Render the report and write it to ``output`` (parent folders are created); returns the path."""
    html = render_report(store, selection, shared=shared, compact=compact, judged=judged, **fields)
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
