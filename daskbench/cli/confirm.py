"""``daskbench confirm``: is a suspect regression real? A lockstep A/B of the last good run's environment
against this one, for the suspect cases only.

Judges the candidate as ``daskbench compare`` does (``--history N`` or ``--baseline NAME``), picks the
last good run, rebuilds its versions of the packages that differ as an overlay over this interpreter
(`daskbench.confirm`), and runs the suspect workloads side by side until each is decided. Run it with
the interpreter the candidate ran in (``python -m daskbench confirm``): that is side B. Exit codes: 0
nothing confirmed (or nothing suspect), 1 a regression confirmed side by side, 2 could not run, which
includes "no other environment can be rebuilt" (then a re-run of the same environment is the fallback), 3 a
suspect undecided side by side (neither confirmed nor cleared). The suspects' false alarms are counted
together (`daskbench.judge.suite`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from daskbench import alerts, confirm
from daskbench.cli.app import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED, verdicts_exit
from daskbench.cli.common_args import (
    add_round_options,
    add_selection_options,
    build_options,
    metric_of,
    open_store,
    selection,
    settings,
)
from daskbench.cli.output import print_wrapped
from daskbench.judge import confirmed
from daskbench.judge.compare import compare, compare_group
from daskbench.judge.format import case_label, format_verdict
from daskbench.lockstep.sessions import new_group_name, pytest_arguments
from daskbench.text import plural, say
from daskbench.verdicts import Verdict

#: ``confirm``'s texts (add_parser's keywords).
TEXTS = {
    "help": "confirm a run's regressions side by side: the last good run's environment against this one",
    "description": "Judge a run as daskbench compare does; for its regressed cases only, rebuild the "
    "environment of the last good run (the newest run judged against that measured them and was not "
    "slow in them) as an overlay over this interpreter holding that run's versions of the packages that "
    "differ, and run a lockstep A/B of it (side A) against this interpreter (side B), rounds until each "
    "case is decided. The group's runs are tagged confirm_of=RUN; daskbench alert --group GROUP "
    "alerts only what it confirms. Run it with the interpreter the run was made in.",
    "epilog": "example: python -m daskbench confirm --history 20 --group confirm-tonight -- --size tiny; "
    "exit codes: 0 nothing confirmed, 1 a regression confirmed, 3 a suspect undecided, 2 could not run (no "
    "environment to rebuild: the good run recorded the same versions, a build failed, bad input)",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("confirm", **TEXTS)
    add_selection_options(parser, verb="confirm", group=False, floor=False)
    add_round_options(parser, "confirm")
    parser.set_defaults(func=cmd_confirm)


def cmd_confirm(args: argparse.Namespace) -> int:
    pytest_args = pytest_arguments(args.pytest_args)
    options = build_options(args)
    store = open_store(args)
    chosen = selection(args)
    night = compare(store, chosen)
    if not night.regressions:
        print_wrapped(f"confirm: nothing regressed in run {night.candidate_run.run_id[:8]}; nothing to confirm")
        return EXIT_OK
    plan = confirm.make_plan(store, night)
    group = args.group or new_group_name("confirm")
    good_python = confirm.build_good(plan, options, say=say)
    runner = confirm.Runner(
        store, settings(args).db, pytest_args, chosen.floors, args.max_rounds, args.max_time * 60, say, metric_of(args)
    )
    for line in runner.run(plan, group, good_python, sys.executable).lines():
        say(f"confirm: {line}")
    found = confirmed.stored(store, group)
    ab = compare_group(store, group, floors=found.floors)
    judged, confirmation = alerts.side_by_side(night, ab, reference=group, good=found.good, versions=found.versions())
    asked = {(v.fingerprint, v.metric) for v in plan.suspects}
    seen = [v for v in judged.regressions if (v.fingerprint, v.metric) not in asked]  # the night's noise hid them
    for verdict in (*plan.suspects, *seen):
        print_wrapped(_line(verdict, confirmation))
    held = judged.regressions
    said = f"{len(held) - len(seen)} of {plural(len(plan.suspects), 'regression')}" + (
        f", and {plural(len(seen), 'metric')} the night alone left undecided" if seen else ""
    )
    print_wrapped(f"confirmed side by side: {said} (daskbench compare --group {group})")
    return EXIT_REGRESSION if held else _exit(judged.verdicts, plan.suspects)


def _exit(verdicts: Sequence[Verdict], suspects: Sequence[Verdict]) -> int:
    """1 a regression confirmed; 3 a suspect still undecided side by side (or not measured); 0 none held."""
    asked = {(v.fingerprint, v.metric) for v in suspects}
    code = verdicts_exit([v for v in verdicts if (v.fingerprint, v.metric) in asked])
    if code == EXIT_UNDECIDED:
        print_wrapped("confirm: a suspect is undecided side by side (exit 3): neither confirmed nor cleared")
    return code


def _line(verdict: Any, confirmation: alerts.Confirmation) -> str:
    """``quick_planted[...] local 1w/1t sat=1.1, runtime_s: side by side: 2.98x slower (...)``."""
    case = case_label(verdict.workload, verdict.params, verdict.cluster)
    shown = confirmation.of(verdict) or f"not measured side by side (tonight: {format_verdict(verdict)})"
    return f"{case}, {verdict.metric}: {shown}"
