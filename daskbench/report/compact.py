"""The compact form of a workload section's charts: static inline SVG (`daskbench.report.svg`), for long reports.

A report of many cases (`daskbench.report.page.COMPACT_CASES`) would spend most of its time building and
serialising Bokeh models, and the browser most of its time drawing them. In the compact form each section
has its memory-over-time lines per cluster size, its change bars per metric, and one small trend chart per
case and compared metric (the page's metric switch shows one metric's, by ``data-metric``), with the band,
the candidate (a diamond in its verdict's colour), runs beyond the band (red above, green below) and failed
runs (crosses) marked; every mark has a ``<title>`` tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from daskbench import catalog
from daskbench.report.charts import GIB, change_row, representative, section_floor
from daskbench.report.content import CASE_VERDICT, CaseView, RunPoint, Section
from daskbench.report.style import VERDICT_COLORS, Palette, Unit, percent, unit_of, workers_text
from daskbench.report.svg import Bar, Frame, Labels, Mark, Series, Span, chart, extent, hbars
from daskbench.text import saturation_text

#: A trend chart's and a memory chart's size, in px.
TREND, MEMORY = (260.0, 92.0), (400.0, 170.0)
#: The most points a memory line keeps (the peak always among them).
MEMORY_POINTS = 160
DAY = 24 * 3600.0
#: The verdicts a trend chart's candidate mark takes the colour of.
MARKED = ("regressed", "improved", "newly-failing", "fixed")


def compact_charts(section: Section, palette: Palette) -> dict[str, dict[str, str]]:
    """Per kind of chart group (memory, change, history), the section's SVG charts by key."""
    slug = section.slug
    return {
        "memory": {f"{slug}-memory-{n}": memory_chart(section, n, palette) for n in section.cluster_sizes},
        "change": {f"{slug}-change-{m}": change_chart(section, m) for m in ("runtime_s", "peak_memory_bytes")},
        "history": {f"{slug}-history-{v.fingerprint[:16]}": trend_charts(v, palette) for v in section.cases},
    }


# -- one case over its runs ---------------------------------------------------------------


def trend_charts(view: CaseView, palette: Palette) -> str:
    """The case's label and one trend chart per compared metric (the metric switch shows one)."""
    charts = "".join(trend_chart(view, metric, palette.color(view.saturation)) for metric in catalog.compared())
    return f'<div class="trend"><p class="trend-case">{escape(view.label)}</p>{charts}</div>'


def trend_chart(view: CaseView, metric: str, color: str) -> str:
    """``metric`` of one case over its recent runs, as a small static SVG."""
    unit, points = unit_of(metric), list(view.history)
    verdict = view.verdicts.get(CASE_VERDICT) or view.verdicts.get(metric)
    kind = verdict.verdict if verdict is not None else "no verdict"
    attrs = f' data-metric="{metric}" data-verdict="{escape(kind)}"'
    label = f"{view.label}: {unit.title}, {len(points)} runs, verdict {kind}"
    if not points:
        return chart([], Frame((0, 1), (0, 1), *TREND), Labels(label, title="no runs"), attrs=attrs)
    xs = [_seconds(p.started_at) for p in points]
    values = [unit(p.values.get(metric)) for p in points]
    band = view.bands.get(metric)
    spans = [] if band is None else _band_spans(unit, band.low, band.median, band.high, color)
    trend = _Trend(unit, color, band_edges(spans), _fallback(values, spans), kind)
    marks = [
        mark
        for x, value, point in zip(xs, values, points, strict=True)
        if (mark := _trend_mark(x, value, point, trend)) is not None
    ]
    line = [(x, v if p.outcome == "passed" else None) for x, v, p in zip(xs, values, points, strict=True)]
    ys = [v for v in values if v is not None] + [s.low for s in spans] + [s.high for s in spans]
    frame = Frame(extent(xs, minimum=DAY), extent(ys, relative=0.02), *TREND)
    low, high = frame.y
    ends = (points[0].started_at[:10], points[-1].started_at[:10])
    said = Labels(label, ends, (_value_text(unit, low), _value_text(unit, high)), f"{unit.short} ({unit.symbol})")
    return chart([Series(line, color, marks=marks)], frame, said, spans, attrs)


def _band_spans(unit: Unit, low: float, median: float, high: float, color: str) -> list[Span]:
    scaled = [unit(v) for v in (low, median, high)]
    if any(v is None for v in scaled):
        return []
    lo, mid, hi = (float(v) for v in scaled if v is not None)
    return [Span(lo, hi, color), Span(mid, mid, color, dashed=True)]


def band_edges(spans: Sequence[Span]) -> tuple[float, float] | None:
    """The band's low and high ends, or None without a band."""
    return (spans[0].low, spans[0].high) if spans else None


def _fallback(values: Sequence[float | None], spans: Sequence[Span]) -> float:
    """Where a failed run with no value sits: the band's median, else the last value, else 0."""
    if spans:
        return spans[-1].low
    known = [v for v in values if v is not None]
    return known[-1] if known else 0.0


@dataclass(frozen=True)
class _Trend:
    """What every mark of one trend chart shares: the metric's unit, the case's colour, the band's ends (None:
    no band), where a failed run without a value sits, and the case's verdict."""

    unit: Unit
    color: str
    edges: tuple[float, float] | None
    fallback: float
    kind: str


def _trend_mark(x: float, value: float | None, point: RunPoint, trend: _Trend) -> Mark | None:
    """The candidate, a failed run or a run beyond the band; None for the rest (the line shows them)."""
    when = f"{point.label} ({point.run_id[:8]}) {point.started_at[:16]}"
    shown = _value_text(trend.unit, value)
    if point.outcome != "passed":
        message = f": {point.message[:200]}" if point.message else ""
        return Mark(x, value if value is not None else trend.fallback, "cross", "#c62828", 3.5,
                    title=f"{when}: {point.outcome}{message}")  # fmt: skip
    if value is None:
        return None
    edges = trend.edges
    beyond = "" if edges is None else ("above" if value > edges[1] else "below" if value < edges[0] else "")
    if point.role == "candidate":
        fill = VERDICT_COLORS[trend.kind] if trend.kind in MARKED else trend.color
        return Mark(x, value, "diamond", fill, 5.5, title=f"candidate {when}: {shown}, {trend.kind}")
    if beyond:
        fill = VERDICT_COLORS["regressed" if beyond == "above" else "improved"]
        return Mark(x, value, "circle", fill, 2.6, title=f"{when}: {shown}, {beyond} the band")
    return None


def _value_text(unit: Unit, value: float | None) -> str:
    """A scaled value (as drawn) in the metric's words: ``12.3 s``."""
    return unit.text(None if value is None else value * unit.scale)


def _seconds(started_at: str) -> float:
    return datetime.fromisoformat(started_at).timestamp()


# -- change against the baseline ------------------------------------------------------------


def change_chart(section: Section, metric: str) -> str:
    """Percent change of ``metric`` per case: bar the estimate, whisker the CI, grey the floor band."""
    unit, floor = unit_of(metric), section_floor(section, metric)
    bars = []
    for view in section.cases:
        pct, low, high, color, kind, status = change_row(view, metric)
        tip = f"{view.label}: {kind}, {pct:+.1f}% (95% CI {low:+.1f}% to {high:+.1f}%)"
        bars.append(Bar(view.label, pct, low, high, color, status, tip))
    edge = max(percent(floor) or 10.0, 10.0) * 1.6
    lows = [-edge, *(b.low for b in bars), *(b.value for b in bars)]
    highs = [edge, *(b.high for b in bars), *(b.value for b in bars), *(edge * 2.6 for b in bars if b.status)]
    finite_lows, finite_highs = [v for v in lows if math.isfinite(v)], [v for v in highs if math.isfinite(v)]
    band = ((1.0 / floor - 1.0) * 100.0, (floor - 1.0) * 100.0)
    return hbars(bars, x=(min(finite_lows), max(finite_highs)), band=band,
                 label=f"{unit.title}: change against the baseline, {len(bars)} cases",
                 title=f"{unit.title}: % change against the baseline")  # fmt: skip


# -- memory over time --------------------------------------------------------------------------


def memory_chart(section: Section, n_workers: int, palette: Palette) -> str:
    """Cluster memory over the compute phase on ``n_workers``: candidate solid, baseline dashed."""
    series: list[Series] = []
    for view in (v for v in section.cases if v.n_workers == n_workers):
        for side in ("candidate", "baseline"):
            m = representative(view.candidate if side == "candidate" else view.baseline)
            if m is None or not m.timeline:
                continue
            points = [(t, v / GIB) for t, v in _thin(m.timeline, MEMORY_POINTS)]
            end = points[-1]
            marks = [] if m.ok else [Mark(end[0], end[1], "cross", palette.color(view.saturation), 4.0,
                                          title=f"{view.label} ({side}): {m.outcome}")]  # fmt: skip
            series.append(Series(points, palette.color(view.saturation), dashed=side == "baseline",
                                 width=2.0 if side == "candidate" else 1.4, marks=marks))  # fmt: skip
    highest = max((v for s in series for _, v in s.points if v is not None), default=0.0)
    longest = max((t for s in series for t, _ in s.points), default=1.0)
    title = f"Cluster memory over time · {workers_text(n_workers)}"
    spans = []
    limits = {v.case.cluster.memory_per_worker for v in section.cases if v.n_workers == n_workers}
    if len(limits) == 1 and (limit := limits.pop()):
        location = limit * n_workers / GIB
        if highest > 0 and location > highest * 1.5:
            title += f" · limit {location:.3g} GiB, above"
        else:
            spans.append(Span(location, location, "#c62828", dashed=True))
            highest = max(highest, location)
    frame = Frame((0.0, longest or 1.0), (0.0, (highest or 1.0) * 1.05), *MEMORY)
    sats = ", ".join(
        sorted({f"sat {saturation_text(v.saturation)}" for v in section.cases if v.n_workers == n_workers})
    )
    said = Labels(f"{title} ({sats})", ("0 s", f"{longest:.3g} s"), ("0", f"{frame.y[1]:.3g} GiB"), title)
    return chart(series, frame, said, spans)


def _thin(timeline: Sequence[tuple[float, float]], most: int) -> list[tuple[float, float]]:
    """At most ``most`` points of ``timeline``, evenly taken, its peak and its last point kept."""
    if len(timeline) <= most:
        return list(timeline)
    step = math.ceil(len(timeline) / most)
    kept = set(range(0, len(timeline), step)) | {len(timeline) - 1}
    kept.add(max(range(len(timeline)), key=lambda i: timeline[i][1]))
    return [timeline[i] for i in sorted(kept)]
