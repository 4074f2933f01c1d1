"""Where the time went, per case: stacked breakdown bars, baseline (A) next to candidate (B).

Each bar is the median ``time_breakdown`` (`daskbench.metrics.breakdown`) of one side's
passing repeats, in thread-seconds, one colour per activity; a changed runtime is then
read off as the segment that grew. Evidence kept with ``--evidence`` is listed per
case by `evidence_links`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bokeh.models import ColumnDataSource, FactorRange, HBar
from bokeh.models.annotations import Legend, LegendItem
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from bokeh.transform import stack

from daskbench.judge.explain import median_breakdown
from daskbench.metrics.breakdown import ACTIVITIES
from daskbench.model import Measurement
from daskbench.report.content import CaseView, Section
from daskbench.report.style import draw, new_figure

COLOURS = dict(zip(ACTIVITIES, Category10_10, strict=False))
SIDES = (("A", "baseline"), ("B", "candidate"))


def _bars(section: Section) -> tuple[list[tuple[str, str]], dict[str, list[float]]]:
    """(case label, side) factors and, per activity, the median seconds of each bar."""
    factors: list[tuple[str, str]] = []
    columns: dict[str, list[float]] = {activity: [] for activity in ACTIVITIES}
    for view in section.cases:
        for side, attribute in SIDES:
            medians = median_breakdown(getattr(view, attribute))
            if not medians:
                continue
            factors.append((view.label, side))
            for activity in ACTIVITIES:
                columns[activity].append(medians.get(activity, 0.0))
    return factors, columns


def breakdown_figure(section: Section) -> figure:
    """Stacked horizontal bars of thread-seconds by activity, A and B per case."""
    factors, columns = _bars(section)
    fig = new_figure(
        "Where the time went",
        "thread-seconds (workers x threads x runtime)",
        "",
        y_range=FactorRange(factors=list(reversed(factors))),
        height=max(170, 30 * len(factors) + 110),
    )
    if not factors:
        return fig
    source = ColumnDataSource({"y": factors, **columns})
    items = []
    below: list[str] = []
    for activity in ACTIVITIES:
        if not any(columns[activity]):
            continue
        left: Any = stack(*below) if below else 0.0
        below.append(activity)
        renderer = draw(
            fig,
            HBar(y="y", left=left, right=stack(*below), height=0.7, fill_color=COLOURS[activity], line_color="white"),
            source,
        )
        items.append(LegendItem(label=activity, renderers=[renderer]))
    fig.add_layout(Legend(items=items, orientation="horizontal", label_text_font_size="11px"), "below")
    return fig


def evidence_links(view: CaseView) -> list[tuple[str, str]]:
    """(text, file URI) of the evidence files kept for this case's measurements, baseline first: those still
    there when the page is made (``daskbench gc`` removes old runs' evidence; a dead link helps nobody)."""
    links: list[tuple[str, str]] = []
    for side, attribute in SIDES:
        measurements: Sequence[Measurement] = getattr(view, attribute)
        for m in measurements:
            for kind, path in sorted((m.extra.get("evidence") or {}).items()):
                if Path(str(path)).is_file():
                    links.append((f"{side} repeat {m.repeat}: {kind}", Path(str(path)).resolve().as_uri()))
    return links
