"""The README and docs/ pages: links resolve, the README stays short, the commands they show exist, and the
tables that restate the code (options, sizes, metrics) are what the code says."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from daskbench import catalog
from daskbench.cli import build_parser
from tools.docs_tables import TABLES, differences, rewritten

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: Pages whose links are checked too: the index of the measurement scripts links into docs/measured.md.
LINKED_PAGES = [*PAGES, ROOT / "measure" / "README.md"]
DASKBENCH = str(Path(sys.executable).parent / "daskbench")
MAX_README_LINES = 250

FENCE = re.compile(r"^[ \t]*```[^\n]*\n.*?^[ \t]*```[ \t]*$", re.M | re.S)
BASH_BLOCK = re.compile(r"^[ \t]*```bash[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
COMMENT = re.compile(r"(^|\s)#.*$")
SUBCOMMAND = re.compile(r"(?:^|[\s/])daskbench[ \t]+([a-z][a-z-]*)")
BENCHMARK_RUN = re.compile(r"(?:^|[\s/])pytest[ \t]+-m[ \t]+benchmark\b(.*)$")
FLAG = re.compile(r"(?<!\S)(--[a-z][a-z0-9-]*)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*$", re.M)


def relative_links(page: Path) -> list[str]:
    """Link and image targets of a Markdown page, outside code, that are not URLs."""
    prose = INLINE_CODE.sub("", FENCE.sub("", page.read_text()))
    return [target for target in LINK.findall(prose) if not SCHEME.match(target)]


def bash_lines() -> list[tuple[Path, str]]:
    """Every line of every ```bash block of the README and docs/, comments removed."""
    lines = []
    for page in PAGES:
        for block in BASH_BLOCK.findall(page.read_text()):
            lines += [(page, COMMENT.sub("", line)) for line in block.splitlines()]
    return [(page, line) for page, line in lines if line.strip()]


def anchors(text: str) -> set[str]:
    """The ``#anchors`` GitHub gives a page's headings (outside code): the text lower-cased, code marks and
    punctuation dropped, each space a hyphen; a repeated heading's numbered ``-1``, ``-2``..."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for title in HEADING.findall(FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        found.add(f"{slug}-{counts[slug]}" if slug in counts else slug)
        counts[slug] = counts.get(slug, 0) + 1
    return found


def test_heading_anchors_are_the_ones_github_makes() -> None:
    """Code marks, colons, slashes and commas go, hyphens stay, spaces become hyphens, repeats are numbered."""
    lines = ["# Top", "## Lockstep power: `measure/power`", "```", "# a comment, not a heading", "```"]
    found = anchors("\n".join([*lines, "## Memory, above idle --twice", "## Top", ""]))
    assert found == {"top", "lockstep-power-measurepower", "memory-above-idle---twice", "top-1"}


def test_relative_links_point_to_existing_files_and_headings() -> None:
    """Every relative link and image in README.md, docs/*.md and measure/README.md names a file that exists, and
    its #anchor (if any; alone, on the same page) a heading of that file."""
    checked, broken = 0, []
    for page in LINKED_PAGES:
        for target in relative_links(page):
            checked += 1
            path, _, anchor = target.partition("#")
            linked = page.parent / path if path else page
            if not linked.is_file() or (anchor and anchor not in anchors(linked.read_text())):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert checked, "no relative links found: the link pattern no longer matches"
    assert not broken, "broken links (no such file, or no heading of that anchor):\n" + "\n".join(broken)


def test_readme_is_at_most_250_lines() -> None:
    """The README stays a short front page; the reference lives in docs/."""
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES}): move text to docs/"


def test_readme_keeps_the_quickstart_commands_ci_runs() -> None:
    """The two Quickstart commands stay word for word: .ci/run runs them as written."""
    commands = {line.strip() for block in BASH_BLOCK.findall(README.read_text()) for line in block.splitlines()}
    assert {
        "ci/setup && .venv/bin/pytest -m benchmark",
        "ci/setup --test && .venv/bin/pytest -n auto --dist loadfile",
    } <= commands


def test_daskbench_subcommands_in_docs_exist() -> None:
    """Each `daskbench <subcommand>` in a bash block of the README or docs/ is a subcommand of the
    CLI's parser (`daskbench --help` lists it; each one's own --help is built by the same parser)."""
    names = sorted({name for _, line in bash_lines() for name in SUBCOMMAND.findall(line)})
    assert {"runs", "compare", "report", "ab"} <= set(names), names
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    known = set(actions[0].choices)
    assert not set(names) - known, f"not daskbench subcommands: {sorted(set(names) - known)}"
    assert all(f"usage: daskbench {name}" in actions[0].choices[name].format_help() for name in names)


def test_daskbench_help_works_in_a_fresh_process() -> None:
    """The entry point itself answers --help (one process: the parser is the same for every subcommand)."""
    done = subprocess.run([DASKBENCH, "compare", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: daskbench compare" in done.stdout, done.stderr[-500:]


def test_pytest_benchmark_flags_in_docs_are_real_options() -> None:
    """Each --flag after `pytest -m benchmark` in a bash block of the README or docs/ is in pytest's --help.

    The plugin comes in through its pytest11 entry point (the installed daskbench), so plain
    `pytest --help` lists daskbench's options; `-p daskbench.plugin.hooks` on top would register it twice.
    """
    flags: dict[str, set[str]] = {}
    for page, line in bash_lines():
        for rest in BENCHMARK_RUN.findall(line):
            for flag in FLAG.findall(rest):
                flags.setdefault(flag, set()).add(str(page.relative_to(ROOT)))
    assert {"--size", "--saturation", "--workers"} <= set(flags), sorted(flags)

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "daskbench" in result.stdout, "daskbench's pytest plugin is not loaded: is daskbench installed?"
    unknown = {
        flag: pages
        for flag, pages in flags.items()
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", result.stdout)
    }
    assert not unknown, f"flags shown after `pytest -m benchmark` that pytest does not know: {unknown}"


def test_the_tables_that_restate_the_code_are_what_it_says() -> None:
    """docs/options.md's options table and docs/workloads-and-metrics.md's sizes and metrics tables are exactly
    what tools/docs-tables writes from `config.OPTIONS` (flag, env var, pyproject key, default, help), each
    workload's SIZES through the registry, and the metric catalog."""
    found = differences()
    assert found == [], "\n".join(found)


def test_a_table_row_that_drifted_is_named_with_the_fix(tmp_path: Path) -> None:
    """A copy of the pages with one options row changed by hand, and a page without its markers: each
    difference names the page, the table, the row, both texts, and the command that rewrites them."""
    options, sizes = TABLES[0], TABLES[1]
    (tmp_path / "docs").mkdir()
    page = (ROOT / options.page).read_text()
    (tmp_path / options.page).write_text(page.replace("| `1,2` |", "| `1,2,4` |", 1))
    (tmp_path / sizes.page).write_text("# Workloads\n\nno table here\n")
    found = differences(tmp_path, (options, sizes))
    assert found[0].startswith("docs/options.md, table options, row 5:\n  page: | `--workers` |"), found
    assert "| `1,2,4` |" in found[0].splitlines()[1] and "| `1,2` |" in found[0].splitlines()[2]
    assert found[1].startswith("docs/workloads-and-metrics.md has no line <!-- tools/docs-tables: sizes (from"), found
    assert found[-1] == "run tools/docs-tables to write the tables from the code" and len(found) == 3
    assert differences(tmp_path, (options,))[:1] == found[:1]
    fixed = rewritten((tmp_path / options.page).read_text(), options)
    assert fixed == page


def test_the_metric_definitions_name_declared_metrics() -> None:
    """Each metric the hand-written "How each is measured" table of docs/workloads-and-metrics.md defines is
    one the catalog declares (a renamed or removed metric is not left defined there)."""
    text = (ROOT / "docs" / "workloads-and-metrics.md").read_text()
    table = text.split("| metric | definition |", 1)[1].split("\n\n", 1)[0]
    named = [name for row in table.splitlines()[2:] for name in INLINE_CODE.findall(row.split(" | ")[0])]
    assert len(named) >= 10, named
    assert [name for name in named if not catalog.is_declared(name.strip("`"))] == []
