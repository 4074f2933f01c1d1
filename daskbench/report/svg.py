"""Small static charts as inline SVG, in pure Python (stdlib only): the report's compact form.

A long report (`daskbench.report.page.COMPACT_CASES`) draws its section charts with these instead of
Bokeh: nothing to build, serialise or run in the browser, so a page of hundreds of cases is written in
seconds and drawn as soon as it is parsed. Two shapes: `chart` (lines, marks and bands on numeric axes,
labelled with their ends) and `hbars` (one bar per row with its whisker). Every text that reaches the
SVG passes `html.escape`; tooltips are ``<title>`` elements, which browsers show as plain text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: The drawing box around the plot area, in px: left (y labels), right, top (title), bottom (x labels).
MARGIN = (58.0, 8.0, 16.0, 16.0)


@dataclass(frozen=True)
class Mark:
    """One marked point: ``shape`` is circle, square, diamond or cross."""

    x: float
    y: float
    shape: str
    color: str
    size: float = 3.0
    hollow: bool = False
    title: str = ""


@dataclass(frozen=True)
class Series:
    """A line through ``points`` (a ``None`` value breaks it) and the points it marks."""

    points: Sequence[tuple[float, float | None]]
    color: str
    dashed: bool = False
    width: float = 1.4
    marks: Sequence[Mark] = ()


@dataclass(frozen=True)
class Span:
    """A horizontal band (``low`` < ``high``) or line (``low == high``) across the plot."""

    low: float
    high: float
    color: str
    dashed: bool = False


@dataclass(frozen=True)
class Labels:
    """What a chart says: its accessible name and tooltip (``name``), the labels of its x axis's ends (left, right)
    and of its y axis's (bottom, top), and a title over it."""

    name: str
    x: tuple[str, str] = ("", "")
    y: tuple[str, str] = ("", "")
    title: str = ""


@dataclass(frozen=True)
class Frame:
    """Data ranges mapped onto a box of ``width`` x ``height`` px."""

    x: tuple[float, float]
    y: tuple[float, float]
    width: float
    height: float

    def px(self, value: float) -> float:
        left, right = MARGIN[0], self.width - MARGIN[1]
        return left + (value - self.x[0]) / ((self.x[1] - self.x[0]) or 1.0) * (right - left)

    def py(self, value: float) -> float:
        top, bottom = MARGIN[2], self.height - MARGIN[3]
        return bottom - (value - self.y[0]) / ((self.y[1] - self.y[0]) or 1.0) * (bottom - top)


def extent(
    values: Sequence[float], *, pad: float = 0.06, minimum: float = 0.0, relative: float = 0.0
) -> tuple[float, float]:
    """The range of the finite ``values``, padded; at least ``minimum`` wide and ``relative`` times the largest
    magnitude (one value alone sits mid-range)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    span = max(high - low, minimum, relative * max(abs(low), abs(high)), 1e-12)
    middle = (low + high) / 2
    low, high = min(low, middle - span / 2), max(high, middle + span / 2)
    return low - span * pad, high + span * pad


def _n(value: float) -> str:
    return f"{value:.1f}"


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{klass}>{escape(text)}</text>'


def _open(width: float, height: float, label: str, attrs: str) -> str:
    return (
        f'<svg class="mini" viewBox="0 0 {width:g} {height:g}" width="{width:g}" height="{height:g}" role="img" '
        f'aria-label="{escape(label)}"{attrs}><title>{escape(label)}</title>'
    )


def _mark(frame: Frame, mark: Mark) -> str:
    x, y, r = frame.px(mark.x), frame.py(mark.y), mark.size
    fill = "white" if mark.hollow else mark.color
    paint = f'fill="{fill}" stroke="{mark.color}"'
    tip = f"<title>{escape(mark.title)}</title>" if mark.title else ""
    if mark.shape == "square":
        shape = f'<rect x="{_n(x - r)}" y="{_n(y - r)}" width="{_n(2 * r)}" height="{_n(2 * r)}" {paint}>'
        return shape + tip + "</rect>"
    if mark.shape == "diamond":
        points = f"{_n(x)},{_n(y - r)} {_n(x + r)},{_n(y)} {_n(x)},{_n(y + r)} {_n(x - r)},{_n(y)}"
        return f'<polygon points="{points}" {paint}>{tip}</polygon>'
    if mark.shape == "cross":
        d = f"M{_n(x - r)},{_n(y - r)}L{_n(x + r)},{_n(y + r)}M{_n(x - r)},{_n(y + r)}L{_n(x + r)},{_n(y - r)}"
        return f'<path d="{d}" stroke="{mark.color}" stroke-width="2" fill="none">{tip}</path>'
    return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" {paint}>{tip}</circle>'


def _line(frame: Frame, series: Series) -> str:
    """One ``<path>`` for the whole line, broken where a value is missing."""
    parts, pen = [], "M"
    for x, y in series.points:
        if y is None or not math.isfinite(y):
            pen = "M"
            continue
        parts.append(f"{pen}{_n(frame.px(x))},{_n(frame.py(y))}")
        pen = "L"
    if not parts:
        return ""
    dash = ' stroke-dasharray="4 3"' if series.dashed else ""
    return f'<path d="{"".join(parts)}" fill="none" stroke="{series.color}" stroke-width="{series.width:g}"{dash}/>'


def chart(series: Sequence[Series], frame: Frame, labels: Labels, spans: Sequence[Span] = (), attrs: str = "") -> str:
    """Lines and marks on ``frame`` over ``spans``, said by ``labels``; ``attrs`` more attributes of the ``<svg>``."""
    left, right, top, bottom = MARGIN[0], frame.width - MARGIN[1], MARGIN[2], frame.height - MARGIN[3]
    out = [_open(frame.width, frame.height, labels.name, attrs)]
    if labels.title:
        out.append(_text(left, 11, labels.title, cls="t"))
    for span in spans:
        high, low = frame.py(span.high), frame.py(span.low)
        if span.low == span.high:
            dash = ' stroke-dasharray="2 2"' if span.dashed else ""
            out.append(
                f'<line x1="{_n(left)}" x2="{_n(right)}" y1="{_n(low)}" y2="{_n(low)}" stroke="{span.color}"{dash}/>'
            )
        else:
            out.append(
                f'<rect x="{_n(left)}" y="{_n(high)}" width="{_n(right - left)}" height="{_n(max(low - high, 0.5))}" '
                f'fill="{span.color}" fill-opacity="0.14"/>'
            )
    out.append(f'<path d="M{_n(left)},{_n(top)}V{_n(bottom)}H{_n(right)}" class="axis"/>')
    out += [_line(frame, one) for one in series]
    out += [_mark(frame, mark) for one in series for mark in one.marks]
    out.append(_text(left - 3, top + 7, labels.y[1], "end"))
    out.append(_text(left - 3, bottom, labels.y[0], "end"))
    out.append(_text(left, frame.height - 3, labels.x[0]))
    out.append(_text(right, frame.height - 3, labels.x[1], "end"))
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Bar:
    """One row of `hbars`: the bar from 0 to ``value``, its whisker ``low``-``high``, a status text."""

    label: str
    value: float
    low: float
    high: float
    color: str
    status: str = ""
    title: str = ""


#: Height of one row of `hbars` and the width its labels take, in px.
ROW, LABEL_WIDTH = 18.0, 260.0
#: The most characters of a row label `hbars` shows (the bar's tooltip has it whole).
LABEL_CHARS = 50


def hbars(rows: Sequence[Bar], *, x: tuple[float, float], band: tuple[float, float], label: str, title: str,
          width: float = 600.0, unit: str = "%") -> str:  # fmt: skip
    """One bar per row on a shared axis ``x``, with the grey ``band`` (where a change does not count)."""
    height = ROW * len(rows) + 34
    left, right = LABEL_WIDTH, width - 10

    def px(value: float) -> float:
        return left + (value - x[0]) / ((x[1] - x[0]) or 1.0) * (right - left)

    out = [_open(width, height, label, ""), _text(4, 11, title, cls="t")]
    top, bottom = 16.0, 16.0 + ROW * len(rows)
    out.append(
        f'<rect x="{_n(px(band[0]))}" y="{_n(top)}" width="{_n(px(band[1]) - px(band[0]))}" '
        f'height="{_n(bottom - top)}" fill="#9e9e9e" fill-opacity="0.15"/>'
    )
    for i, row in enumerate(rows):
        y = top + ROW * i
        start, end = sorted((px(0.0), px(row.value)))
        tip = f"<title>{escape(row.title or row.label)}</title>"
        shown = row.label if len(row.label) <= LABEL_CHARS else row.label[: LABEL_CHARS - 1] + "…"
        out.append(_text(left - 4, y + 12, shown, "end"))
        out.append(
            f'<rect x="{_n(start)}" y="{_n(y + 3)}" width="{_n(max(end - start, 0.5))}" height="12" '
            f'fill="{row.color}" fill-opacity="0.85">{tip}</rect>'
        )
        if row.high > row.low:
            out.append(f'<line x1="{_n(px(row.low))}" x2="{_n(px(row.high))}" y1="{_n(y + 9)}" y2="{_n(y + 9)}" '
                       'stroke="#222" stroke-width="1.5"/>')  # fmt: skip
        if row.status:
            out.append(_text(px(0.0) + 4, y + 12, row.status, cls="status"))
    out.append(f'<line x1="{_n(px(0.0))}" x2="{_n(px(0.0))}" y1="{_n(top)}" y2="{_n(bottom)}" stroke="#444"/>')
    out.append(_text(left, height - 4, f"{x[0]:+.0f}{unit}"))
    out.append(_text(right, height - 4, f"{x[1]:+.0f}{unit}", "end"))
    out.append("</svg>")
    return "".join(out)
