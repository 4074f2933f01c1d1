"""What one benchmark session shares: settings, the store, the run, and the open cluster.

At most one cluster is alive at a time: cases that share a cluster spec run back to back
(pytest groups them), and a new spec closes the previous cluster before starting its own.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from daskbench import config as cfg
from daskbench.clusters import (
    SERVER_PREFIXES,
    Backend,
    OpenCluster,
    backend_named,
    busy_message,
    check_kwargs,
    forkserver,
    load_kwargs,
    open_cluster,
    typed_config,
    wait_until_idle,
)
from daskbench.errors import DaskbenchError, check_writable
from daskbench.metrics.cost import PriceTable
from daskbench.model import CLUSTER_LOST, INTERRUPTED, Case, ClusterSpec, Measurement, Run, now_iso
from daskbench.plugin.measuring import Measurer
from daskbench.redact import redact_url
from daskbench.store import Store
from daskbench.text import one_line, plural

#: How the line for a running scheduler of other versions begins (said once a session).
MISMATCH_SAID = "daskbench: the cluster at"
#: The least time a cluster may take to start (a cloud cluster takes minutes); --timeout above it raises it.
CLUSTER_START_SECONDS = 600.0


@dataclass
class DaskbenchSession:
    """Everything one pytest session shares: settings, store, run, the open cluster."""

    settings: cfg.Settings
    backend: str
    prices: PriceTable
    store: Store | None = None
    run: Run | None = None
    count: int = 0
    cluster: OpenCluster | None = None
    measurer: Measurer | None = None
    requested: ClusterSpec | None = None
    summary_lines: list[str] = field(default_factory=list)
    #: The one line saying the scheduler was lost, set by the first ``cluster-lost`` measurement: the
    #: plugin then stops the session, and the run is recorded as cut short by it (`runstatus.CLUSTER_LOST`).
    lost: str | None = None
    #: Whether pytest showed `lost` as its reason to stop (it does when a test was left to run).
    lost_shown: bool = False
    #: Whether a Ctrl-C (or SIGTERM) went through the tests: the run reads interrupted even when pytest then
    #: ends with another exit status (its report of the interrupt failing, issue 45).
    interrupted: bool = False
    #: The session's test selection as run tags (`SELECT_K`, `SELECT_M`), so ``compare`` can
    #: tell a case the run never selected from one that went missing.
    selection: dict[str, str] = field(default_factory=dict)
    #: The header's line saying this session's shard of the selection (``--shard K/N``), "" without one.
    shard_line: str = ""
    #: (case fingerprint, repeat) -> the test that measured it in this run: a case has one identity.
    claims: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The measurements the selected tests will make (`sweep.plan_lines`), and when that was said
    #: (``time.monotonic``): each progress line counts against it (`pace.pace`).
    planned: int = 0
    plan_started: float = 0.0
    #: The header's estimate of one measurement's seconds here (`pace.estimate`), None without one; and the
    #: seconds spent on one-off work (input generation in ``measure.prepare``), left out of the pace so far.
    estimate_each: float | None = None
    one_off_seconds: float = 0.0
    #: Lockstep cases the ``daskbench ab`` controller ended: a whole test's later rounds skip without asking.
    turns_over: set[str] = field(default_factory=set)
    #: What the header read of this machine's speed (``load_1m``, ``probe_s``), recorded with the run's host.
    conditions: dict[str, float] = field(default_factory=dict)
    #: The swept Dask config set on this client while the open cluster's cases run.
    _client_config: Any = None
    #: The run's label and why it is the fallback ``local`` (`label`), worked out once.
    _label: tuple[str, str | None] | None = None
    #: When the last measurement was recorded (or the cluster opened), ``time.monotonic()``: a running scheduler's
    #: silence since then fell inside the measurement being recorded (`_silenced`).
    _since: float = 0.0
    #: The run being stored (`ensure_run`): a Ctrl-C can land inside the store's call after its commit, before
    #: `run` is set; `finish` then looks for the row, so a run stored that way still reads interrupted.
    _adding: Run | None = None

    @property
    def store_display(self) -> str:
        return redact_url(self.settings.db)

    def label(self) -> tuple[str, str | None]:
        """The run's label: ``--label`` (or ``DASKBENCH_LABEL``), else `provenance.default_label`, with
        the reason when that fell back to ``local`` (None otherwise)."""
        if self._label is None:
            from daskbench import provenance

            self._label = (self.settings.label, None) if self.settings.label else provenance.default_label()
        return self._label

    def label_lines(self) -> list[str]:
        """The header's note when the label fell back to ``local``: the label, why, and how to name the run."""
        label, why = self.label()
        return [f"daskbench: label={label} ({why}; --label NAME or DASKBENCH_LABEL names the run)"] if why else []

    def requested_specs(self) -> list[ClusterSpec]:
        """One spec per combination of the sweep axes (saturation x workers x threads x memory x
        ``--config``); a fixed-size backend (a running scheduler) gets its own size once."""
        s, backend = self.settings, backend_named(self.backend)
        target = s.cluster if backend.records_target else ""
        sizes = (
            [(s.workers[0], s.threads_per_worker[0], s.memory_per_worker[0])]
            if backend.fixed_size
            else [
                (n, threads, memory)
                for threads in s.threads_per_worker
                for memory in s.memory_per_worker
                for n in s.workers
            ]
        )
        return [
            ClusterSpec(self.backend, n, threads, memory, sat, scheduler_config=config, target=target)
            for config in config_combinations(cfg.masked_sweep(s.config))  # secret values masked: stored, shown
            for sat in s.saturation
            for n, threads, memory in sizes
        ]

    def preflight(self) -> None:
        """Every check that can fail before any cluster starts or run row is written: the
        backend's (scheduler reachable, coiled installed), --cluster-kwargs (readable YAML,
        keywords the class accepts) and --compare (a baseline or run that exists)."""
        Store.preflight(self.settings.db)
        check_sweep_fits_backend(self.settings, backend_named(self.backend))
        backend_named(self.backend).preflight(self.settings.cluster)
        if backend_named(self.backend).fixed_size:
            self._check_idle()
        check_kwargs(
            self.settings.cluster, load_kwargs(self.settings.cluster_kwargs), backend_named(self.backend).keywords
        )
        if self.settings.compare:
            self._check_compare_target(self.settings.compare)
        if self.settings.evidence:
            self._check_evidence_root()

    def _check_evidence_root(self) -> None:
        """--evidence keeps files only if their folder can be written: say so now, not by losing them."""
        from daskbench.evidence import evidence_root

        flag = "--evidence-dir" if self.settings.evidence_dir else "--evidence (beside --db)"
        check_writable(evidence_root(self.settings.db, self.settings.evidence_dir), flag, folder=True)

    def _check_idle(self) -> None:
        """A shared scheduler busy with other clients' work is refused before any run row (after
        waiting up to --wait-idle): the harness is a guest there."""
        from distributed import Client

        try:
            client = Client(self.settings.cluster, timeout=10)
        except (OSError, TimeoutError):
            return  # the backend's own start says it clearly
        try:
            busy = wait_until_idle(client, self.settings.wait_idle)
        finally:
            client.close()
        if busy and not self.settings.allow_busy_cluster:
            raise DaskbenchError(busy_message(self.settings.cluster, busy, self.settings.wait_idle))

    def _check_compare_target(self, name: str) -> None:
        """--compare names a baseline or run of the store now, not after the whole sweep."""
        try:
            store = Store(self.settings.db, create=False)
        except DaskbenchError:
            store = None
        try:
            if store is not None and (name in store.baselines() or _has_run(store, name)):
                return
        finally:
            if store is not None:
                store.close()
        raise DaskbenchError(
            f"--compare {name}: no baseline or run of that name in {self.store_display}; "
            f"list them with: daskbench baseline list --db ..., or set one: daskbench baseline set {name} <run-id>"
        )

    def data_location(self) -> Any:
        if not hasattr(self, "_data_location"):
            from daskbench.inputs import resolve_data_location

            self._data_location = resolve_data_location(self.settings.data, self.settings.s3_endpoint)
        return self._data_location

    def ensure_run(self) -> tuple[Store, Run]:
        if self.store is None or self.run is None:
            from daskbench import provenance

            self.store = Store(self.settings.db)
            run = Run(
                run_id=str(uuid.uuid4()),
                label=self.label()[0],
                started_at=now_iso(),
                git_sha=provenance.git_sha(),
                ci_url=provenance.ci_url(),
                versions=provenance.versions(self.settings.record_versions or ()),
                host={**provenance.host(), **self.conditions},  # what the header read: load, probe
                dask_config=provenance.dask_config(),
                tags={**self.selection, **provenance.commits(self.settings.record_versions or ())},
            )
            self._adding = run
            self.store.add_run(run)
            self.run, self._adding = run, None  # once stored: a Ctrl-C before that may leave no row (`finish`)
            from daskbench.store import runstatus

            self.store.record_event(self.run.run_id, runstatus.RUNNING, runstatus.running_detail())
        return self.store, self.run

    def open(self, spec: ClusterSpec) -> OpenCluster:
        """The cluster for ``spec``; at most one is alive, so a new spec closes the old one."""
        self.close_cluster()
        self.requested = spec
        kwargs = load_kwargs(self.settings.cluster_kwargs)  # before the run row: bad kwargs leave no empty run
        _, run = self.ensure_run()
        real = replace(spec, scheduler_config=cfg.unmasked(self.settings.config, spec.scheduler_config))
        opened = open_cluster(real, kwargs, max(self.settings.timeout, CLUSTER_START_SECONDS))
        self.cluster = replace(opened, spec=replace(opened.spec, scheduler_config=spec.scheduler_config))
        self._since = time.monotonic()
        if opened.mismatch:
            self._note_mismatch(run, opened.mismatch)
        self._client_config = dask_config_set(typed_config(real))  # the client side, while the case runs
        self.measurer = Measurer(
            self.cluster.client,
            run.run_id,
            self.prices,
            self.settings.timeout,
            self.cluster.spec.n_workers,
            evidence_dir=self._evidence_folder(run),
            restart_workers=self.settings.restart_workers or not backend_named(self.backend).fixed_size,
            task_memory=self.settings.task_memory,
            worker_start=forkserver.method() if self.backend == "local" else None,
        )
        return self.cluster

    def mismatch_line(self) -> str:
        """The one line for a running scheduler whose dask is not this client's (empty when it is)."""
        if self.cluster is None or not self.cluster.mismatch:
            return ""
        return (
            f"daskbench: the cluster at {self._scheduler_address()} runs other versions than this client: "
            f"{self.cluster.mismatch}; its figures are those versions' (tagged on the run as cluster_versions): "
            "run daskbench where the cluster's versions are installed, or give the cluster this environment's"
        )

    def _note_mismatch(self, run: Run, mismatch: str) -> None:
        """Tag the run with the versions its running scheduler's side runs (once: tags are written once)."""
        assert self.store is not None
        if "cluster_versions" in run.tags or any(line.startswith(MISMATCH_SAID) for line in self.summary_lines):
            return
        self.store.tag_run(run.run_id, {"cluster_versions": mismatch[:500]})
        self.summary_lines.append(self.mismatch_line())

    def _evidence_folder(self, run: Run) -> Path | None:
        """With ``--evidence``, this run's evidence folder, marked as this store's (so a ``daskbench gc``
        of another store sharing the folder leaves it alone); else None (nothing kept)."""
        if not self.settings.evidence:
            return None
        from daskbench.evidence import claim_folder, evidence_root

        folder = evidence_root(self.settings.db, self.settings.evidence_dir) / run.run_id
        return claim_folder(folder, self.settings.db)

    def recover(self) -> None:
        """After a harness error (workers would not restart), start this spec's cluster afresh."""
        if self.requested is not None:
            self.open(self.requested)

    def close_cluster(self) -> None:
        if self._client_config is not None:
            self._client_config.__exit__(None, None, None)
            self._client_config = None
        if self.cluster is not None:
            self.cluster.close()
        self.cluster, self.measurer = None, None

    def claim(self, case: Case, repeat: int, test: str) -> str | None:
        """Mark repeat ``repeat`` of ``case`` as measured by ``test``; the other test that measured
        it already in this run, if there is one (two tests with one identity)."""
        owner = self.claims.setdefault((case.fingerprint, repeat), test)
        return owner if owner != test else None

    def record(self, case: Case, measurement: Measurement) -> None:
        """Store ``measurement`` (and its case, if new). A ``cluster-lost`` one stops the session on a
        running scheduler (`lost`, set first so the session stops whatever follows); a cluster the
        harness started is replaced by a fresh one for the tests after it (`_replace_lost_cluster`)."""
        lost = measurement.outcome == CLUSTER_LOST
        address = self._scheduler_address() if lost else ""
        if lost and self.lost is None and backend_named(self.backend).fixed_size:
            self.lost = self._lost_line(address)
        measurement = self._silenced(case, measurement)
        store, _ = self.ensure_run()
        store.add_case(case)
        store.add_measurement(measurement)
        self.count += measurement.outcome != INTERRUPTED  # the one Ctrl-C cut short measured nothing
        if lost and self.lost is None:
            self._replace_lost_cluster(address, f"{case.workload} r{measurement.repeat}")

    def _silenced(self, case: Case, measurement: Measurement) -> Measurement:
        """``measurement`` as ``cluster-lost`` (never judged) when its running scheduler went silent for
        `watch.SILENCE_S` or more while it ran (a partition, a paused scheduler): its time is the silence's, not
        the workload's. Said in one summary line; the session goes on (the scheduler answers again)."""
        watch, since = self.cluster.watch if self.cluster is not None else None, self._since
        self._since = time.monotonic()
        silence = watch.silence_since(since) if watch is not None and measurement.ok else 0.0
        if not silence:
            return measurement
        why = (
            f"the scheduler at {self._scheduler_address()} did not answer for {silence:.0f} s during this "
            f"measurement (a network partition, or a paused scheduler); its {measurement.runtime_s or 0:.1f} s are "
            "not the workload's: not judged"
        )
        self.summary_lines.append(
            f"daskbench: {case.workload} r{measurement.repeat}: {why}; stored as cluster-lost, the session went on"
        )
        return replace(measurement, outcome=CLUSTER_LOST, message=why)

    def _scheduler_address(self) -> str:
        return redact_url(self.measurer.address if self.measurer is not None else self.settings.cluster)

    def _replace_lost_cluster(self, address: str, where: str) -> None:
        """A cluster the harness started lost its scheduler: a fresh one for the tests after it, said in one
        summary line; when none starts, the session stops as it does on a lost running scheduler."""
        try:
            self.recover()
        except Exception as exc:  # DaskbenchError or the backend's own: the session stops with one line
            self.lost = self._lost_line(address, f" and could not start a fresh cluster ({one_line(exc)})")
            return
        self.summary_lines.append(
            f"daskbench: lost the scheduler at {address} during {where}: stored as cluster-lost (never judged); "
            "the tests after it ran on a fresh cluster"
        )

    def _lost_line(self, address: str, detail: str = "") -> str:
        """The one line for a lost scheduler: where it was, what became of the run, what to do."""
        run = self.run.run_id[:8] if self.run is not None else "of this session"
        return (
            f"daskbench: lost the scheduler at {address}{detail}; the session stopped there (the tests after it not "
            f"run) and run {run} is recorded as cluster-lost, every measurement before it kept: check that the "
            "scheduler and its workers are up (dask scheduler, dask worker), then run the session again"
        )

    def finish(self, interrupted: bool = False) -> str | None:
        """Close the cluster, record how the run ended, run --compare unless it was interrupted or
        its cluster was lost.

        Returns "regressed", "compare-error", "store-error", "cluster-lost" or None, for the plugin
        to turn into the session's exit status; problems become summary lines, never a traceback.
        ``interrupted``: pytest stopped early (Ctrl-C, or the stop after a lost cluster).
        """
        try:
            self.close_cluster()
        except Exception as exc:  # the run's record matters more than a clean close
            self.summary_lines.append(f"daskbench: closing the cluster failed: {one_line(exc)}")
        if self.store is not None and self.run is None and self._adding is not None:
            self.run = self._stored(self._adding)
        if self.store is None or self.run is None:
            return None
        try:
            return self._end_run(interrupted)
        except DaskbenchError as exc:
            said = str(exc) == self.store.fault  # the store's fault is the summary's first line already
            why = "" if said else f": {exc}"
            self.summary_lines.append(
                f"daskbench: could not record the end of run {self.run.run_id[:8]}{why} (daskbench runs shows it "
                "as crashed)"
            )
            return "store-error"
        finally:
            self.store.close()  # SQLite: the last connection closing folds the WAL into the file

    def _stored(self, run: Run) -> Run | None:
        """``run`` when the store holds its row (a Ctrl-C cut `ensure_run` after the commit), else None."""
        assert self.store is not None
        try:
            self.store.run(run.run_id)
        except DaskbenchError:  # not stored (the Ctrl-C came first), or the store cannot say: nothing to end
            return None
        return run

    def _end_run(self, interrupted: bool) -> str | None:
        from daskbench.store import runstatus

        assert self.store is not None and self.run is not None
        status = runstatus.CLUSTER_LOST if self.lost else runstatus.INTERRUPTED if interrupted else runstatus.FINISHED
        stored = f"{plural(self.count, 'measurement')} stored"
        self.store.finish_run(self.run.run_id)
        self.store.record_event(self.run.run_id, status, f"{stored}; {self.lost}" if self.lost else stored)
        if self.lost:
            return self._cut_short()
        if interrupted:
            if self.settings.compare:
                self.summary_lines.append(
                    f"daskbench: run {self.run.run_id[:8]} was interrupted; --compare not run on a partial run"
                )
            return None
        return self._compare() if self.settings.compare else None

    def _cut_short(self) -> str:
        """The summary of a run its lost cluster cut short: the line (unless pytest showed it as its
        reason to stop), and no --compare of a partial run."""
        assert self.lost is not None and self.run is not None
        if not self.lost_shown:
            self.summary_lines.append(self.lost)
        if self.settings.compare:
            self.summary_lines.append(
                f"daskbench: run {self.run.run_id[:8]} lost its cluster; --compare not run on a partial run"
            )
        return "cluster-lost"

    def _compare(self) -> str | None:
        from daskbench.judge.compare import compare
        from daskbench.judge.format import format_table
        from daskbench.judge.selection import Selection

        assert self.store is not None and self.run is not None
        try:
            chosen = Selection(
                candidate=self.run.run_id, baseline=self.settings.compare, floors=self.settings.floor or {}
            )
            comparison = compare(self.store, chosen)
        except DaskbenchError as exc:
            self.summary_lines.append(f"compare against {self.settings.compare!r} could not run: {exc}")
            return "compare-error"
        self.summary_lines.extend(format_table(comparison).splitlines())
        if any(v.is_regression for v in comparison.verdicts):
            self.summary_lines.append(f"daskbench: regression found against baseline {self.settings.compare!r}")
            return "regressed"
        return None


def config_combinations(sweep: cfg.ConfigSweep | None) -> list[tuple[tuple[str, str], ...]]:
    """Every combination of the ``--config`` sweeps as sorted (key, value) pairs; ``[()]`` without any."""
    combos: list[tuple[tuple[str, str], ...]] = [()]
    for key, values in sweep or ():
        combos = [(*combo, (key, value)) for combo in combos for value in values]
    return [tuple(sorted(combo)) for combo in combos]


def check_sweep_fits_backend(settings: cfg.Settings, backend: Backend) -> None:
    """A running scheduler has the workers it has: sweeping their size or their config there is refused."""
    if not backend.fixed_size:
        return
    for name, values in (
        ("--threads-per-worker", settings.threads_per_worker),
        ("--memory-per-worker", settings.memory_per_worker),
    ):
        if len(values) > 1:
            raise DaskbenchError(
                f"{name}: a running scheduler ({settings.cluster}) has the workers it has; give one value, "
                "or use --cluster local / coiled / module:ClassName to sweep it"
            )
    server = [key for key, _ in settings.config or () if key.startswith(SERVER_PREFIXES)]
    if server:
        raise DaskbenchError(
            f"--config {server[0]}: a running scheduler's and its workers' config cannot be changed from here "
            "(their processes read it at start); sweep only client-side keys there, or start the cluster yourself"
        )


def dask_config_set(values: dict[str, Any]) -> Any:
    """``dask.config.set(values)`` entered now (exit it to restore), or None when there is nothing to set."""
    if not values:
        return None
    import dask

    return dask.config.set(values)


def _has_run(store: Store, run_id: str) -> bool:
    try:
        store.run(run_id)
    except DaskbenchError:
        return False
    return True
