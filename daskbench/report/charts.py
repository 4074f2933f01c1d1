"""The charts of one workload section: memory over time and percent change per case.

Every builder takes plain report records (`daskbench.report.content`) and returns Bokeh
models; nothing here reads the store or writes HTML. Text from the store reaches Bokeh
only as titles, legend labels and tooltip fields, which BokehJS renders as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from bokeh.model import Model
from bokeh.models import (
    ColumnDataSource,
    DataRange1d,
    FactorRange,
    HBar,
    HoverTool,
    HSpan,
    Line,
    Range1d,
    Scatter,
    Segment,
    Text,
    VSpan,
)
from bokeh.models.annotations import BoxAnnotation, Label, Legend, LegendItem
from bokeh.models.renderers import GlyphRenderer
from bokeh.plotting import figure

from daskbench.judge import stats
from daskbench.model import Measurement
from daskbench.report.content import CASE_VERDICT, CaseView, Section
from daskbench.report.style import (
    BASELINE_DASH,
    CANDIDATE_DASH,
    FAILED_MARKER,
    VERDICT_COLORS,
    Palette,
    draw,
    new_figure,
    percent,
    style_legend,
    unit_of,
    workers_text,
)
from daskbench.text import saturation_text

GIB = 2.0**30


def representative(measurements: Sequence[Measurement]) -> Measurement | None:
    """The repeat to draw: the passing one with the median runtime, else the longest failed one."""
    passed = sorted((m for m in measurements if m.ok and m.timeline), key=lambda m: (m.runtime_s or 0.0, m.repeat))
    if passed:
        return passed[(len(passed) - 1) // 2]
    failed = [m for m in measurements if m.timeline]
    return max(failed, key=lambda m: (len(m.timeline), -m.repeat), default=None)


# -- memory over time -------------------------------------------------------------------


def memory_figure(section: Section, n_workers: int, palette: Palette) -> figure:
    """Cluster memory over the compute phase on ``n_workers``, one line per worker-saturation."""
    fig = new_figure(
        f"Cluster memory over time · {workers_text(n_workers)}", "seconds since compute started", "memory (GiB)"
    )
    items: list[LegendItem] = []
    drawn: list[Model] = []
    for view in (v for v in section.cases if v.n_workers == n_workers):
        renderers = [r for side in ("candidate", "baseline") for r in _memory_line(fig, view, side, palette)]
        if renderers:
            items.append(LegendItem(label=f"sat {saturation_text(view.saturation)}", renderers=renderers))
            drawn += renderers
    cast(DataRange1d, fig.y_range).renderers = list(drawn)  # scale to the data, not to the memory limit
    _memory_limit(fig, section, n_workers, _highest(drawn))
    fig.add_tools(
        HoverTool(
            tooltips=[("", "@series"), ("time", "@t{0.0} s"), ("memory", "@gib{0.00} GiB")], line_policy="nearest"
        )
    )
    if items:
        fig.add_layout(Legend(items=items), "center")
    style_legend(fig)
    cast(DataRange1d, fig.y_range).start = 0
    return fig


def _memory_line(fig: figure, view: CaseView, side: str, palette: Palette) -> list[GlyphRenderer]:
    m = representative(view.candidate if side == "candidate" else view.baseline)
    if m is None:
        return []
    state = "" if m.ok else f", {m.outcome}"
    source = ColumnDataSource(
        {
            "t": [t for t, _ in m.timeline],
            "gib": [v / GIB for _, v in m.timeline],
            "series": [f"{view.label} ({side}{state})"] * len(m.timeline),
        }
    )
    color, candidate = palette.color(view.saturation), side == "candidate"
    line = Line(
        x="t",
        y="gib",
        line_color=color,
        line_width=2.2 if candidate else 1.6,
        line_dash=CANDIDATE_DASH if candidate else BASELINE_DASH,
        line_alpha=1.0 if candidate else 0.8,
    )
    renderers = [draw(fig, line, source)]
    if not m.ok:
        end = {str(key): list(values)[-1:] for key, values in source.data.items()}
        cross = Scatter(x="t", y="gib", marker=FAILED_MARKER, size=14, line_width=3, line_color=color)
        renderers.append(draw(fig, cross, end))
    return renderers


#: The memory limit is drawn as a line when it is within this factor of the highest trace;
#: further up, a line would squash the traces flat, so a label states it instead.
LIMIT_IN_VIEW = 1.5


def _memory_limit(fig: figure, section: Section, n_workers: int, highest: float) -> None:
    limits = {v.case.cluster.memory_per_worker for v in section.cases if v.n_workers == n_workers}
    if len(limits) == 1 and (limit := limits.pop()):
        location = limit * n_workers / GIB
        if highest > 0 and location > highest * LIMIT_IN_VIEW:
            text = f"memory limit {location:.3g} GiB: above the chart ↑"
            fig.add_layout(
                Label(
                    x=8,
                    y=6,
                    x_units="screen",
                    y_units="screen",
                    text=text,
                    name="memory-limit",
                    text_font_size="11px",
                    text_color="#c62828",
                )
            )
            return
        draw(fig, HSpan(y="y", line_dash="dotted", line_color="#c62828", name="memory-limit"), {"y": [location]})


def _highest(renderers: Sequence[Model]) -> float:
    """The highest memory value (GiB) drawn by these renderers."""
    values = [
        y
        for r in renderers
        if isinstance(r, GlyphRenderer)
        for y in cast(ColumnDataSource, r.data_source).data.get("gib", [])
    ]
    return max(values, default=0.0)


# -- percent change per case --------------------------------------------------------------


def change_figure(section: Section, metric: str) -> figure:
    """Percent change of ``metric`` against the baseline, one bar per case, whiskers = the CI."""
    labels = [view.label for view in section.cases]
    rows = [change_row(view, metric) for view in section.cases]
    columns = ("pct", "low", "high", "color", "verdict", "status")
    source = ColumnDataSource({"case": labels, **{name: [row[i] for row in rows] for i, name in enumerate(columns)}})
    unit = unit_of(metric)
    fig = new_figure(
        f"{unit.title}: change against the baseline",
        f"% change in {unit.short} (bar: estimate, whisker: 95% CI)",
        "",
        y_range=FactorRange(factors=list(reversed(labels))),
        height=max(170, 34 * len(labels) + 80),
    )
    _change_glyphs(fig, source)
    fig.x_range = _change_range(rows, section_floor(section, metric))
    _floor_band(fig, section_floor(section, metric))
    fig.add_tools(HoverTool(tooltips=[("case", "@case"), ("verdict", "@verdict"), ("change", "@pct{+0.0}%")]))
    fig.ygrid.grid_line_color = None
    return fig


def _change_glyphs(fig: figure, source: ColumnDataSource) -> None:
    """The bars (estimate), whiskers (interval), status texts and the zero line of `change_figure`."""
    bar = HBar(y="case", left=0, right="pct", height=0.62, fill_color="color", line_color="color", fill_alpha=0.85)
    draw(fig, bar, source)
    draw(fig, Segment(x0="low", x1="high", y0="case", y1="case", line_color="#222222", line_width=1.5), source)
    status = Text(x=0, y="case", text="status", text_font_size="11px", text_baseline="middle", text_color="#7f0000",
                  x_offset=4)  # fmt: skip
    draw(fig, status, source)
    draw(fig, VSpan(x="x", line_color="#444444", line_width=1), {"x": [0]})


def change_row(view: CaseView, metric: str) -> tuple[float, float, float, str, str, str]:
    """(percent, CI low, CI high, colour, verdict, status text) for one bar; 0-length when none."""
    outcome = view.verdicts.get(CASE_VERDICT)
    verdict = view.verdicts.get(metric)
    if outcome is not None or verdict is None or verdict.ratio is None:
        kind = outcome.verdict if outcome is not None else (verdict.verdict if verdict else "no baseline")
        failed = next((m.outcome for m in view.candidate if not m.ok), "")
        label = kind.replace("-", " ")
        status = f"{label} ({failed})" if failed and kind != "fixed" else label
        return (0.0, 0.0, 0.0, VERDICT_COLORS.get(kind, "#616161"), kind, status)
    pct = percent(verdict.ratio) or 0.0
    low = percent(verdict.ci_low) if verdict.ci_low is not None else pct
    high = percent(verdict.ci_high) if verdict.ci_high is not None else pct
    return (
        pct,
        low if low is not None else pct,
        high if high is not None else pct,
        VERDICT_COLORS[verdict.verdict],
        verdict.verdict,
        "",
    )


def section_floor(section: Section, metric: str) -> float:
    floors = [v.floor for view in section.cases if (v := view.verdicts.get(metric)) is not None and v.floor]
    return max(floors) if floors else stats.default_floor(metric)


def _floor_band(fig: figure, floor: float) -> None:
    low, high = (1.0 / floor - 1.0) * 100.0, (floor - 1.0) * 100.0
    fig.add_layout(
        BoxAnnotation(left=low, right=high, fill_color="#9e9e9e", fill_alpha=0.15, line_alpha=0, level="underlay")
    )


def _change_range(rows: Sequence[tuple[float, float, float, str, str, str]], floor: float) -> Range1d:
    """Symmetric enough to read both ways; always wide enough for the floor band and a label."""
    edge = max(percent(floor) or 10.0, 10.0) * 1.6
    low = min([-edge, *(row[1] for row in rows)])
    high = max([edge, *(row[2] for row in rows), *(edge * 2.6 for row in rows if row[5])])
    pad = (high - low) * 0.06
    return Range1d(start=low - pad, end=high + pad)
