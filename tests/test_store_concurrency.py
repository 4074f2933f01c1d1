"""Several processes writing one store at the same moment: nothing lost, no traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from daskbench.store import Store

#: One writer process: waits for the common start time, opens the store (creating and
#: migrating it if nobody has yet), adds one run and 10 measurements of 10 shared cases.
WRITER = """
import sys, time
from daskbench.store import Store
from tests.helpers import make_case, make_measurement, make_run

url, start, index = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
store = Store(url)
run = make_run(label=f"writer-{index}")
store.add_run(run)
for n in range(10):
    case = make_case(rows=n)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case))
store.close()
"""

ROOT = Path(__file__).resolve().parent.parent


def run_writers(url: str, processes: int = 4) -> list[subprocess.CompletedProcess[str]]:
    """Start ``processes`` writers that all open ``url`` at the same instant; wait for them."""
    start = time.time() + 3.0
    started = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(start), str(index)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(processes)
    ]
    results = []
    for process in started:
        out, err = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def assert_all_stored(url: str, results: list[subprocess.CompletedProcess[str]]) -> None:
    assert [r.returncode for r in results] == [0] * len(results), [r.stderr for r in results]
    assert not any("Traceback" in r.stderr for r in results)
    store = Store(url)
    labels = {run.run_id: run.label for run in store.runs()}
    mine = [m for m in store.measurements() if labels[m.run_id].startswith("writer-")]
    assert len(mine) == 40
    assert len({m.fingerprint for m in mine}) == 10 and len(store.cases({m.fingerprint for m in mine})) == 10


def test_four_processes_writing_a_fresh_sqlite_store_lose_nothing(tmp_path: Path) -> None:
    """4 processes x 10 measurements into one fresh SQLite file at once: 40 rows, one per case per run, all exit 0."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert_all_stored(url, run_writers(url))


@pytest.mark.postgres
def test_four_processes_writing_postgresql_lose_nothing(request: pytest.FixtureRequest) -> None:
    """The same four simultaneous writers on the PostgreSQL test server: 40 rows, all exit 0."""
    url = request.getfixturevalue("postgres_url")  # conftest.py: a real server on loopback
    assert_all_stored(url, run_writers(url))
