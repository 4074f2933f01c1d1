"""The options of the commands that decide by rounds (ab, bisect, calibrate, confirm, pr): the budget of a
case (``--max-rounds``, ``--max-time``) and of the whole comparison (``--budget``), and the metric whose
rounds decide (``--metric``). A shared piece of the command line, as `daskbench.cli.common` is."""

from __future__ import annotations

import argparse

from daskbench.cli.common import MAX_MINUTES, duration, whole_number
from daskbench.errors import DaskbenchError
from daskbench.judge import sequential
from daskbench.text import first_few


def add_budget_options(
    parser: argparse.ArgumentParser,
    what: str = "case",
    rounds: str = "",
    minutes: str = "",
    whole: str | None = None,
) -> None:
    """``--max-rounds`` and ``--max-time``: the budget of one ``what`` (a case; calibrate: an arm) of a command
    that decides by rounds (ab, bisect, calibrate, confirm, pr); ``rounds`` and ``minutes`` end their help.
    With ``whole`` (what the whole comparison is: "comparison", "bisection"), also ``--budget``: the time of
    all of it, shared by its cases (`daskbench.lockstep.parts`); read it as seconds with `budget_seconds`."""
    if whole is not None:
        parser.add_argument(
            "--budget",
            type=duration("m", 7 * 24 * 60, "--budget 20m"),
            default=None,
            metavar="TIME",
            help=f"time for the whole {whole}: every case screened first, then rounds where verdicts are "
            "still open and closest to deciding, until all are decided or the time is used: 20m, 2h; a bare "
            "number is minutes (default: no budget, each case until decided)",
        )
    parser.add_argument(
        "--max-rounds",
        type=whole_number(3, sequential.ROUNDS_LIMIT, "a number of rounds", "--max-rounds 30"),
        default=sequential.MAX_ROUNDS,
        metavar="N",
        help=f"most rounds of one {what}{rounds} (default {sequential.MAX_ROUNDS})",
    )
    parser.add_argument(
        "--max-time",
        type=duration("m", 24 * 60, "--max-time 10m"),
        default=MAX_MINUTES,
        metavar="TIME",
        help=f"most time of one {what}{minutes}: 10m, 1h, 90s; a bare number is minutes (default {MAX_MINUTES:g}m)",
    )


def budget_seconds(args: argparse.Namespace) -> float | None:
    """``--budget`` in seconds (None without it)."""
    minutes = getattr(args, "budget", None)
    return None if minutes is None else float(minutes) * 60


def add_metric_option(parser: argparse.ArgumentParser, verb: str) -> None:
    """``--metric NAME``: the declared metric whose rounds decide (runtime_s by default); checked by `metric_of`."""
    parser.add_argument(
        "--metric",
        default="runtime_s",
        metavar="NAME",
        help=f"the metric {verb}: runtime_s (default), peak_worker_memory_above_idle_bytes, "
        "peak_memory_above_idle_bytes, cost_usd, or any declared metric (daskbench show --format json lists them)",
    )


def metric_of(args: argparse.Namespace) -> str:
    """``--metric`` as a declared metric's name (short names such as ``runtime`` or ``memory`` accepted), or
    one line naming what is declared."""
    from daskbench import catalog

    given = str(getattr(args, "metric", "runtime_s"))
    names = catalog.names()
    aliases = {
        "runtime": "runtime_s",
        "memory": "peak_memory_above_idle_bytes",
        "worker-memory": "peak_worker_memory_above_idle_bytes",
        "cost": "cost_usd",
    }
    name = aliases.get(given, given)
    if name not in names:
        raise DaskbenchError(f"--metric {given}: not a declared metric; use one of {first_few(list(names), 8)}")
    return name
