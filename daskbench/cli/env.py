"""``daskbench env RUN``: the virtualenv of a run's recorded versions (plus this daskbench), built once.

Prints the environment's interpreter on stdout (``$(daskbench env RUN)``), progress on stderr.
The build itself is `daskbench.envs`; its flags are `daskbench.cli.common_args.add_build_options`, shared
with ``ab --a-from``/``--b-from``, ``bisect``, ``confirm`` and ``pr``: ``--pin dask==2026.7.0`` replaces the
record's dask (and a companion recorded with it, distributed) as it replaces it everywhere.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from daskbench import envs
from daskbench.cli.common_args import add_build_options, add_db_option, add_old_spellings, build_options, open_store
from daskbench.text import say

#: ``env``'s texts (add_parser's keywords).
TEXTS = {
    "help": "build (once) a virtualenv holding the package versions a run recorded; print its python",
    "description": "Build a virtualenv holding the versions a run recorded (dask, distributed, numpy, pandas, "
    "pyarrow, xarray and the rest) plus this daskbench, installed the way it is installed here. It is "
    f"cached by its version set under ${envs.CACHE_ENV} (default ~/.cache/daskbench/envs), so it is built "
    "once; with uv when it is on PATH or importable, pip otherwise. Its versions are checked against the "
    "record after install, and each time it is reused. Prints the interpreter's path on stdout, progress "
    "on stderr.",
    "epilog": "example: $(daskbench env 1a2b3c4d) -m pytest -m benchmark -k ocean; "
    "exit codes: 0 built or reused, 2 could not run (unknown run, a version the index does not have, "
    "a version mismatch)",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("env", **TEXTS)
    parser.add_argument("run", metavar="RUN", help="run id or unique prefix whose recorded versions to install")
    parser.add_argument(
        "--only", metavar="NAME,...", help="install only these of the recorded packages (and their dependencies)"
    )
    parser.add_argument(
        "--without-daskbench",
        action="store_true",
        help="leave daskbench out (the environment then cannot run the suite)",
    )
    add_build_options(parser)
    add_old_spellings(parser, "--pin", "--set", split=",")
    add_db_option(parser)
    parser.set_defaults(func=cmd_env)


def cmd_env(args: argparse.Namespace) -> int:
    only = envs.parse_names(args.only, "--only") if args.only else None
    options = build_options(args)
    run = open_store(args).run(args.run)
    overrides = exact_versions(options.extra_pins)
    spec = envs.spec_from_run(run, overrides=overrides, only=only, with_daskbench=not args.without_daskbench)
    python: Path = envs.build(spec, options, say=say)
    print(python)
    return 0


def exact_versions(pins: Sequence[envs.Pin]) -> dict[str, str] | None:
    """The versions ``--pin NAME==VERSION`` names, which replace the record's (None: none named)."""
    exact = {pin.name: pin.specifier[2:] for pin in pins if re.fullmatch(r"==[^,*=<>!~ ]+", pin.specifier)}
    return exact or None
