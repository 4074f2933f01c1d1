"""Assemble the HTML page: a Bokeh document per workload section, one inlined BokehJS, Jinja2.

Each workload section's charts are the roots of one Bokeh document (one ``components`` call), drawn
a section at a time by static.js, the sections in view first (`drawn_later`), and BokehJS is inlined
once, trimmed to the parts the charts use
(``bundle_for_objs_and_resources`` over ``INLINE``): the file opens from disk with no
network and stays small enough to mail. A page of a site (`daskbench.site`) refers to BokehJS
in a file the site's pages share instead (`SharedScripts`): written once per site, still offline.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from bokeh.document import Document
from bokeh.embed import components
from bokeh.embed.bundle import bundle_for_objs_and_resources
from bokeh.model import Model
from bokeh.plotting import figure
from bokeh.resources import INLINE
from bokeh.settings import settings
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

import daskbench
from daskbench import catalog
from daskbench.judge.format import comparison_to_json
from daskbench.report import tables
from daskbench.report.breakdown import breakdown_figure, evidence_links
from daskbench.report.charts import change_figure, memory_figure
from daskbench.report.compact import compact_charts
from daskbench.report.content import ReportData, Section, drawn_first
from daskbench.report.rightsizing import frontier_figure, task_memory_figure
from daskbench.report.style import Palette, note_if_empty
from daskbench.report.summary import TRADEOFF_METRICS, tradeoff_tables
from daskbench.report.tradeoffs import scaling_figure, tradeoff_figure
from daskbench.report.trends import history_figure
from daskbench.text import terminal_safe

DATA_ELEMENT_ID = "daskbench-data"
#: Version of the JSON embedded in the page (``<script id="daskbench-data">``).
#: 1 - the compare JSON plus "report" (sections, charts, generator).
DATA_VERSION = 1
_PACKAGE = resources.files("daskbench.report")


@dataclass(frozen=True)
class ChartGroup:
    """A heading, a caption and the charts under them (keys into the Bokeh divs)."""

    title: str
    caption: str
    keys: tuple[str, ...]


#: Per kind of chart group: its heading and the caption that says how to read it.
GROUPS = {
    "memory": (
        "Memory over time",
        "Cluster memory (sum over workers) during the compute phase of the median "
        "repeat, per worker-saturation, scaled to the data; the dotted red line is the cluster's memory limit "
        "(a red label when it is far above the traces); a cross marks "
        "where a failed repeat stopped.",
    ),
    "change": (
        "Change against the baseline",
        "Percent change per case; the bar is the estimate, the whisker its "
        "95% confidence interval (A/B), the grey band the floor within which a change does not count.",
    ),
    "history": (
        "History",
        "Each case over its recent runs; the shaded band is the baseline median ± max(3 MADs, "
        "floor); squares are baseline runs, the diamond the candidate, crosses failed runs. "
        "The metric switch above chooses the metric.",
    ),
    "settings": (
        "Settings: cluster size and worker-saturation",
        "Medians per setting: runtime and cost against the "
        "number of workers, runtime against peak memory (hollow: baseline, filled: candidate), and cost "
        "against runtime over every configuration of the candidate: filled points are on the frontier "
        "(no other configuration is both faster and cheaper), joined by the dashed line.",
    ),
    "breakdown": (
        "Where the time went",
        "Median thread-seconds (workers × threads × runtime) by activity from "
        "Dask's fine-grained metrics, baseline (A) next to candidate (B) per case; idle is the remainder. "
        "Transfer and shuffle run beside the threads and are counted within the time they were not "
        "executing.",
    ),
    "tasks": (
        "Per-task peak memory",
        "With --task-memory: per task prefix, the largest memory one task took "
        "above its start level (dark) and the 95th percentile (light), over the candidate's measurements; "
        "at one thread per worker exact, with more an upper bound. It decides how many tasks fit a worker.",
    ),
}


def chart_groups(section: Section, palette: Palette) -> tuple[list[ChartGroup], dict[str, figure]]:
    """The charts of one workload section, grouped under headings, and their Bokeh roots."""
    sizes, slug = section.cluster_sizes, section.slug
    roots: dict[str, figure] = {}
    roots |= {f"{slug}-memory-{n}": memory_figure(section, n, palette) for n in sizes}
    roots |= {f"{slug}-change-{m}": change_figure(section, m) for m in ("runtime_s", "peak_memory_bytes")}
    roots |= {f"{slug}-history-{n}": history_figure(section, n, palette) for n in sizes}
    roots |= {f"{slug}-settings-{m}": scaling_figure(section, m, palette) for m in ("runtime_s", "cost_usd")}
    roots[f"{slug}-settings-tradeoff"] = tradeoff_figure(section, palette)
    roots[f"{slug}-settings-frontier"] = frontier_figure(section, palette)
    roots[f"{slug}-breakdown-time"] = breakdown_figure(section)
    roots[f"{slug}-tasks-memory"] = task_memory_figure(section)
    for root in roots.values():
        note_if_empty(root)
    groups = [ChartGroup(*GROUPS[kind], _keys(roots, f"{slug}-{kind}-")) for kind in GROUPS]
    return groups, roots


#: A report of more cases than this draws its section charts in the compact form (`daskbench.report.compact`):
#: static SVG, written in seconds and drawn as the page is parsed, instead of a dozen Bokeh charts per section.
COMPACT_CASES = 100
#: A report of more cases than this draws the charts of this many, those whose verdicts say something moved first
#: (`content.drawn_first`); every case keeps its rows in the tables.
DRAWN_CASES = 300
#: The compact form's groups: heading and caption (the memory and change captions are the interactive form's).
COMPACT_GROUPS = {
    "memory": (
        "Memory over time",
        "Cluster memory (sum over workers) during the compute phase of the median repeat, one line per "
        "worker-saturation (solid: candidate, dashed: baseline); the dashed red line is the cluster's memory limit "
        "(named in the title when it is far above the traces); a cross marks where a failed repeat stopped.",
    ),
    "change": GROUPS["change"],
    "history": (
        "History",
        "Each case over its recent runs, one small chart per case (this report has many cases, so its charts are "
        "static): the shaded band is the baseline median ± max(3 MADs, floor), its median dotted; the diamond is "
        "the candidate (red: regressed, green: improved), red and green dots are runs above and below the band, "
        "crosses failed runs; hover a mark for its run. The metric switch above "
        "chooses the metric. The settings, time breakdown and per-task memory charts are drawn for reports of "
        f"at most {COMPACT_CASES} cases (select fewer, e.g. one workload's runs).",
    ),
}


def compact_groups(section: Section, palette: Palette) -> tuple[list[ChartGroup], dict[str, str]]:
    """The compact form of a section's charts, grouped under headings, and their SVG by key."""
    found = compact_charts(section, palette)
    groups = [ChartGroup(*COMPACT_GROUPS[kind], tuple(charts)) for kind, charts in found.items()]
    return groups, {key: svg for charts in found.values() for key, svg in charts.items()}


def _keys(roots: Mapping[str, object], prefix: str) -> tuple[str, ...]:
    return tuple(key for key in roots if key.startswith(prefix))


@dataclass(frozen=True)
class SharedScripts:
    """Where a site keeps the scripts its pages share (``folder``, each file written once) and how a page
    refers to that folder (``href``, relative: the site opens from disk)."""

    folder: Path
    href: str


def bokeh_js(roots: Sequence[Model], shared: SharedScripts | None = None) -> Markup:
    """The ``<script>`` tags of the BokehJS these charts need: inlined, or, for a page of a site, files in
    ``shared.folder`` named by their content (the same library is one file however many pages use it)."""
    if not roots:
        return Markup("")
    bundle = bundle_for_objs_and_resources(list(roots), INLINE)
    if shared is None:
        return Markup(bundle.scripts())
    tags = []
    for text in bundle.js_raw:
        name = f"bokeh-{hashlib.sha256(text.encode()).hexdigest()[:16]}.js"
        path = shared.folder / name
        if not path.exists():
            shared.folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        tags.append(f'<script src="{shared.href}{name}"></script>')
    return Markup("\n".join(tags))


def script_json(value: Any) -> Markup:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` as \\u escapes, so no text ends the tag."""
    text = json.dumps(value, sort_keys=True, allow_nan=False, ensure_ascii=True)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


@dataclass
class _Drawn:
    """The sections with their chart groups, and what the page embeds for them: Bokeh roots and scripts, divs."""

    sections: list[tuple[Section, list[ChartGroup]]] = field(default_factory=list)
    roots: dict[str, Model] = field(default_factory=dict)
    scripts: list[str] = field(default_factory=list)
    divs: dict[str, str] = field(default_factory=dict)


def render_page(data: ReportData, shared: SharedScripts | None = None, *, compact: bool | None = None) -> str:
    """The whole report as one self-contained HTML string (BokehJS in ``shared`` files when given); its section
    charts in the compact form (static SVG) when ``compact``, by default when it has over `COMPACT_CASES` cases."""
    if compact is None:
        compact = sum(len(section.cases) for section in data.sections) > COMPACT_CASES
    sizes = sorted({view.n_workers for section in data.sections for view in section.cases})
    palette = Palette(data.saturations, sizes)
    drawn = {section.slug for section in drawn_first(data.sections, DRAWN_CASES)}
    charts = _draw(data.sections, palette, drawn, compact=compact)
    context = {**_context(data, charts, shared), "legend": palette.legend(), "drawn": drawn}
    context["undrawn"] = _undrawn_line(data.sections, drawn)
    context["tradeoffs"] = [(section, tradeoff_tables(section)) for section in data.sections if section.slug in drawn]
    return _environment().get_template("template.html").render(context)


def _draw(sections: Sequence[Section], palette: Palette, drawn: Collection[str], *, compact: bool) -> _Drawn:
    """Each section's charts: none for a section left undrawn (`DRAWN_CASES`), static SVG when ``compact``, else
    Bokeh models embedded later, a script per section."""
    charts = _Drawn()
    for section in sections:
        if section.slug not in drawn:  # in the tables only (`DRAWN_CASES`)
            charts.sections.append((section, []))
            continue
        if compact:
            groups, svgs = compact_groups(section, palette)
            charts.sections.append((section, groups))
            charts.divs |= svgs
            continue
        groups, section_roots = chart_groups(section, palette)
        charts.sections.append((section, groups))
        charts.roots |= section_roots
        if section_roots:
            script, found = embedded_later(section_roots, section.slug)
            charts.scripts.append(script)
            charts.divs |= found
    return charts


def _context(data: ReportData, charts: _Drawn, shared: SharedScripts | None) -> dict[str, Any]:
    """What the template reads besides the palette and which sections are drawn."""
    every = tables.verdict_rows(data)
    rows, left_out = tables.capped(every)
    return {
        "c": data.comparison,
        "data": data,
        "sections": charts.sections,
        "divs": {key: Markup(div) for key, div in charts.divs.items()},
        "bokeh_js": bokeh_js(list(charts.roots.values()), shared),
        "bokeh_script": Markup("\n".join(charts.scripts)),
        "columns": tables.run_columns(data),
        "diffs": tables.diff_rows(data.comparison),
        "rows": rows,
        "left_out": left_out,
        "quiet_rows": tables.QUIET_ROWS,
        "counts": tables.summary_counts(every),
        "headline": tables.headline(every),
        "metrics": tables.metric_titles(),
        "data_json": script_json(_page_data(data, charts.sections)),
        "data_id": DATA_ELEMENT_ID,
        "css": Markup(static_text("static.css") + metric_switch_css()),
        "js": Markup(static_text("static.js")),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": daskbench.__version__,
        "t": tables,
        "evidence_links": evidence_links,
        "tradeoff_titles": [catalog.get(metric).title for metric in TRADEOFF_METRICS],
    }


def _undrawn_line(sections: Sequence[Section], drawn: Collection[str]) -> str:
    """What a section without its charts says (empty when every section is drawn)."""
    left = [section for section in sections if section.slug not in drawn]
    if not left:
        return ""
    cases = sum(len(section.cases) for section in sections)
    shown = sum(len(section.cases) for section in sections if section.slug in drawn)
    return (
        f"Charts not drawn: this report has {cases} cases and draws the charts of {shown} (at most {DRAWN_CASES}), "
        "those whose verdicts say something moved first; this one's verdicts are in the table above. Select fewer "
        "cases (one workload, -k) to draw them all."
    )


#: The type of a section's chart script until static.js runs it: a browser leaves such a script alone.
LATER = "text/x-daskbench-charts"


def drawn_later(script: str, section: str) -> str:
    """A section's Bokeh embed script (`components`) made inert, for static.js to run when its turn comes
    (sections in view first, then the rest one at a time): the headline and tables are usable at once."""
    opening = script.lstrip()
    if not opening.startswith("<script>"):
        raise ValueError(f"unexpected Bokeh embed script: {script[:80]!r}")
    return f'<script type="{LATER}" data-section="{section}">' + opening.removeprefix("<script>")


def embedded_later(roots: Mapping[str, Model], section: str) -> tuple[str, dict[str, str]]:
    """One section's charts as one Bokeh document: its embed script made inert (`drawn_later`, run in turn by
    static.js) and each chart's div, by key. Bokeh's document checks are skipped here (a sixth of the time,
    and they only log): tests/test_report.py runs them on the story report's charts instead."""
    with _unchecked():
        script, divs = components(_one_document(roots))
    return drawn_later(script, section), divs


@contextmanager
def _unchecked() -> Iterator[None]:
    """Bokeh's document validation off for the block (unless it is off already), then as it was."""
    setting = settings.perform_document_validation
    if not setting():
        yield
        return
    setting.set_value(False)
    try:
        yield
    finally:
        setting.unset_value()


def _one_document(roots: Mapping[str, Model]) -> dict[str, Model]:
    """Put every root into one Document in one go: adding roots one by one re-walks all models each time."""
    document = Document()
    with document.models.freeze():
        for root in roots.values():
            document.add_root(root)
    return dict(roots)


def _page_data(data: ReportData, sections: list[tuple[Section, list[ChartGroup]]]) -> dict[str, Any]:
    """The comparison as compare --format json prints it, plus what the page drew where."""
    found = comparison_to_json(data.comparison)
    found["report"] = {
        "version": DATA_VERSION,
        "history_window": data.history_window,
        "sections": [
            {
                "id": section.slug,
                "workload": section.workload,
                "params": dict(section.params),
                "cases": [view.fingerprint for view in section.cases],
                "charts": [key for group in groups for key in group.keys],
            }
            for section, groups in sections
        ],
    }
    return found


def static_text(name: str) -> str:
    text = _PACKAGE.joinpath(name).read_text(encoding="utf-8")
    if "</" in text and name.endswith(".js"):  # a literal "</script" would end the inline tag early
        raise ValueError(f"{name} must not contain '</'")
    return text


def _environment() -> Environment:
    return template_environment(str(_PACKAGE), lstrip_blocks=True)


def template_environment(folder: str, *, lstrip_blocks: bool = False) -> Environment:
    """The Jinja environment of every page daskbench writes (the report, the site): HTML escaped, and each text
    shown with its control characters inert (`inert_text`), so an imported label's ESC or BEL never reaches
    the page raw."""
    return Environment(
        loader=FileSystemLoader(folder),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=lstrip_blocks,
        finalize=inert_text,
    )


def inert_text(value: object) -> object:
    """A template's value as shown: a string with its control characters escaped (`terminal_safe`: ``\\x1b``),
    line breaks and tabs kept; `Markup` (the page's own HTML and scripts) and other values as they are."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return terminal_safe(value, keep="\n\t")
    return value


def metric_switch_css() -> str:
    """The metric switch's rules: with ``body[data-metric=M]``, hide what belongs to any other metric."""
    rules = ",\n".join(
        f'body[data-metric="{name}"] [data-metric]:not([data-metric="{name}"])' for name in catalog.compared()
    )
    return f"\n{rules} {{ display: none; }}\n"
