"""``daskbench baseline set|list`` and ``daskbench compare``.

``daskbench compare`` with no ``--baseline`` and no ``--history`` compares the latest run
with the baseline named ``main``; when there is no such baseline it falls back to history
mode (each case against its last 20 good runs) and says so in its output, so a nightly job
works before anyone has named a baseline. Exit codes: 0 nothing regressed, 1 a regression
(or a newly failing case), 2 the comparison could not run.
"""

from __future__ import annotations

import argparse

from daskbench.cli.common import (
    add_db_option,
    add_format_option,
    add_selection_options,
    open_store,
    print_comparison,
    print_json,
    selection,
)
from daskbench.errors import DaskbenchError
from daskbench.judge.compare import compare
from daskbench.model import ACCEPTED_STEP
from daskbench.store import runstatus
from daskbench.text import plural


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_baseline(subparsers)
    _register_compare(subparsers)


def _register_baseline(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "baseline",
        help="name runs as a baseline, list baselines",
        description="A baseline is a name (e.g. main) pointing at one or more runs; setting it again repoints it.",
    )
    actions = parser.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    set_parser = actions.add_parser(
        "set",
        help="point NAME at one or more runs",
        description="Point baseline NAME at these runs (ids or unique prefixes). With several runs each counts "
        "once (its median), so their spread shows the run-to-run noise even of --repeat 1 runs.",
    )
    set_parser.add_argument("name", metavar="NAME", help="baseline name, e.g. main")
    set_parser.add_argument("runs", metavar="RUN", nargs="+", help="run id or unique prefix")
    set_parser.add_argument(
        "--force", action="store_true", help="accept a run that did not finish (interrupted, crashed, running)"
    )
    add_db_option(set_parser)
    set_parser.set_defaults(func=_baseline_set)
    list_parser = actions.add_parser("list", help="list baselines and their runs", description="List baselines.")
    add_db_option(list_parser)
    add_format_option(list_parser)
    list_parser.set_defaults(func=_baseline_list)
    accept = actions.add_parser(
        "accept",
        help="accept a run's level as the new normal for history verdicts",
        description="Mark the cases of RUN (all, or those of --workload) as a deliberate change of level: "
        "history verdicts (compare --history, the nightly) then judge them only against RUN and later runs. "
        "For a step that history mode would otherwise keep calling a regression until it leaves the window.",
        epilog="example: daskbench baseline accept 3f2a --workload wordcount --why 'new tokenizer, 1.3x slower'",
    )
    accept.add_argument("run", metavar="RUN", help="run id or unique prefix")
    accept.add_argument("--workload", action="append", help="only this workload's cases (repeatable)")
    accept.add_argument("--why", default="", help="the reason, kept with the mark")
    add_db_option(accept)
    accept.set_defaults(func=_baseline_accept)


def _register_compare(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="verdicts: what got slower, fatter or dearer than the baseline",
        description="Compare a run (default: the latest) with a baseline (default: the baseline named main; "
        "without one, each case's last 20 good runs). A row per case and metric that changed (or is "
        "inconclusive), biggest change first, and the count of the unchanged; --all lists every row.",
        epilog="exit codes: 0 nothing regressed, 1 something regressed or newly fails, 2 could not run",
    )
    add_selection_options(parser)
    parser.add_argument(
        "--all",
        dest="every_row",
        action="store_true",
        help="list every verdict, the unchanged ones too (--format json always has every one)",
    )
    add_format_option(parser)
    add_db_option(parser)
    parser.set_defaults(func=_compare)


def _baseline_set(args: argparse.Namespace) -> int:
    store = open_store(args)
    runs = [store.run(run) for run in args.runs]
    found = runstatus.statuses(store, runs)
    unfinished = [run for run in runs if found[run.run_id] != runstatus.FINISHED]
    if unfinished and not args.force:
        first = unfinished[0]
        raise DaskbenchError(
            f"{runstatus.describe(first, found[first.run_id])}: a baseline of a run that did not finish lacks "
            f"the cases it never reached (judged as new ever after); name a finished run (daskbench runs), or "
            f"add --force to use it anyway"
        )
    run_ids = store.set_baseline(args.name, [run.run_id for run in runs])
    print(f"baseline {args.name!r} -> {', '.join(run_id[:8] for run_id in run_ids)}")
    return 0


def _baseline_accept(args: argparse.Namespace) -> int:
    store = open_store(args)
    run = store.run(args.run)
    measured = {m.fingerprint for m in store.measurements([run.run_id])}
    cases = [
        case
        for fp, case in sorted(store.cases(measured).items())
        if not args.workload or case.workload in args.workload
    ]
    if not cases:
        wanted = f" of workload {', '.join(args.workload)}" if args.workload else ""
        raise DaskbenchError(
            f"run {run.run_id[:8]} has no cases{wanted}; see them with: daskbench show {run.run_id[:8]}"
        )
    marked = sum(store.flag_measurements(run.run_id, case.fingerprint, ACCEPTED_STEP, args.why) for case in cases)
    print(
        f"accepted run {run.run_id[:8]} as the new level of {plural(len(cases), 'case')} "
        f"({plural(marked, 'measurement')}); "
        "history verdicts of these cases start there"
    )
    return 0


def _baseline_list(args: argparse.Namespace) -> int:
    found = open_store(args).baselines()
    if args.format == "json":
        print_json({name: list(run_ids) for name, run_ids in found.items()})
    elif not found:
        print("no baselines yet; set one with: daskbench baseline set main <run-id>")
    for name, run_ids in found.items() if args.format == "table" else ():
        print(f"{name}  {' '.join(run_id[:8] for run_id in run_ids)}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    return print_comparison(compare(open_store(args), selection(args)), args.format, every_row=args.every_row)
