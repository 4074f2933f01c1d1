"""Charts across settings: runtime and cost against cluster size, runtime against memory.

They answer "which worker-saturation and which cluster size is fastest, leanest,
cheapest for this workload": medians over passing repeats, candidate solid/filled,
baseline dashed/hollow, a cross where the candidate failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from bokeh.models import (
    ColumnDataSource,
    DataRange1d,
    FixedTicker,
    HoverTool,
    Line,
    NumeralTickFormatter,
    Scatter,
    Segment,
)
from bokeh.models.annotations import Legend, LegendItem
from bokeh.models.renderers import GlyphRenderer
from bokeh.plotting import figure

from daskbench.judge import stats
from daskbench.model import Measurement
from daskbench.report.content import CaseView, Section, metric_values
from daskbench.report.style import (
    BASELINE_DASH,
    CANDIDATE_DASH,
    FAILED_MARKER,
    Palette,
    draw,
    new_figure,
    style_legend,
    unit_of,
)
from daskbench.text import saturation_text


def median_of(measurements: Sequence[Measurement], metric: str) -> float | None:
    values = metric_values(measurements, metric)
    return stats.median(values) if values else None


def scaling_figure(section: Section, metric: str, palette: Palette) -> figure:
    """``metric`` against the number of workers, one line per worker-saturation."""
    unit = unit_of(metric)
    fig = new_figure(f"{unit.title} against cluster size", "workers", f"{unit.short} ({unit.symbol})")
    fig.xaxis.ticker = FixedTicker(ticks=list(section.cluster_sizes))
    items = []
    for saturation in sorted({view.saturation for view in section.cases}):
        views = sorted((v for v in section.cases if v.saturation == saturation), key=lambda v: v.n_workers)
        renderers = [r for side in ("candidate", "baseline") for r in _scaling_line(fig, views, metric, side, palette)]
        if renderers:
            items.append(LegendItem(label=f"sat {saturation_text(saturation)}", renderers=renderers))
    fig.add_layout(Legend(items=items), "center")
    style_legend(fig, "bottom_left")
    fig.add_tools(HoverTool(tooltips=[("", "@series"), (unit.short, "@text")]))
    cast(DataRange1d, fig.y_range).start = 0
    if unit.symbol == "USD":
        fig.yaxis.formatter = NumeralTickFormatter(format="$0.0[000]")
    return fig


def _scaling_line(fig: figure, views: list[CaseView], metric: str, side: str, palette: Palette) -> list[GlyphRenderer]:
    unit, candidate = unit_of(metric), side == "candidate"
    rows = [(v, median_of(v.candidate if candidate else v.baseline, metric)) for v in views]
    shown = [(v, value) for v, value in rows if value is not None]
    if not shown:
        return []
    color = palette.color(views[0].saturation)
    source = ColumnDataSource(
        {
            "x": [v.n_workers for v, _ in shown],
            "y": [unit(value) for _, value in shown],
            "series": [f"{v.label} ({side})" for v, _ in shown],
            "text": [unit.text(value) for _, value in shown],
        }
    )
    dash, fill = (CANDIDATE_DASH, color) if candidate else (BASELINE_DASH, "white")
    found = [
        draw(fig, Line(x="x", y="y", line_color=color, line_dash=dash, line_width=2 if candidate else 1.5), source),
        draw(fig, Scatter(x="x", y="y", size=8, line_color=color, fill_color=fill, line_width=1.5), source),
    ]
    failed = [v for v, value in rows if value is None and candidate and any(not m.ok for m in v.candidate)]
    if failed:
        found.append(_failed_marks(fig, failed, metric, color))
    return found


def _failed_marks(fig: figure, views: list[CaseView], metric: str, color: str) -> GlyphRenderer:
    """A cross where the candidate failed, at the baseline's value (or at zero without one)."""
    unit = unit_of(metric)
    ys = [unit(median_of(v.baseline, metric) or 0.0) for v in views]
    source = ColumnDataSource(
        {
            "x": [v.n_workers for v in views],
            "y": ys,
            "series": [f"{v.label} (candidate failed: {_failure(v)})" for v in views],
            "text": ["-"] * len(views),
        }
    )
    return draw(fig, Scatter(x="x", y="y", marker=FAILED_MARKER, size=15, line_width=3, line_color=color), source)


def _failure(view: CaseView) -> str:
    return next((m.outcome for m in view.candidate if not m.ok), "failed")


def tradeoff_figure(section: Section, palette: Palette) -> figure:
    """Runtime against peak cluster memory, one point per setting; a segment from baseline to candidate."""
    fig = new_figure("Trade-off: runtime against peak memory", "peak cluster memory (GiB)", "runtime (s)")
    items = []
    for view in section.cases:
        renderers = _tradeoff_point(fig, view, palette)
        if renderers:
            items.append(LegendItem(label=view.label, renderers=renderers))
    fig.add_layout(Legend(items=items), "right")
    style_legend(fig, "top_left")
    fig.add_tools(HoverTool(tooltips=[("", "@series"), ("runtime", "@rt"), ("peak memory", "@mem")]))
    return fig


def _tradeoff_point(fig: figure, view: CaseView, palette: Palette) -> list[GlyphRenderer]:
    color, marker = palette.color(view.saturation), palette.marker(view.n_workers)
    sides = {side: _xy(view, side) for side in ("baseline", "candidate")}
    renderers = []
    if sides["baseline"] and sides["candidate"]:
        (x0, y0), (x1, y1) = sides["baseline"], sides["candidate"]
        segment = Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color=color, line_width=1.5, line_alpha=0.7)
        renderers.append(draw(fig, segment, {"x0": [x0], "y0": [y0], "x1": [x1], "y1": [y1]}))
    for side, point in sides.items():
        if point is None:
            continue
        source = ColumnDataSource(
            {
                "x": [point[0]],
                "y": [point[1]],
                "series": [f"{view.label} ({side})"],
                "rt": [f"{point[1]:.3g} s"],
                "mem": [f"{point[0]:.3g} GiB"],
            }
        )
        fill = color if side == "candidate" else "white"
        glyph = Scatter(x="x", y="y", marker=marker, size=11, line_color=color, fill_color=fill, line_width=1.8)
        renderers.append(draw(fig, glyph, source))
    return renderers


def _xy(view: CaseView, side: str) -> tuple[float, float] | None:
    ms = view.candidate if side == "candidate" else view.baseline
    memory, runtime = median_of(ms, "peak_memory_bytes"), median_of(ms, "runtime_s")
    if memory is None or runtime is None:
        return None
    return unit_of("peak_memory_bytes")(memory) or 0.0, runtime
