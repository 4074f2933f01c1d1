"""What commands print, each printer defined once: wrapped lines, JSON, aligned tables (grouped), a
comparison (its table or JSON, and the exit on a regression); and the check that a command about to write a
report has a bokeh new enough. Progress goes to stderr through `daskbench.text.say` alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from daskbench.cli.app import EXIT_OK
from daskbench.errors import DaskbenchError, RegressionFound, check_writable
from daskbench.judge.format import comparison_to_json, format_table, regression_summary
from daskbench.text import wrap_line
from daskbench.verdicts import Comparison


def print_wrapped(text: str) -> None:
    """Print ``text`` on stdout in lines of at most 120 columns, wrapped between words (never cut), flushed."""
    print("\n".join(wrap_line(text)), flush=True)


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_comparison(
    comparison: Comparison, output: str, extra: Mapping[str, Any] | None = None, every_row: bool = False
) -> int:
    """Print ``comparison`` as a table (every row with ``every_row``) or JSON (with ``extra`` keys);
    a regression raises `RegressionFound` (exit 1)."""
    if output == "json":
        print_json({**comparison_to_json(comparison), **(extra or {})})
    else:
        print(format_table(comparison, every_row))
    sys.stdout.flush()
    if comparison.regressions:
        raise RegressionFound(regression_summary(comparison))
    return EXIT_OK


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A plain aligned text table; numbers right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        print(_aligned(row, widths))


def print_grouped(headers: list[str], groups: Sequence[tuple[str, list[list[str]]]]) -> None:
    """An aligned table within 120 columns: a title wider than its column's values over two lines,
    each group's rows indented under a line naming the group (wrapped, never cut)."""
    rows = [row for _, found in groups for row in found]
    titles = [_two_lines(title, max((len(row[i]) for row in rows), default=0)) for i, title in enumerate(headers)]
    widths = [max(len(part) for part in (*titles[i], *(row[i] for row in rows))) for i in range(len(headers))]
    for line in zip(*titles, strict=True):
        if any(line):
            print_wrapped("  " + _aligned(list(line), widths))
    for label, found in groups:
        print_wrapped(label)
        for row in found:
            print_wrapped("  " + _aligned(row, widths))


def _two_lines(title: str, room: int) -> tuple[str, str]:
    """A column title on one line, or split at its middle space when it is wider than ``room``."""
    spaces = [i for i, char in enumerate(title) if char == " "]
    if len(title) <= room or not spaces:
        return title, ""
    cut = min(spaces, key=lambda i: abs(len(title) - 2 * i))
    return title[:cut], title[cut + 1 :]


def _aligned(row: list[str], widths: list[int]) -> str:
    """Cells padded to ``widths``: numbers right-aligned, text left-aligned."""
    return "  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()


def _numeric(cell: str) -> bool:
    return cell.replace(".", "", 1).replace("-", "", 1).replace("x", "", 1).isdigit()


#: The oldest bokeh the HTML report draws with (``report``, ``publish``, ``pr``). daskbench itself declares
#: bokeh>=2.4.3: the dashboard of distributed before 2023.4 (``--evidence``) needs bokeh<3, and measuring
#: needs no report, so an environment of that era measures and another one reports from the same store.
REPORT_BOKEH = "3.4"


def check_outputs(command: str, report: str | None, markdown: str | None) -> None:
    """One line before ``command`` measures or imports anything: a ``--report`` or ``--markdown`` path that cannot
    be written, or a report this environment's bokeh cannot draw (None: not asked for)."""
    for path, flag in ((report, "--report"), (markdown, "--markdown")):
        if path:
            check_writable(Path(path), flag)
    if report:
        check_report_bokeh(command)


def check_report_bokeh(command: str) -> None:
    """One line before ``command`` writes a report with a bokeh too old for it (or none)."""
    from importlib import metadata

    from packaging.version import Version

    try:
        found = metadata.version("bokeh")
    except metadata.PackageNotFoundError:
        found = None
    if found is None or Version(found) < Version(REPORT_BOKEH):
        have = f"bokeh {found}" if found else "no bokeh"
        raise DaskbenchError(
            f"daskbench {command} needs bokeh>={REPORT_BOKEH}; this environment has {have} (old enough for "
            f"the dashboard of distributed before 2023.4): run it from an environment with pip install "
            f"'bokeh>={REPORT_BOKEH}' (the store is the same)"
        )
