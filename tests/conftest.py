"""Shared fixtures for the harness's own tests: pytester, stores, factories of real records,
and real servers (a Dask scheduler with a worker, PostgreSQL). Only fixtures and hooks live
here; plain helpers live in tests/helpers.py."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from daskbench.store import Store
from testing.github_server import FakeGitHub, serve
from tests.helpers import (
    GITHUB_TEST_TOKEN,
    LOCKSTEP_BENCH,
    PULL_NUMBER,
    Postgres,
    machine_lock,
    make_case,
    make_measurement,
    make_run,
    mount,
    scheduler_and_worker,
    unmount,
)

pytest_plugins = ["pytester", "tests.stopping"]  # stopping: Ctrl-C and SIGTERM end what the tests started

# Under pytest-xdist (`pytest -n auto`) each worker has PYTEST_XDIST_* in its environment, and
# every process a test starts would inherit it: pytest-benchmark, for one, then disables itself in
# the user-like pytest sessions the tests run. Those sessions must see a user's environment.
for _name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
    del os.environ[_name]

# A lockstep comparison makes several calls a measurement of a case that computes for under a second
# (daskbench.lockstep.loops): the lockstep tests' 0.3 s cases would take four times as long from their second
# round. Their controllers make one call a measurement; tests of the loops set the target themselves.
os.environ["DASKBENCH_LOOP_TARGET"] = "0"

#: A mark expression that selects benchmarks only: "benchmark" or "benchmark and ...".
_BENCHMARKS_ONLY = re.compile(r"\s*benchmark(\s+and\s.*)?", re.DOTALL)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`pytest -m benchmark` does not import the harness's tests: none of them is a benchmark,
    and they use packages only ``ci/setup --test`` installs (moto, playwright, psycopg)."""
    return True if _BENCHMARKS_ONLY.fullmatch(config.getoption("markexpr", "") or "") else None


#: The test files that take ten seconds or more, longest first (pytest --durations, 2026-11-27). Under
#: `pytest -n auto --dist loadfile` a worker takes the next file when it is nearly done with its last; run
#: longest first, the long files do not end the run alone on one core (xdist's default order puts files
#: with many tests first, so a long file of few tests started last). test_first_day leads and
#: test_lockstep_rounds comes second: the quickstart test loads every core under the exclusive machine lock,
#: which waits while another worker holds it shared for a whole quiet module (`quiet_machine`: ab, bisect,
#: bisect_repo, confirm, lockstep, pr, regression_e2e), and lockstep_rounds is not one.
LONGEST_FIRST = (
    "test_first_day.py", "test_lockstep_rounds.py", "test_documented_commands.py", "test_bisect.py",
    "test_lockstep.py", "test_bisect_faults.py", "test_cluster_faults.py", "test_pr_own_repository.py",
    "test_pr_shards.py", "test_bisect_repo.py", "test_stopping.py", "test_lockstep_faults.py", "test_ab.py",
    "test_init.py", "test_regression_e2e.py", "test_pr.py", "test_lost_store.py", "test_existing_suite.py",
    "test_calibrate.py", "test_run_status.py", "test_shared_cluster.py", "test_store_limits.py", "test_memory.py",
    "test_catalog.py", "test_confirm.py", "test_history_benchmarks.py", "test_forkserver.py", "test_plugin.py",
    "test_secrets.py", "test_postgres.py",
)  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Keep the order below for xdist's file scheduling (its own reorders files by their number of tests)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of `LONGEST_FIRST` first, in its order; every other file after them, as collected."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: tests keep their order


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A real, empty SQLite store in a temporary directory."""
    return Store(f"sqlite:///{tmp_path / 'daskbench.db'}")


@pytest.fixture
def factories() -> dict[str, Callable[..., Any]]:
    return {"run": make_run, "case": make_case, "measurement": make_measurement}


@pytest.fixture
def running_scheduler(tmp_path: Path) -> Iterator[str]:
    """A real `dask scheduler` and one `dask worker` (with nanny) on loopback."""
    with scheduler_and_worker(tmp_path) as (address, _):
        yield address


@pytest.fixture(scope="module")
def pull_github() -> Iterator[tuple[FakeGitHub, str]]:
    """The loopback GitHub with pull request `PULL_NUMBER`, and its URL, for a whole module (its real ``pr`` runs
    talk to one server)."""
    found = FakeGitHub()
    found.add_pull(PULL_NUMBER)
    server = serve(found)
    yield found, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """The loopback stand-in for GitHub's issues API (`testing.github_server`), with the token
    `GITHUB_TEST_TOKEN` in the environment and no job summary file."""
    fake = FakeGitHub()
    server = serve(fake)
    monkeypatch.setenv("DASKBENCH_GITHUB_API", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TEST_TOKEN)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    yield fake
    server.shutdown()


@pytest.fixture(scope="module")
def bench_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the lockstep suite (`tests.helpers.LOCKSTEP_BENCH`), one per test module."""
    folder = tmp_path_factory.mktemp("lockstep")
    (folder / "test_bench.py").write_text(LOCKSTEP_BENCH)
    return folder


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback for one test module (skips without the server binaries)."""
    server = Postgres(Path(tempfile.mkdtemp(prefix="daskbench-pg-")))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def machine_lock_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One lock file for every worker of this session (`helpers.machine_lock`)."""
    return tmp_path_factory.getbasetemp().parent / "daskbench-tests-machine.lock"


@pytest.fixture(scope="module")
def quiet_machine(machine_lock_file: Path) -> Iterator[None]:
    """Held by a module whose verdicts depend on measured time: no test loads every core meanwhile."""
    with machine_lock(machine_lock_file, exclusive=False):
        yield


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB tmpfs mounted at ``tmp_path/disk``, unmounted after the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder))
    yield folder
    unmount(folder)


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a folder, a read-only bind mount of it), unmounted after the test."""
    source, view = tmp_path / "source", tmp_path / "view"
    source.mkdir()
    view.mkdir()
    mount("--bind", "-o", "ro", str(source), str(view))
    yield source, view
    unmount(view)
