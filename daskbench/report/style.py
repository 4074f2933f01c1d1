"""One look for every chart: colours that mean the same thing everywhere, units, a figure factory.

Colours follow the setting, never the side of the comparison (the A/B memory plots of
coiled-benchmarks confused readers by colouring sides, #917): a worker-saturation value
has one colour in every chart; the candidate is a solid line or filled marker, the
baseline a dashed line or hollow marker. Verdict colours are the table's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from bokeh.models import ColumnDataSource, Text
from bokeh.models.annotations import Title
from bokeh.models.glyph import Glyph
from bokeh.models.renderers import GlyphRenderer
from bokeh.plotting import figure

from daskbench import catalog
from daskbench.text import format_usd, plural, saturation_text

#: Okabe & Ito's colour-blind-safe palette without its greens and reds (those mean verdicts).
SATURATION_PALETTE = ("#0072B2", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#D55E00", "#999999")
VERDICT_COLORS = {
    "regressed": "#c62828",
    "newly-failing": "#7f0000",
    "improved": "#2e7d32",
    "fixed": "#00695c",
    "inconclusive": "#b7791f",
    "unchanged": "#9e9e9e",
    "new": "#3f51b5",
    "missing": "#616161",
}
#: Marker per cluster size, in order of size, for charts that mix sizes.
SIZE_MARKERS = ("circle", "square", "triangle", "diamond", "hex", "inverted_triangle", "star")
CANDIDATE_DASH, BASELINE_DASH = "solid", "dashed"
FAILED_MARKER = "x"


@dataclass(frozen=True)
class Unit:
    """How a metric is titled and scaled on an axis."""

    title: str
    short: str
    symbol: str
    scale: float

    def __call__(self, value: float | None) -> float | None:
        return None if value is None else value / self.scale

    def text(self, value: float | None) -> str:
        if value is None:
            return "-"
        scaled = value / self.scale
        return format_usd(scaled) if self.symbol == "USD" else f"{scaled:.3g} {self.symbol}"


def unit_of(metric: str) -> Unit:
    """How ``metric`` is titled and scaled on an axis, from its declaration (`daskbench.catalog`)."""
    declared = catalog.get(metric)
    symbol, scale = catalog.AXIS[declared.unit]
    return Unit(declared.title, declared.short, symbol, scale)


class Palette:
    """Colour by worker-saturation, marker by cluster size, fixed for the whole report."""

    def __init__(self, saturations: Sequence[float], sizes: Sequence[int] = ()) -> None:
        self._colors = {value: SATURATION_PALETTE[i % len(SATURATION_PALETTE)] for i, value in enumerate(saturations)}
        self._markers = {size: SIZE_MARKERS[i % len(SIZE_MARKERS)] for i, size in enumerate(sorted(set(sizes)))}

    def color(self, saturation: float) -> str:
        return self._colors.get(saturation, "#333333")

    def marker(self, n_workers: int) -> str:
        return self._markers.get(n_workers, "circle")

    def legend(self) -> list[tuple[str, str]]:
        """(label, colour) per saturation, for the HTML key above the charts."""
        return [(f"sat {saturation_text(value)}", color) for value, color in self._colors.items()]


def new_figure(title: str, x_label: str, y_label: str, *, height: int = 270, **kwargs: Any) -> figure:
    """A figure that stretches to its grid cell, with the report's fonts and a quiet frame."""
    fig = figure(
        title=title,
        height=height,
        sizing_mode="stretch_width",
        tools="xpan,xwheel_zoom,reset,save",
        active_scroll=None,
        toolbar_location="right",
        **kwargs,
    )
    fig.toolbar.logo = None
    fig.toolbar.autohide = True
    heading = cast(Title, fig.title)
    heading.text_font_size = "13px"
    heading.text_font_style = "bold"
    fig.xaxis.axis_label, fig.yaxis.axis_label = x_label, y_label
    for axis in (*fig.xaxis, *fig.yaxis):
        axis.axis_label_text_font_size = "12px"
        axis.axis_label_text_font_style = "normal"
        axis.major_label_text_font_size = "11px"
    fig.outline_line_color = None
    fig.grid.grid_line_alpha = 0.5
    fig.min_border_left = 50
    return fig


def draw(fig: figure, glyph: Glyph, data: Mapping[str, Sequence[Any]] | ColumnDataSource) -> GlyphRenderer:
    """Add one glyph. Unlike ``fig.line(...)`` and friends, this makes no selection and muted
    copies of the glyph: with hundreds of renderers those copies triple the page's models."""
    source = data if isinstance(data, ColumnDataSource) else ColumnDataSource({k: list(v) for k, v in data.items()})
    return fig.add_glyph(source, glyph)


def note_if_empty(fig: figure, note: str = "nothing to draw: no passing repeats on either side") -> None:
    """A figure without data says so, rather than showing empty axes (and Bokeh warning about it)."""
    if not fig.renderers:
        draw(
            fig,
            Text(x="x", y="y", text="text", text_align="center", text_color="#59636e", text_font_size="12px"),
            {"x": [0], "y": [0], "text": [note]},
        )


def style_legend(fig: figure, location: str = "top_left") -> None:
    """A small legend that hides a series when clicked (the report has many overlapping lines)."""
    legend: Any = fig.legend  # a splattable list: attributes set on it reach every legend
    if not legend:
        return
    legend.location = location
    legend.click_policy = "hide"
    legend.label_text_font_size = "11px"
    legend.glyph_height = 12
    legend.glyph_width = 18
    legend.spacing = 0
    legend.padding = 4
    legend.background_fill_alpha = 0.75


def percent(ratio: float | None) -> float | None:
    """A ratio as a percent change: 1.31 -> 31.0, 0.8 -> -20.0."""
    return None if ratio is None or not math.isfinite(ratio) else (ratio - 1.0) * 100.0


def workers_text(n: int) -> str:
    return plural(n, "worker")
