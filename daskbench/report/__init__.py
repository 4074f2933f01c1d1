"""The comparison report: one self-contained HTML file (no network needed to open it).

    from daskbench.report import write_report
    path = write_report(store, "results/report.html", baseline="main")

`render_report` compares (``daskbench.judge.compare.compare_runs``, same selection arguments
as ``daskbench compare``) and renders; the modules below split the work: `data` reads
the store into plain records, `charts`/`trends`/`tradeoffs` build Bokeh figures, `tables`
makes the text rows, and `page` puts it all into `template.html` with BokehJS inlined once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from daskbench.judge.compare import compare_group, compare_runs
from daskbench.report.data import gather
from daskbench.report.page import render_page
from daskbench.store import Store

__all__ = ["render_report", "write_report"]


def render_report(
    store: Store,
    *,
    candidate: str | None = None,
    baseline: str | None = None,
    history: int | None = None,
    floors: Mapping[str, float] | None = None,
    allow_mixed: bool = False,
    ab: str | None = None,
) -> str:
    """The HTML of the report comparing ``candidate`` (default: the latest run) with ``baseline``
    (a baseline name or run id; default ``main``) or with each case's last ``history`` runs;
    or, with ``ab``, an interleaved A/B group judged by its per-round ratios (listed in the notes)."""
    if ab is not None:
        comparison = compare_group(store, ab, floors=floors)
    else:
        comparison = compare_runs(
            store, candidate=candidate, baseline=baseline, history=history, floors=floors, allow_mixed=allow_mixed
        )
    return render_page(gather(store, comparison, history_window=history))


def write_report(
    store: Store,
    output: str | Path,
    *,
    candidate: str | None = None,
    baseline: str | None = None,
    history: int | None = None,
    floors: Mapping[str, float] | None = None,
    allow_mixed: bool = False,
    ab: str | None = None,
) -> Path:
    """Render the report and write it to ``output`` (parent folders are created); returns the path."""
    html = render_report(
        store, candidate=candidate, baseline=baseline, history=history, floors=floors, allow_mixed=allow_mixed, ab=ab
    )
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
