"""The docs' tables that restate the code, written from it: options, workload sizes, metrics.

    tools/docs-tables            # rewrite each table in its page, between its markers
    tools/docs-tables --check    # change nothing; exit 1 naming each row that differs (tests/test_docs.py)

Each table sits in its page between two lines (the first names the table and where it comes from):

    <!-- tools/docs-tables: options (from daskbench.config.OPTIONS; edit there, then run tools/docs-tables) -->
    | flag | ... |
    <!-- tools/docs-tables: end -->

``options`` (docs/options.md) comes from `daskbench.config.OPTIONS`, ``sizes``
(docs/workloads-and-metrics.md) from the workload registry (each workload's SIZES) and ``metrics``
(the same page) from the metric catalog, `daskbench.catalog`. Text around the markers is the
page's own.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
END = "<!-- tools/docs-tables: end -->"


@dataclass(frozen=True)
class Table:
    """One generated table: its page (relative to the checkout), where its rows come from, how to make them."""

    name: str
    page: str
    source: str
    render: Callable[[], str]

    @property
    def start(self) -> str:
        return f"<!-- tools/docs-tables: {self.name} (from {self.source}; edit there, then run tools/docs-tables) -->"


def _cell(text: str) -> str:
    """Text as one Markdown table cell: a ``|`` escaped, so the row keeps its columns."""
    return text.replace("|", "\\|")


def _code(text: str | None) -> str:
    return f"`{text}`" if text else ""


def options_table() -> str:
    """Every option: flag, environment variable, ``[tool.daskbench]`` key, default, and its ``--help`` text."""
    from daskbench.config import OPTIONS

    lines = ["| flag | env | pyproject key | default | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        default = "off" if option.is_flag and option.default in (None, "false") else _code(option.default)
        cells = [_code(option.flag), _code(option.env), _code(option.key), default, _cell(option.help)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sizes_table() -> str:
    """Each workload case at each size: its input and chunks (the registry's own table)."""
    from daskbench.workloads.registry import markdown_table

    return markdown_table()


def metrics_table() -> str:
    """Every declared metric, in declaration order, with what the catalog says of it."""
    from daskbench import catalog

    lines = [
        "| metric | kind | unit | judged by default | assumed noise | floor | a column of `show` | per call | title |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in catalog.names():
        metric = catalog.get(name)
        judged, column, each = ("yes" if flag else "" for flag in (metric.compared, metric.shown, metric.per_call))
        cells = [
            _code(name),
            metric.kind,
            metric.unit,
            judged,
            f"{metric.noise:.0%}",
            f"{metric.floor:.2f}",
            column,
            each,
        ]
        lines.append("| " + " | ".join([*cells, _cell(metric.title)]) + " |")
    return "\n".join(lines)


TABLES = (
    Table("options", "docs/options.md", "daskbench.config.OPTIONS", options_table),
    Table("sizes", "docs/workloads-and-metrics.md", "each workload's SIZES, workloads/registry.py", sizes_table),
    Table("metrics", "docs/workloads-and-metrics.md", "the metric catalog, daskbench/catalog.py", metrics_table),
)


def _span(text: str, table: Table) -> tuple[int, int]:
    """Where ``table``'s rows are in a page's ``text`` (after its start line, before the end line)."""
    start = text.find(table.start + "\n")
    if start < 0:
        raise LookupError(f"{table.page} has no line {table.start} (with a line {END} after the table)")
    begin = start + len(table.start) + 1
    end = text.find(END, begin)
    if end < 0:
        raise LookupError(f"{table.page}: the table {table.name} has no line {END} after it")
    return begin, end


def shown(text: str, table: Table) -> str:
    """The rows a page shows for ``table``, without the final newline."""
    begin, end = _span(text, table)
    return text[begin:end].rstrip("\n")


def rewritten(text: str, table: Table) -> str:
    """The page's ``text`` with ``table``'s rows made anew."""
    begin, end = _span(text, table)
    return text[:begin] + table.render() + "\n" + text[end:]


def differences(root: Path = ROOT, tables: tuple[Table, ...] = TABLES) -> list[str]:
    """One line per row (or missing marker) where a page differs from the code; empty when all agree."""
    found = []
    for table in tables:
        try:
            page = shown((root / table.page).read_text(encoding="utf-8"), table).splitlines()
        except LookupError as exc:
            found.append(str(exc))
            continue
        code = table.render().splitlines()
        for number in range(max(len(page), len(code))):
            has = page[number] if number < len(page) else "(no row)"
            wants = code[number] if number < len(code) else "(no row)"
            if has != wants:
                found.append(f"{table.page}, table {table.name}, row {number + 1}:\n  page: {has}\n  code: {wants}")
    if found:
        found.append("run tools/docs-tables to write the tables from the code")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/docs-tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page differs")
    args = parser.parse_args(argv)
    if args.check:
        found = differences()
        print("\n".join(found) or "tools/docs-tables: every table agrees with the code", file=sys.stderr)
        return 1 if found else 0
    for page in dict.fromkeys(table.page for table in TABLES):
        path = ROOT / page
        text = before = path.read_text(encoding="utf-8")
        try:
            for table in (table for table in TABLES if table.page == page):
                text = rewritten(text, table)
        except LookupError as exc:
            print(f"tools/docs-tables: {exc}", file=sys.stderr)
            return 2
        if text != before:
            path.write_text(text, encoding="utf-8")
            print(f"tools/docs-tables: rewrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
