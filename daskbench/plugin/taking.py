"""What every way of taking a measurement shares: the ``measure`` fixture (`daskbench.plugin.measure_fixture`) and a
test measured as a whole through a client fixture (`daskbench.plugin.whole`) both claim a case's identity,
refuse a busy shared cluster, import the benchmark's modules on fresh workers, and write one progress line per
measurement (at most 120 columns, secrets hidden) in place of pytest's ``.``."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterable, Iterator

import pytest

from daskbench.clusters import OpenCluster, backend_named, busy_message, forkserver, wait_until_idle
from daskbench.config import shown_message
from daskbench.lockstep.turns import Turns
from daskbench.model import Case, Measurement
from daskbench.plugin.pace import pace
from daskbench.plugin.state import DaskbenchSession
from daskbench.text import compact_bytes, config_key_short, format_bytes, saturation_text, wrap_items, wrap_line

#: Node ids that wrote daskbench progress lines: pytest's own ``.``/``F`` for them is dropped.
QUIET_KEY = pytest.StashKey[set[str]]()


def is_whole_test(fixturenames: Iterable[str], client_fixtures: tuple[str, ...] | None) -> bool:
    """Whether a test is measured as a whole (`daskbench.plugin.whole`): it takes one of the client fixtures
    (``--client-fixtures``) and not ``measure`` (which then measures only what it is given)."""
    names = set(fixturenames)
    return "measure" not in names and bool(names & set(client_fixtures or ()))


def live_cluster(session: DaskbenchSession, cluster: OpenCluster) -> OpenCluster:
    """The session's live cluster (a fresh one after a harness error), else the fixture's."""
    return session.cluster or cluster


def claim_or_fail(session: DaskbenchSession, node: pytest.Item, case: Case, repeat: int, fix: str) -> None:
    """Fail the test when another test of this run measured the same case (one identity, one history);
    ``fix`` says how to tell them apart."""
    owner = session.claim(case, repeat, node.nodeid)
    if owner is not None:  # the first test's measurement stays; this one is not measured
        pytest.fail(
            f"{node.nodeid} measures the same case as {owner} ({case.workload!r}, params "
            f"{dict(case.params)}, same cluster); {fix}",
            pytrace=False,
        )


def shared_cluster_busy(session: DaskbenchSession, cluster: OpenCluster) -> str | None:
    """On a running scheduler: None once it is idle (waiting up to --wait-idle), else why not."""
    if not backend_named(session.backend).fixed_size:
        return None
    wait = session.settings.wait_idle
    busy = wait_until_idle(live_cluster(session, cluster).client, wait)
    return busy_message(session.settings.cluster, busy, wait) if busy else None


def requested_saturation(node: pytest.Item) -> float:
    callspec = getattr(node, "callspec", None)
    spec = callspec.params.get("daskbench_cluster_spec") if callspec else None
    return spec.worker_saturation if spec is not None else math.nan


def repeats(session: DaskbenchSession, only: int | None, turns: Turns | None, key: str) -> Iterator[tuple[int, int]]:
    """The repeats to measure and the calls each makes: ``--repeat`` of them (only ``only`` when given) of one
    call, or in a lockstep ``daskbench ab`` session as many as the controller gives turns for, each of the calls
    it asks (`daskbench.lockstep.loops`)."""
    if turns is None:
        yield from ((repeat, 1) for repeat in ([only] if only is not None else range(session.settings.repeat)))
        return
    repeat = 0
    while loops := turns.wait(key, repeat):
        yield repeat, loops
        repeat += 1


def modules_to_preload(node: pytest.Item) -> tuple[str, ...]:
    """The benchmark's module, the loaded workload modules and libraries, to import on fresh workers."""
    module = getattr(node, "module", None)
    names = [name for name in sys.modules if name == "daskbench.workloads" or name.startswith("daskbench.workloads.")]
    names += [name for name in forkserver.LIBRARIES if name in sys.modules]  # what a forked worker has already
    return tuple(dict.fromkeys([*names, *([module.__name__] if module is not None else [])]))


def progress(node: pytest.Item, session: DaskbenchSession, case: Case, measurement: Measurement) -> None:
    """One line per measurement on the terminal (not captured), so long sweeps show progress, with how
    many are measured and the time left."""
    so_far = ""
    if session.planned:
        elapsed = max(time.monotonic() - session.plan_started - session.one_off_seconds, 0.0)
        so_far = pace(session.count, session.planned, elapsed, session.estimate_each)
    write(node, progress_line(case, measurement, so_far))


def write(node: pytest.Item, text: str) -> None:
    """Write ``text`` in lines of at most 120 columns (wrapped between words, never cut), each
    `shown_message`: secrets hidden and control characters escaped, whatever the benchmark put in it."""
    for line in (part for whole in text.split("\n") for part in wrap_line(shown_message(whole))):
        _write_line(node, line)


def _write_line(node: pytest.Item, line: str) -> None:
    """Write a whole line without resetting pytest's file header (which would repeat per test)."""
    plugins = node.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or node.config.get_verbosity() < 0:
        return
    node.config.stash.setdefault(QUIET_KEY, set()).add(node.nodeid)
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if node.config.get_verbosity() > 0:  # -v: pytest then rewrites "test id PASSED" below
            reporter.write_line(line)
            return
        if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
            reporter.line("")
        reporter.line(line)


def progress_line(case: Case, m: Measurement, so_far: str = "") -> str:
    """``daskbench: wordcount size=small w=2 t=1 mem=4GiB sat=1.1 memory.target=0.6 r0 passed 1.23s
    peak/worker 1.1 GiB``: the params and every cluster axis (workers, threads, memory, saturation,
    config), so no two cases of a sweep read the same; too wide, it wraps between whole items."""
    spec = case.cluster
    runtime = f"{m.runtime_s:.2f}s" if m.runtime_s is not None else "-"
    items = [
        f"daskbench: {case.workload}",
        *(f"{key}={value}" for key, value in sorted(case.params.items())),
        f"w={spec.n_workers}",
        f"t={spec.threads_per_worker}",
        f"mem={compact_bytes(spec.memory_per_worker)}",
        f"sat={saturation_text(spec.worker_saturation)}",
        *(f"{config_key_short(key)}={value}" for key, value in spec.scheduler_config),
        f"r{m.repeat}",
        m.outcome,
        runtime,
        f"peak/worker {format_bytes(m.peak_worker_memory_bytes)}",
        *([f"({so_far})"] if so_far else []),
    ]
    return "\n".join(wrap_items(items))
