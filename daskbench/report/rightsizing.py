"""Right-sizing charts: the cost-runtime frontier over every swept configuration, and
per-task peak memory per task prefix (``--task-memory``).

The frontier answers "what does a faster run cost here": one point per configuration of
the candidate (medians over passing repeats), the Pareto-optimal ones (no other is both
at least as fast and at least as cheap) joined by a line. The bars show, per task prefix,
the largest per-task peak and its 95th percentile over the candidate's measurements.
"""

from __future__ import annotations

from collections.abc import Sequence

from bokeh.models import ColumnDataSource, FactorRange, HBar, HoverTool, Line, NumeralTickFormatter, Scatter
from bokeh.models.annotations import Legend, LegendItem
from bokeh.plotting import figure

from daskbench.report.content import CaseView, Section
from daskbench.report.style import Palette, draw, new_figure, note_if_empty, style_legend
from daskbench.report.tradeoffs import median_of
from daskbench.text import format_bytes, format_usd

MIB = 2**20


def frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indexes of the Pareto-optimal (runtime, cost) points, fastest first: no other point is
    at least as fast and at least as cheap and better in one. ``[(1, 3), (2, 2), (3, 3)]`` -> [0, 1]."""
    best = [
        i
        for i, (rt, cost) in enumerate(points)
        if not any(r2 <= rt and c2 <= cost and (r2, c2) != (rt, cost) for r2, c2 in points)
    ]
    return sorted(dict.fromkeys(best), key=lambda i: points[i])


def frontier_figure(section: Section, palette: Palette) -> figure:
    """Cost against runtime, one point per configuration of the candidate; the frontier joined."""
    fig = new_figure("Cost against runtime, every configuration", "runtime (s)", "cost per run (USD)")
    views = [v for v in section.cases if median_of(v.candidate, "runtime_s") and median_of(v.candidate, "cost_usd")]
    points = [(median_of(v.candidate, "runtime_s") or 0.0, median_of(v.candidate, "cost_usd") or 0.0) for v in views]
    if not points:
        note_if_empty(fig, "no configuration of the candidate has both a runtime and a cost")
        return fig
    best = frontier(points)
    items = [
        _configuration_point(fig, view, point, palette, on_frontier=index in best)
        for index, (view, point) in enumerate(zip(views, points, strict=True))
    ]
    line = {"x": [points[i][0] for i in best], "y": [points[i][1] for i in best]}
    items.append(
        LegendItem(
            label="frontier", renderers=[draw(fig, Line(x="x", y="y", line_color="#59636e", line_dash="dashed"), line)]
        )
    )
    fig.add_layout(Legend(items=items), "right")
    style_legend(fig, "top_right")
    fig.yaxis.formatter = NumeralTickFormatter(format="$0.0[00000]")
    fig.add_tools(HoverTool(tooltips=[("", "@series"), ("runtime", "@rt"), ("cost", "@usd"), ("", "@best")]))
    return fig


def _configuration_point(
    fig: figure, view: CaseView, point: tuple[float, float], palette: Palette, *, on_frontier: bool
) -> LegendItem:
    """One configuration's point on `frontier_figure` (filled when on the frontier), as a legend item."""
    runtime, cost = point
    color, marker = palette.color(view.saturation), palette.marker(view.n_workers)
    source = ColumnDataSource(
        {
            "x": [runtime],
            "y": [cost],
            "series": [config_label(view)],
            "rt": [f"{runtime:.3g} s"],
            "usd": [format_usd(cost)],
            "best": ["on the frontier" if on_frontier else "dominated"],
        }
    )
    fill = color if on_frontier else "white"
    glyph = Scatter(x="x", y="y", marker=marker, size=11, line_color=color, line_width=1.8, fill_color=fill)
    return LegendItem(label=config_label(view), renderers=[draw(fig, glyph, source)])


def config_label(view: CaseView) -> str:
    """``1 worker · 2 threads · 4GiB · sat 1.1 (3 slots) · memory.target=0.6``: a configuration."""
    return view.label


def task_prefix_peaks(section: Section) -> list[tuple[str, int, int]]:
    """(prefix, largest peak, largest p95) over the candidate's measurements, largest first."""
    peaks: dict[str, tuple[int, int]] = {}
    for view in section.cases:
        for m in view.candidate:
            for task in m.tasks:
                old = peaks.get(task.prefix, (0, 0))
                peaks[task.prefix] = (max(old[0], task.peak_bytes), max(old[1], task.p95_bytes))
    return sorted(((p, peak, p95) for p, (peak, p95) in peaks.items()), key=lambda row: -row[1])


def task_memory_figure(section: Section) -> figure:
    """Horizontal bars per task prefix: the largest per-task peak and its p95 (MiB)."""
    rows = task_prefix_peaks(section)[:15]
    factors = [(prefix[:40], kind) for prefix, _, _ in rows for kind in ("peak", "p95")]
    fig = new_figure(
        "Per-task peak memory by task prefix (--task-memory)",
        "MiB above the task's start",
        "",
        y_range=FactorRange(factors=list(reversed(factors))),
        height=max(170, 22 * len(factors) + 110),
    )
    if not rows:
        note_if_empty(fig, "no per-task memory in this run: measure it with pytest -m benchmark --task-memory")
        return fig
    values = [value for _, peak, p95 in rows for value in (peak, p95)]
    source = ColumnDataSource(
        {
            "y": factors,
            "right": [v / MIB for v in values],
            "text": [format_bytes(v) for v in values],
            "color": ["#0969da", "#8fbff7"] * len(rows),
        }
    )
    draw(fig, HBar(y="y", left=0, right="right", height=0.7, fill_color="color", line_color="white"), source)
    fig.add_tools(HoverTool(tooltips=[("", "@y"), ("", "@text")]))
    return fig
