"""Workers forked from a preloading server (`daskbench.clusters.forkserver`): what a spawned worker has, a
forked one has too (the nanny's pre-spawn environment, a fresh process per restart), and the heavy modules
are there before the warm-up. Each check runs in a fresh interpreter: the method is set once per process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from daskbench.clusters import forkserver

PROBE = r"""
import importlib, json, os, sys
for name in os.environ.get("PROBE_IMPORTS", "numpy,pandas").split(","):
    importlib.import_module(name)  # what the client has, as a benchmark session does
from daskbench.clusters import open_cluster
from daskbench.clusters.forkserver import LIBRARIES
from daskbench.model import ClusterSpec

if __name__ == "__main__":
    cluster = open_cluster(ClusterSpec("local", 1, 1, 2**30, 1.1), {}, 120)
    client = cluster.client
    wanted = [name for name in LIBRARIES if name in sys.modules]  # what the warm-up would import

    def facts():
        import multiprocessing, os, sys
        return {"ppid": os.getppid(), "pid": os.getpid(), "omp": os.environ.get("OMP_NUM_THREADS"),
                "pandas": "pandas" in sys.modules, "hashseed": os.environ.get("PYTHONHASHSEED"),
                "late": os.environ.get("PROBE_LATE"),
                "missing": [name for name in wanted if name not in sys.modules]}

    seen = []
    for turn in range(2):
        os.environ["PROBE_LATE"] = str(turn)  # set after the server started, as a benchmark's setenv
        client.restart()
        client.wait_for_workers(1)
        seen += list(client.run(facts).values())
    from daskbench.clusters.forkserver import method
    print(json.dumps({"client": os.getpid(), "client_pandas": "pandas" in sys.modules, "workers": seen,
                      "method": method()}))
    cluster.close()
"""


def probe(**env: str) -> dict:
    import os

    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_local_clusters_restarted_workers_are_forked_from_a_server_with_the_libraries_loaded() -> None:
    found = probe()
    assert found["method"] == "forkserver"
    first, second = found["workers"]
    assert first["pid"] != second["pid"], "each restart is a new process"
    assert first["ppid"] == second["ppid"] != found["client"], "forked by the server, not by the nanny's process"
    assert all(w["pandas"] for w in found["workers"]), "pandas was imported by the server, not by each worker"
    assert all(w["omp"] == "1" and w["hashseed"] for w in found["workers"]), "the nanny's pre-spawn environment"


def test_a_forked_worker_sees_the_variables_the_client_set_after_the_server_started() -> None:
    """A spawned worker inherits the client's environment of its start; a forked one gets the changes since."""
    for start in ("forkserver", "spawn"):
        found = probe(DASKBENCH_WORKER_START=start)
        assert [w["late"] for w in found["workers"]] == ["0", "1"], (start, found["workers"])


def test_a_session_of_delayed_benchmarks_loads_no_pandas_and_its_workers_still_miss_nothing() -> None:
    """A session of dask.delayed benchmarks (the calibration): its client has dask and pytest. Starting the cluster
    no longer makes distributed import its optional packages (pandas, pyarrow: about a second of CPU) into the
    client and then the server only to list them; the warm-up asks every fresh worker for what the client has,
    and the server has all of it."""
    found = probe(PROBE_IMPORTS="dask,pytest")
    assert found["method"] == "forkserver"
    assert all(w["missing"] == [] for w in found["workers"]), found["workers"]
    assert not found["client_pandas"] and not any(w["pandas"] for w in found["workers"]), found


def test_daskbench_worker_start_spawn_keeps_dasks_default() -> None:
    found = probe(DASKBENCH_WORKER_START="spawn")
    assert found["method"] == "spawn"
    assert all(w["ppid"] == found["client"] for w in found["workers"]), "spawned by the nanny in the client"
    assert all(w["omp"] == "1" for w in found["workers"])


@pytest.mark.parametrize(
    ("loaded", "expected"),
    [
        (["numpy", "sqlalchemy", "daskbench.store"], ["distributed", "numpy"]),
        (["xarray", "daskbench.workloads.ocean", "daskbench.metrics.probe", "daskbench.cli"],
         ["distributed", "xarray", "daskbench.metrics.probe", "daskbench.workloads.ocean"]),
    ],
)  # fmt: skip
def test_the_server_preloads_the_libraries_and_worker_side_modules_the_client_has(
    loaded: list[str], expected: list[str]
) -> None:
    """Only what runs on workers: a store or CLI module the client has is not forked into every worker."""
    assert forkserver.preload(loaded) == expected
    assert all(not name.startswith(forkserver.ON_WORKERS) or name in loaded for name in forkserver.preload(loaded))
