"""``daskbench data prepare``: write workload inputs once, ahead of a run (``data`` has that one action).

Useful before a nightly run against a cloud cluster: inputs for ``--size large`` take
a while to write, and the benchmarks then find them complete and reuse them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from daskbench import config
from daskbench.cli.common_args import settings
from daskbench.cli.values import whole_number
from daskbench.text import format_bytes, plural

if TYPE_CHECKING:  # the workloads import dask.array, pandas and xarray: only when inputs are prepared
    from daskbench.inputs import Prepared


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="prepare workload inputs", description="Manage workload inputs.")
    commands = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)
    prepare = commands.add_parser(
        "prepare",
        help="write workload inputs once (reused when already complete)",
        description="Write the inputs of the workloads that read data, once per (workload, size, seed); "
        "a complete copy is reused, a partial one is rewritten.",
    )
    config.add_options(prepare.add_argument, ("data", "s3_endpoint", "size"))
    prepare.add_argument(
        "--workload",
        action="append",
        type=_workload,
        metavar="WORKLOAD",
        help="only this workload's inputs, e.g. wordcount (repeatable; default: all that read inputs)",
    )
    prepare.add_argument(
        "--seed",
        type=whole_number(0, 2**32 - 1, "a generator seed", "--seed 0"),
        default=0,
        help="generator seed, 0 to 2**32-1 (default: 0, as the benchmarks use)",
    )
    prepare.set_defaults(func=run_prepare)


def _workload(name: str) -> str:
    """A workload that reads prepared inputs (the choices are read only when the option is given)."""
    from daskbench.workloads.datasets import GENERATORS

    if name not in GENERATORS:
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {', '.join(sorted(GENERATORS))})")
    return name


def run_prepare(args: argparse.Namespace) -> int:
    from daskbench import inputs
    from daskbench.workloads.datasets import GENERATORS

    options = settings(args)
    location = inputs.resolve_data_location(options.data, options.s3_endpoint)
    print(f"inputs for size {options.size} in {location.root}")
    for workload in args.workload or sorted(GENERATORS):
        prepared = inputs.prepare(location, workload, options.size, args.seed)
        print(_progress_line(prepared), flush=True)
    return 0


def _progress_line(prepared: Prepared) -> str:
    size = f"{format_bytes(prepared.input_bytes)} in {plural(len(prepared.files), 'file')}"
    if prepared.reused:
        return f"  reused {prepared.name}: {size}"
    return f"  wrote  {prepared.name}: {size} in {prepared.seconds:.1f} s"
