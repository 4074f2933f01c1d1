"""``daskbench gc``: remove kept evidence (``--evidence``) that no run needs any more."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

from daskbench import config
from daskbench.cli.common_args import add_db_option, open_store, settings
from daskbench.cli.output import print_wrapped
from daskbench.cli.values import duration
from daskbench.evidence import evidence_root, find_garbage, remove_garbage
from daskbench.text import format_bytes, plural


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gc",
        help="remove kept evidence of runs the store no longer has, or of old runs",
        description="Remove the evidence folders (--evidence: performance reports, task streams) of runs the "
        "store no longer has, and with --older-than AGE of runs started earlier, except runs a baseline names; "
        "also half-written files a crash left. Nothing else in the folder is touched, nor the run folders "
        "of another store sharing it (each names its store).",
        epilog="examples: daskbench gc --dry-run | daskbench gc --older-than 30d",
    )
    add_db_option(parser)
    config.add_options(parser.add_argument, ("evidence_dir",))
    parser.add_argument(
        "--older-than",
        metavar="AGE",
        type=duration("--older-than", "d", 36500, "--older-than 30d"),
        help="also remove evidence of runs started longer ago than AGE: 30d, 12h, 2w (baselines kept)",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    parser.set_defaults(func=cmd_gc)


def cmd_gc(args: argparse.Namespace) -> int:
    resolved = settings(args)
    store = open_store(args)
    root = evidence_root(resolved.db, resolved.evidence_dir)
    runs = {run.run_id: run.started_at for run in store.runs()}
    protected = {run_id for ids in store.baselines().values() for run_id in ids}
    before = (datetime.now(UTC) - timedelta(days=args.older_than)).isoformat() if args.older_than else None
    garbage = find_garbage(root, runs, protected, before, resolved.db)
    verb = "would remove" if args.dry_run else "removed"
    for folder, reason in garbage.folders:
        print(f"{verb} {folder} ({reason})")  # one line a folder, whatever its length: for scripts too
    if not args.dry_run:
        remove_garbage(garbage)
    count = len(garbage.folders)
    print_wrapped(
        f"daskbench gc: {verb} {plural(count, 'run folder')} and {plural(len(garbage.partial_files), 'partial file')}, "
        f"{format_bytes(garbage.size_bytes)}, under {root}"
    )
    if garbage.others:
        print(f"kept {plural(garbage.others, 'run folder')} of other stores sharing the folder (not this store's)")
    return 0
