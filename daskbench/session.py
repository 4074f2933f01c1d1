"""What one benchmark session shares: settings, the store, the run, and the open cluster.

At most one cluster is alive at a time: cases that share a cluster spec run back to back
(pytest groups them), and a new spec closes the previous cluster before starting its own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from daskbench import config as cfg
from daskbench.clusters import OpenCluster, backend_named, load_kwargs, open_cluster
from daskbench.errors import DaskbenchError
from daskbench.measure import Measurer
from daskbench.metrics.cost import PriceTable
from daskbench.model import Case, ClusterSpec, Measurement, Run
from daskbench.store import Store, now_iso, redact_url


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

    @property
    def store_display(self) -> str:
        return redact_url(self.settings.db)

    def requested_specs(self) -> list[ClusterSpec]:
        """One spec per (saturation, workers); a fixed-size backend (a running scheduler) gets one count."""
        s, backend = self.settings, backend_named(self.backend)
        target = s.cluster if backend.records_target else ""
        workers = s.workers[:1] if backend.fixed_size else s.workers
        return [
            ClusterSpec(self.backend, n, s.threads_per_worker, s.memory_per_worker, sat, target=target)
            for sat in s.saturation
            for n in workers
        ]

    def preflight(self) -> None:
        """The backend's early check (scheduler reachable, coiled installed), before any cluster starts."""
        backend_named(self.backend).preflight(self.settings.cluster)

    def data_location(self) -> Any:
        if not hasattr(self, "_data_location"):
            from daskbench.inputs import resolve_data_location

            self._data_location = resolve_data_location(self.settings.data, self.settings.s3_endpoint)
        return self._data_location

    def ensure_run(self) -> tuple[Store, Run]:
        if self.store is None or self.run is None:
            from daskbench import provenance

            self.store = Store(self.settings.db)
            self.run = Run(
                run_id=str(uuid.uuid4()),
                label=self.settings.label or provenance.default_label(),
                started_at=now_iso(),
                git_sha=provenance.git_sha(),
                ci_url=provenance.ci_url(),
                versions=provenance.versions(),
                host=provenance.host(),
                dask_config=provenance.dask_config(),
            )
            self.store.add_run(self.run)
        return self.store, self.run

    def open(self, spec: ClusterSpec) -> OpenCluster:
        """The cluster for ``spec``; at most one is alive, so a new spec closes the old one."""
        self.close_cluster()
        self.requested = spec
        _, run = self.ensure_run()
        kwargs = load_kwargs(self.settings.cluster_kwargs)
        self.cluster = open_cluster(spec, kwargs)
        self.measurer = Measurer(
            self.cluster.client, run.run_id, self.prices, self.settings.timeout, self.cluster.spec.n_workers
        )
        return self.cluster

    def recover(self) -> None:
        """After a harness error (workers would not restart), start this spec's cluster afresh."""
        if self.requested is not None:
            self.open(self.requested)

    def close_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        self.cluster, self.measurer = None, None

    def record(self, case: Case, measurement: Measurement) -> None:
        store, _ = self.ensure_run()
        store.add_case(case)
        store.add_measurement(measurement)
        self.count += 1

    def finish(self) -> str | None:
        """Close the cluster, stamp the run's end, run --compare; returns "regressed",
        "compare-error" or None, for the plugin to turn into the session's exit status."""
        self.close_cluster()
        if self.store is None or self.run is None:
            return None
        self.store.finish_run(self.run.run_id)
        outcome = self._compare() if self.settings.compare else None
        self.store.close()  # SQLite: the last connection closing folds the WAL into the file
        return outcome

    def _compare(self) -> str | None:
        from daskbench.compare import compare_runs
        from daskbench.compare_format import format_table

        assert self.store is not None and self.run is not None
        try:
            comparison = compare_runs(self.store, candidate=self.run.run_id, baseline=self.settings.compare)
        except DaskbenchError as exc:
            self.summary_lines.append(f"compare against {self.settings.compare!r} could not run: {exc}")
            return "compare-error"
        self.summary_lines.extend(format_table(comparison).splitlines())
        if any(v.is_regression for v in comparison.verdicts):
            self.summary_lines.append(f"daskbench: regression found against baseline {self.settings.compare!r}")
            return "regressed"
        return None
