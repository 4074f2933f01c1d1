"""``daskbench baseline set|list|accept``: name runs as a baseline, list baselines, accept a new level.

A baseline is a name (``main`` by default in ``compare``) pointing at one or more runs; ``accept`` marks a
run's cases as a deliberate change of level, so history verdicts judge them from there on.
"""

from __future__ import annotations

import argparse
from typing import Any

from daskbench.cli.common_args import add_db_option, add_format_option, open_store
from daskbench.cli.output import print_json
from daskbench.errors import DaskbenchError
from daskbench.model import ACCEPTED_STEP
from daskbench.store import runstatus
from daskbench.text import plural

#: The texts of ``baseline`` and its actions (add_parser's keywords).
TEXTS: dict[str, dict[str, str]] = {
    "baseline": {
        "help": "name runs as a baseline, list baselines",
        "description": "A baseline is a name (e.g. main) pointing at one or more runs; setting it again repoints it.",
    },
    "set": {
        "help": "point NAME at one or more runs",
        "description": "Point baseline NAME at these runs (ids or unique prefixes). With several runs each counts "
        "once (its median), so their spread shows the run-to-run noise even of --repeat 1 runs.",
    },
    "list": {"help": "list baselines and their runs", "description": "List baselines."},
    "accept": {
        "help": "accept a run's level as the new normal for history verdicts",
        "description": "Mark the cases of RUN (all, or those of --workload) as a deliberate change of level: "
        "history verdicts (compare --history, the nightly) then judge them only against RUN and later runs. "
        "For a step that history mode would otherwise keep calling a regression until it leaves the window.",
        "epilog": "example: daskbench baseline accept 3f2a --workload wordcount --why 'new tokenizer, 1.3x slower'",
    },
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("baseline", **TEXTS["baseline"])
    actions = parser.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    set_parser = actions.add_parser("set", **TEXTS["set"])
    set_parser.add_argument("name", metavar="NAME", help="baseline name, e.g. main")
    set_parser.add_argument("runs", metavar="RUN", nargs="+", help="run id or unique prefix")
    set_parser.add_argument(
        "--force", action="store_true", help="accept a run that did not finish (interrupted, crashed, running)"
    )
    add_db_option(set_parser)
    set_parser.set_defaults(func=_baseline_set)
    list_parser = actions.add_parser("list", **TEXTS["list"])
    add_db_option(list_parser)
    add_format_option(list_parser)
    list_parser.set_defaults(func=_baseline_list)
    accept = actions.add_parser("accept", **TEXTS["accept"])
    accept.add_argument("run", metavar="RUN", help="run id or unique prefix")
    accept.add_argument("--workload", action="append", help="only this workload's cases (repeatable)")
    accept.add_argument("--why", default="", help="the reason, kept with the mark")
    add_db_option(accept)
    accept.set_defaults(func=_baseline_accept)


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
