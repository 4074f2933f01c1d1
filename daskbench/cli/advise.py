"""``daskbench advise RUN``: what to run each workload of a run on, and why (`daskbench.advise`)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from daskbench import config
from daskbench.advise import advise, configs_of
from daskbench.cli.common_args import add_db_option, add_format_option, open_store, settings
from daskbench.cli.output import print_json
from daskbench.metrics.cost import load_prices
from daskbench.model import JSON_VERSION
from daskbench.text import json_safe

_COLUMNS = 120


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "advise",
        help="right-sizing: worker memory, threads and the cheapest shape, from what a run measured",
        description="For each workload of RUN: the largest per-task peak memory (--task-memory), the worker "
        "memory each measured thread count needs below the spill threshold, the threads each measured memory "
        "limit allows, the cheapest priced instance for it, the cheapest and the fastest measured "
        "configuration, configurations that failed, and which sweep would cover what the run does not. "
        "Every line cites its measurements.",
        epilog="example: pytest -m benchmark -k wordcount --threads-per-worker 1,2 --memory-per-worker 2GiB,4GiB "
        "--task-memory, then daskbench advise <run>; exit codes: 0 advice printed, 2 could not run",
    )
    parser.add_argument("run_id", metavar="RUN", help="run id or a unique prefix of it (see daskbench runs)")
    add_db_option(parser)
    config.add_options(parser.add_argument, ("prices",))
    add_format_option(parser)
    parser.set_defaults(func=cmd_advise)


def cmd_advise(args: argparse.Namespace) -> int:
    prices = load_prices(settings(args).prices)
    store = open_store(args)
    run = store.run(args.run_id)
    measurements = store.measurements([run.run_id])
    cases = store.cases({m.fingerprint for m in measurements})
    found = advise(run, configs_of(run, measurements, cases), prices)
    if args.format == "json":
        print_json(
            json_safe(
                {
                    "version": JSON_VERSION,
                    "run_id": run.run_id,
                    "prices_as_of": prices.as_of,
                    "workloads": [w.to_dict() for w in found],
                }
            )
        )
        return 0
    if not found:
        print(f"run {run.run_id[:8]} has no measurements to advise from")
    for workload in found:
        params = ",".join(f"{k}={v}" for k, v in sorted(workload.params.items()))
        print(f"{workload.workload}[{params}]" if params else workload.workload)
        for line in workload.lines:
            cites = f" [{'; '.join(line.cites)}]" if line.cites else ""
            text = f"{line.topic}: {line.text}{cites}"
            print(textwrap.fill(text, _COLUMNS, initial_indent="  ", subsequent_indent="      "))
        print()
    return 0
