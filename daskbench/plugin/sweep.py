"""The sweep: which cluster settings each benchmark runs on, and how they read.

Every test that uses ``measure`` is parametrized over saturation x workers x threads x memory x
each ``--config`` key through one session-scoped indirect fixture, so pytest groups the tests of
one cluster spec and starts each cluster once; the test ids name the swept axes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping

import pytest

from daskbench import config as cfg
from daskbench import provenance
from daskbench.clusters import machine_share
from daskbench.lockstep import turns
from daskbench.model import ClusterSpec
from daskbench.plugin import pace, taking
from daskbench.plugin.state import DaskbenchSession
from daskbench.redact import redact_url
from daskbench.text import (
    compact_bytes,
    config_key_short,
    plural,
    saturation_text,
    slots_count,
    slots_text,
    terminal_safe,
    wrap_items,
    wrap_line,
)


def spec_id(spec: ClusterSpec, settings: cfg.Settings) -> str:
    """The test id of a spec: ``sat=1.1-workers=2``, plus threads and memory when swept (more
    than one value) and every ``--config`` key (``-threads=2-memory=4GiB-memory.target=0.6``),
    so ``-k`` can pick any of them."""
    parts = [f"sat={saturation_text(spec.worker_saturation)}", f"workers={spec.n_workers}"]
    if len(settings.threads_per_worker) > 1:
        parts.append(f"threads={spec.threads_per_worker}")
    if len(settings.memory_per_worker) > 1:
        parts.append(f"memory={compact_bytes(spec.memory_per_worker)}")
    parts += [f"{config_key_short(key)}={value}" for key, value in spec.scheduler_config]  # secrets masked
    return terminal_safe("-".join(parts))


def slots_lines(settings: cfg.Settings) -> list[str]:
    """What the saturations mean in task slots per worker (ceil(saturation x threads)), per
    thread count; and, when two saturations give the same slots, that they do."""
    lines = []
    for threads in settings.threads_per_worker:
        slots = {sat: ClusterSpec("local", 1, threads, None, sat).task_slots for sat in settings.saturation}
        listed = ", ".join(f"{saturation_text(sat)} -> {slots_text(n)}" for sat, n in slots.items())
        lines += wrap_line(f"daskbench: task slots per worker at {plural(threads, 'thread')}: {listed}")
        by_slots: dict[int | None, list[float]] = {}
        for sat, n in slots.items():
            by_slots.setdefault(n, []).append(sat)
        for n, same in by_slots.items():
            if len(same) > 1:
                names = " and ".join(saturation_text(sat) for sat in same)
                lines += wrap_line(
                    f"daskbench: note: saturation {names} give {slots_count(n)} at {plural(threads, 'thread')}: "
                    "the same schedule, so their cases differ only by noise"
                )
    return lines


def repeat_of(item: pytest.Item) -> int:
    callspec = getattr(item, "callspec", None)
    return int(callspec.params.get("daskbench_repeat", 0)) if callspec else 0


def axes_items(s: cfg.Settings) -> list[str]:
    """The swept axes beyond workers and saturation: ``["threads=1,2", "memory=2GiB,4GiB", "KEY=V1,V2"]``."""
    items = [f"threads={','.join(map(str, s.threads_per_worker))}"] if s.threads_per_worker != (1,) else []
    if s.memory_per_worker != (None,):
        items.append(f"memory={','.join(compact_bytes(m) for m in s.memory_per_worker)}")
    return items + [f"{key}={','.join(values)}" for key, values in cfg.masked_sweep(s.config)]


def parametrize(metafunc: pytest.Metafunc, session: DaskbenchSession) -> None:
    """Parametrize a test that uses ``measure`` over the sweep (one session-scoped spec per cluster
    setting, so pytest groups the tests of one cluster), and over repeats with ``--interleave``."""
    specs = session.requested_specs()
    ids = [spec_id(spec, session.settings) for spec in specs]
    metafunc.parametrize("daskbench_cluster_spec", specs, ids=ids, indirect=True, scope="session")
    repeats = list(range(items_per_case(metafunc.fixturenames, session.settings)))
    if len(repeats) > 1 and "daskbench_repeat" in metafunc.fixturenames:
        metafunc.parametrize("daskbench_repeat", repeats, ids=[f"r{r}" for r in repeats], indirect=True)


def items_per_case(fixturenames: Iterable[str], s: cfg.Settings) -> int:
    """How many test items one case of a test is: a test measured as a whole, one per repeat (in a lockstep
    ``daskbench ab`` session, one per round the controller may ask for: `lockstep_rounds`); a ``measure``
    test one per repeat with ``--interleave``, else one (``measure`` repeats inside it)."""
    if taking.is_whole_test(fixturenames, s.client_fixtures):
        return lockstep_rounds() or s.repeat
    return s.repeat if s.interleave else 1


def lockstep_rounds(environ: Mapping[str, str] = os.environ) -> int | None:
    """The most rounds the ``daskbench ab`` controller of this session may ask of a case; None outside one."""
    rounds = environ.get(turns.ENV_MAX_ROUNDS, "") if environ.get(turns.ENV_CONTROL) else ""
    return int(rounds) if rounds.isdigit() else None


def measurements_of(item: pytest.Item, s: cfg.Settings) -> int:
    """How many measurements a selected test item makes: its repeats, unless each is an item of its own."""
    return 1 if items_per_case(getattr(item, "fixturenames", ()), s) > 1 else s.repeat


def header_lines(session: DaskbenchSession, fixed_size: bool) -> list[str]:
    """The settings after "collected N items", wrapped between whole settings at 120 columns (and
    what the saturations mean in task slots); secrets masked, control characters escaped."""
    s = session.settings
    saturations = ",".join(saturation_text(v) for v in s.saturation)
    workers = "as the scheduler has" if fixed_size else ",".join(map(str, s.workers))
    settings = [
        f"daskbench: cluster={redact_url(s.cluster)}",
        f"workers={workers}",
        *([] if fixed_size else axes_items(s)),
        f"saturation={saturations}",
        f"size={s.size}",
        f"repeat={s.repeat}",
        f"db={redact_url(s.db)}",
    ]
    return [
        *wrap_items([terminal_safe(item) for item in settings]),
        *([] if fixed_size else slots_lines(s)),
        *(
            []
            if fixed_size or machine_share() == 1
            else [
                f"daskbench: {machine_share()} clusters share this machine (daskbench ab, lockstep): "
                "auto memory per worker is this machine's share"
            ]
        ),
    ]


def plan_lines(session: DaskbenchSession, measuring: list[pytest.Item]) -> list[str]:
    """How many measurements the selected tests will make and about how long they take here (`pace`); the
    session counts its progress against that from now on."""
    if not measuring:
        return []
    s = session.settings
    session.planned = sum(measurements_of(item, s) for item in measuring)
    session.plan_started = time.monotonic()
    now = pace.current()
    session.conditions = pace.recorded(now)
    demand = max(s.workers) * max(s.threads_per_worker) if session.backend == "local" else 0
    documented = not all(  # the documented figures are the bundled suite's, not a whole-test suite's
        taking.is_whole_test(getattr(item, "fixturenames", ()), s.client_fixtures) for item in measuring
    )
    found = pace.estimate(s.db, s.size, str(provenance.host().get("cpu_model", "")), now, demand, documented)
    session.estimate_each = found.seconds_each if found is not None else None
    return wrap_line(terminal_safe(pace.plan_line(session.planned, found)))


def case_key_of(item: pytest.Item, session: DaskbenchSession) -> str:
    """The key both sides of a lockstep ``daskbench ab`` give this test's case (`turns.case_key`):
    its file and function, its own parameters, and the index of its cluster setting in the sweep."""
    callspec = getattr(item, "callspec", None)
    params = dict(callspec.params) if callspec is not None else {}
    spec = params.pop("daskbench_cluster_spec", None)
    params.pop("daskbench_repeat", None)
    specs = session.requested_specs()
    index = specs.index(spec) if spec in specs else 0
    test = getattr(item, "originalname", item.name)
    return turns.case_key(item.path.name, test, params, index)
