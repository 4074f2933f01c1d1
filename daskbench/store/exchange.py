"""The export/import line format: move a store's history between stores without losing a row.

Why: CI caches get evicted and nightly SQLite files merged by hand lose data; a plain,
versioned text file can be carried between nights (an artifact, a branch) and merged
into any store, any number of times.

Format (JSON lines, UTF-8), version `FORMAT_VERSION`:

- line 1, the header: ``{"format": "daskbench-export", "version": 2, "exported_at": ISO, "since": ISO|null}``;
- then one object per stored row: ``{"kind": KIND, "row": {...}}`` where KIND is one of
  `KINDS` (``run``, ``tag``, ``event``, ``case``, ``measurement``, ``flag``, ``task_peak``,
  ``baseline``) and ``row`` holds the store's columns for it, minus local autoincrement
  ids. A measurement carries its metric values (``"metrics": {name: value}``); a flag and
  a task peak (``--task-memory``: one task prefix of a measurement) name their
  measurement by (``run_id``, ``fingerprint``, ``repeat``). Non-finite floats are written
  as ``NaN``/``Infinity`` (Python's json reads them back).

Version 2 added ``task_peak`` rows; version 1 files (without them) are read as before.

Import is an idempotent merge keyed on ids every store shares: runs by run id, cases by
fingerprint, measurements by (run id, fingerprint, repeat), baselines by (name,
created_at, run ids), tags by (run id, key), task peaks by (run id, fingerprint, repeat,
prefix), events and flags by their full content.
Rows already present are skipped, so importing twice adds nothing. Both directions stream: export
writes a line per row as the store is read a batch at a time, import reads a file line by line twice,
once to check it whole (UTF-8, its header's whole-number version, each row's required keys) before the
store is opened, once to merge it a batch of rows at a time in one transaction, so a bad file is one line
and leaves the store as it was, and memory stays the same at any size. A file whose kinds are not in
`KINDS` order (exports always are) is merged one kind per pass. A reader refuses a file of a newer
version with one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from daskbench.errors import DaskbenchError
from daskbench.model import now_iso
from daskbench.store.facade import Store
from daskbench.store.schema import baselines, cases, measurements, run_events, run_tags, runs, task_memory
from daskbench.text import first_few

FORMAT_NAME = "daskbench-export"
FORMAT_VERSION = 2
#: Kinds of rows, in the order an import merges them (parents before children).
KINDS = ("run", "tag", "event", "case", "measurement", "flag", "task_peak", "baseline")


@dataclass
class Merged:
    """What an import added and skipped (already present), per kind."""

    added: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [
            f"{self.added.get(k, 0)} {k}s added, {self.skipped.get(k, 0)} skipped"
            for k in KINDS
            if self.added.get(k) or self.skipped.get(k)
        ]
        return "; ".join(parts) or "nothing to import"


def export_lines(store: Store, since: str | None = None) -> Iterator[str]:
    """The header, then one line per row of the store (runs started at or after ``since``)."""
    for _, line in _export(store, since):
        yield line


def _export(store: Store, since: str | None) -> Iterator[tuple[str, str]]:
    """(kind, line) of the header (kind ``""``) and of each row, as the store is read."""
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "exported_at": now_iso(), "since": since}
    yield "", json.dumps(header, sort_keys=True)
    for kind, row in store.dump_rows(since):
        yield kind, json.dumps({"kind": kind, "row": row}, sort_keys=True)


def write_export(store: Store, out: TextIO, since: str | None = None) -> dict[str, int]:
    """Write the export to ``out``, a line per row as it is read; returns how many rows of each kind were written."""
    counts: dict[str, int] = {}
    for kind, line in _export(store, since):
        out.write(line + "\n")
        if kind:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


#: Lines of an export, read afresh each time it is called (a file is opened again): a check, then a merge.
Lines = Callable[[], Iterable[str]]


class BrokenRow(DaskbenchError):
    """A line of an export, after a good header, that is no row: a file cut short (a job killed while writing
    it, an upload cut off) or damaged. Its message names the file and the line."""


def checked_rows(lines: Iterable[str], source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, row) of each row of export lines, after checking the header; one-line errors name the line."""
    iterator = iter(lines)
    _check_header(next(iterator, ""), source)
    needed = _needed()
    for number, line in enumerate(iterator, start=2):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind, row = record["kind"], dict(record["row"])
            fields = needed[kind]  # an unknown kind is a KeyError too
        except (ValueError, KeyError, TypeError):
            raise BrokenRow(
                f"{source} line {number} is not a daskbench export row; re-export it with: daskbench export"
            ) from None
        problem = _row_problem(kind, row, fields)
        if problem:
            raise BrokenRow(f"{source} line {number}: {problem}; re-export it with: daskbench export")
        yield kind, row


def check(lines: Iterable[str], source: str) -> bool:
    """Check every line of an export (nothing kept); whether its kinds come in `KINDS` order (parents first)."""
    order, last = {kind: index for index, kind in enumerate(KINDS)}, 0
    ordered = True
    for kind, _ in checked_rows(lines, source):
        ordered = ordered and order[kind] >= last
        last = max(last, order[kind])
    return ordered


def _needed() -> dict[str, tuple[str, ...]]:
    """The keys each kind of row must have: its table's required columns (a flag names its measurement)."""
    tables = {
        "run": runs,
        "tag": run_tags,
        "event": run_events,
        "case": cases,
        "measurement": measurements,
        "task_peak": task_memory,
        "baseline": baselines,
    }
    needed = {
        kind: tuple(c.name for c in table.columns if not c.nullable and c.name != "id")
        for kind, table in tables.items()
    }
    return {**needed, "flag": ("run_id", "fingerprint", "repeat", "flag", "at", "detail")}


def _row_problem(kind: str, row: dict[str, Any], needed: tuple[str, ...]) -> str | None:
    """What a row lacks (a required key, a number for a metric), or None when it can be merged."""
    missing = [key for key in needed if row.get(key) is None]
    if missing:
        return f"a {kind} row without {first_few(missing)}"
    metrics = row.get("metrics", {})
    if not isinstance(metrics, dict):
        return f"a {kind} row whose metrics are not a mapping of name to number"
    bad = [name for name, value in metrics.items() if isinstance(value, bool) or not isinstance(value, int | float)]
    return f"a {kind} row whose metric {first_few(bad)} is not a number" if bad else None


def _check_header(line: str, source: str) -> None:
    try:
        header = json.loads(line)
        ok = header.get("format") == FORMAT_NAME
    except (ValueError, AttributeError):
        ok = False
    if not ok:
        raise DaskbenchError(f"{source} is not a daskbench export (no header line); write one with: daskbench export")
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DaskbenchError(
            f"{source}: its header's version {version!r:.20} is not a whole number >= 1; "
            "re-export it with: daskbench export"
        )
    if version > FORMAT_VERSION:
        raise DaskbenchError(
            f"{source} uses export format {version}, newer than this daskbench reads ({FORMAT_VERSION}); "
            "upgrade daskbench (pip install -U daskbench)"
        )


def import_lines(store: Store, lines: Lines, source: str = "the rows", *, ordered: bool | None = None) -> Merged:
    """Merge export lines into the store in one transaction: all of ``source`` or nothing. ``ordered`` is what
    `check` found (checked here when not given); a file out of `KINDS` order is merged a pass per kind."""
    if ordered is None:
        ordered = check(lines(), source)

    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        if ordered:
            yield from checked_rows(lines(), source)
            return
        for kind in KINDS:
            yield from ((found, row) for found, row in checked_rows(lines(), source) if found == kind)

    try:
        counts = store.merge_rows(rows)
    except DaskbenchError as exc:
        raise DaskbenchError(f"{source}: {exc}") from None
    merged = Merged()
    for kind, (added, skipped) in counts.items():
        merged.added[kind], merged.skipped[kind] = added, skipped
    return merged


def file_lines(path: str | Path) -> Lines:
    """The lines of one export file, opened afresh on each call, its read errors said in one line
    (``-`` is not accepted: an import names its file)."""
    file = Path(path)
    if not file.is_file():
        raise DaskbenchError(f"no export file {str(file)!r}; write one with: daskbench export -o {file}")

    def lines() -> Iterator[str]:
        try:
            with file.open(encoding="utf-8") as text:
                yield from text
        except UnicodeDecodeError:
            raise DaskbenchError(
                f"{file} is not a daskbench export (not UTF-8 text); write one with: daskbench export"
            ) from None
        except OSError as exc:
            raise DaskbenchError(f"cannot read {file} ({exc.strerror or exc}); check the file") from None

    return lines


def check_file(path: str | Path) -> bool:
    """Check one export file whole, line by line (`check`); whether its kinds are in order."""
    return check(file_lines(path)(), str(path))


def import_file(store: Store, path: str | Path, *, ordered: bool | None = None) -> Merged:
    """Check (unless ``ordered`` says it was) and merge one export file, streamed."""
    return import_lines(store, file_lines(path), str(path), ordered=ordered)
