"""History charts: each metric of each case over its recent runs, with the baseline band.

One figure per cluster size, holding every metric: each data source carries one column
per metric (``y__runtime_s``, ...) and the page's metric switch copies the chosen one
into the drawn column (``y``), so one switch changes the table and every history chart,
and the page draws a quarter of the figures four tabs would need. Initially the first
metric of `catalog.compared()` is drawn. Models the switch touches are named ``history-...`` and
the figure's ``tags`` hold its title and axis label per metric.

A run whose repeats failed is a cross; the candidate is a large diamond, baseline runs
are hollow squares; the shaded band is where a value counts as unchanged (`data._band`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, cast

from bokeh.models import (
    ColumnDataSource,
    DataRange1d,
    DatetimeTickFormatter,
    HoverTool,
    Line,
    Range1d,
    Scatter,
    VArea,
)
from bokeh.models.annotations import Legend, LegendItem
from bokeh.models.renderers import GlyphRenderer
from bokeh.plotting import figure

from daskbench import catalog
from daskbench.report.content import CaseView, RunPoint, Section
from daskbench.report.style import FAILED_MARKER, Palette, draw, new_figure, style_legend, unit_of, workers_text
from daskbench.text import saturation_text

ROLE_MARKERS = {"history": ("circle", 6.0), "baseline": ("square", 8.0), "candidate": ("diamond", 15.0)}
FIGURE_NAME, POINTS_NAME, BAND_NAME = "history-figure", "history-points", "history-band"
#: Columns that exist once per metric (``name__metric``) and are copied to ``name`` on a switch.
SWITCHED = ("y", "line", "text", "low", "mid", "high")


def history_figure(section: Section, n_workers: int, palette: Palette) -> figure:
    """Every case of this cluster size over its recent runs; the metric follows the page's switch."""
    first = catalog.compared()[0]
    fig = new_figure(_title(first, n_workers), "run started", _axis(first), x_axis_type="datetime")
    fig.name = FIGURE_NAME
    views = [view for view in section.cases if view.n_workers == n_workers]
    _readable_time_axis(fig, [_when(p.started_at) for view in views for p in view.history])
    fig.tags = [
        {
            "titles": {m: _title(m, n_workers) for m in catalog.compared()},
            "axes": {m: _axis(m) for m in catalog.compared()},
        }
    ]
    items = [
        LegendItem(label=f"sat {saturation_text(view.saturation)}", renderers=_series(fig, view, palette))
        for view in views
    ]
    fig.add_layout(Legend(items=[item for item in items if item.renderers]), "center")
    style_legend(fig)
    fig.add_tools(
        HoverTool(
            tooltips=[
                ("run", "@run"),
                ("started", "@started"),
                ("case", "@case"),
                ("value", "@text"),
                ("outcome", "@outcome"),
                ("", "@message"),
            ]
        )
    )
    return fig


#: The shortest span the time axis shows, in ms: one run alone is a point on a day, not on microseconds.
MIN_SPAN_MS = 24 * 3600 * 1000.0
#: The room left past the newest run and before the oldest, as a share of the span shown.
EDGE = 0.02


def _readable_time_axis(fig: figure, times: list[datetime]) -> None:
    """Dates and clock times at every zoom level, at least a day wide, for one run or many; the axis ends just
    past the newest run (a day widened into the past, never hours into a future no run has reached)."""
    if times:
        start, end = time_span(times)
        fig.x_range = Range1d(start=start, end=end, min_interval=MIN_SPAN_MS)
    else:
        cast(DataRange1d, fig.x_range).min_interval = MIN_SPAN_MS
    clock, day = "%H:%M", "%Y-%m-%d"
    fig.xaxis.formatter = DatetimeTickFormatter(
        microseconds=clock,
        milliseconds=clock,
        seconds=clock,
        minsec=clock,
        minutes=clock,
        hourmin=f"{day} {clock}",
        hours=f"{day} {clock}",
        days=day,
        months="%Y-%m",
        years="%Y",
    )


def time_span(times: list[datetime]) -> tuple[float, float]:
    """(start, end) of the time axis in ms since the epoch (a naive time read as UTC, as bokeh reads it): the runs'
    span, at least `MIN_SPAN_MS`, widened into the past, with `EDGE` of room at each end."""
    ms = [(t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp() * 1000.0 for t in times]
    span = max(max(ms) - min(ms), MIN_SPAN_MS)
    return max(ms) - span * (1 + EDGE), max(ms) + span * EDGE


def _title(metric: str, n_workers: int) -> str:
    return f"{unit_of(metric).title} over the last runs · {workers_text(n_workers)}"


def _axis(metric: str) -> str:
    return f"{unit_of(metric).short} ({unit_of(metric).symbol})"


def _series(fig: figure, view: CaseView, palette: Palette) -> list[GlyphRenderer]:
    """Band, line and markers of one case; all hide together from the legend."""
    color = palette.color(view.saturation)
    points = list(view.history)
    if not points:
        return []
    band = ColumnDataSource(_band_columns(view, points), name=BAND_NAME)
    source = ColumnDataSource(_point_columns(view, points, color), name=POINTS_NAME)
    markers = Scatter(
        x="x", y="y", marker="marker", size="size", line_color=color, fill_color="fill", line_width="width"
    )
    return [
        draw(fig, VArea(x="x", y1="low", y2="high", fill_color=color, fill_alpha=0.1), band),
        draw(fig, Line(x="x", y="mid", line_color=color, line_dash="dotted", line_alpha=0.7), band),
        draw(fig, Line(x="x", y="line", line_color=color, line_width=1.6), source),
        draw(fig, markers, source),
    ]


def _band_columns(view: CaseView, points: list[RunPoint]) -> dict[str, list[Any]]:
    """The band spans the charted runs; NaN where a metric has no band (nothing is drawn)."""
    columns: dict[str, list[Any]] = {"x": [_when(points[0].started_at), _when(points[-1].started_at)]}
    for metric in catalog.compared():
        band, unit = view.bands.get(metric), unit_of(metric)
        for name, value in (("low", band and band.low), ("mid", band and band.median), ("high", band and band.high)):
            columns[f"{name}__{metric}"] = [_scaled(unit(value) if value else None)] * 2
    return _with_initial(columns)


def _point_columns(view: CaseView, points: list[RunPoint], color: str) -> dict[str, list[Any]]:
    """One row per run; ``line`` is NaN where a run failed, so the line breaks and the cross stands alone."""
    styles = [_marker(p, color) for p in points]
    columns: dict[str, list[Any]] = {
        "x": [_when(p.started_at) for p in points],
        "run": [f"{p.label} ({p.run_id[:8]}, {p.role})" for p in points],
        "started": [p.started_at for p in points],
        "case": [view.label] * len(points),
        "outcome": [p.outcome for p in points],
        "message": [p.message[:200] for p in points],
        "marker": [style[0] for style in styles],
        "size": [style[1] for style in styles],
        "fill": [style[2] for style in styles],
        "width": [style[3] for style in styles],
    }
    for metric in catalog.compared():
        unit, fallback = unit_of(metric), _fallback(view, metric, points)
        values = [p.values.get(metric) for p in points]
        columns[f"y__{metric}"] = [_scaled(unit(v if v is not None else fallback)) for v in values]
        columns[f"line__{metric}"] = [
            _scaled(unit(v) if p.outcome == "passed" else None) for p, v in zip(points, values, strict=True)
        ]
        columns[f"text__{metric}"] = [unit.text(v) for v in values]
    return _with_initial(columns)


def _with_initial(columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Copy the first metric's columns to the drawn names, as the switch does in the page."""
    first = catalog.compared()[0]
    for name in SWITCHED:
        if f"{name}__{first}" in columns:
            columns[name] = list(columns[f"{name}__{first}"])
    return columns


def _scaled(value: float | None) -> float:
    return math.nan if value is None else value


def _marker(point: RunPoint, color: str) -> tuple[str, float, str, float]:
    """(marker, size, fill colour, line width): a cross for a failed run, else by the run's role."""
    if point.outcome != "passed":
        return FAILED_MARKER, 14.0, color, 3.0
    marker, size = ROLE_MARKERS[point.role]
    return marker, size, "white" if point.role == "baseline" else color, 1.5


def _fallback(view: CaseView, metric: str, points: list[RunPoint]) -> float | None:
    """Where to draw a failed run that has no value: the band's median, else the last value."""
    band = view.bands.get(metric)
    if band is not None:
        return band.median
    values = [v for p in points if (v := p.values.get(metric)) is not None]
    return values[-1] if values else None


def _when(started_at: str) -> datetime:
    return datetime.fromisoformat(started_at)
