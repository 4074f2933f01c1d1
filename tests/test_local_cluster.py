"""What a session's local cluster is started with (`daskbench.clusters.local`), seen from a real session."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_pytest

#: A benchmark that asks the scheduler's HTTP server for its dashboard page and writes the status it answered
#: beside itself, then measures a trivial compute.
BENCH = """
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.benchmark


def test_dashboard(measure, daskbench_client):
    port = daskbench_client.scheduler_info()["services"]["dashboard"]  # the HTTP server, dashboard or not
    try:
        status = urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30).status
    except urllib.error.HTTPError as error:
        status = error.code
    Path(__file__).with_name("status.txt").write_text(str(status))
    measure(lambda: daskbench_client.submit(sum, [1, 2]).result(), name="dashboard", params={})
"""


def _dashboard_status(folder: Path, *args: str) -> int:
    (folder / "test_dashboard.py").write_text(BENCH)
    done = run_pytest(folder, "-m", "benchmark", "--db", str(folder / "r.db"), "--workers", "1",
                      "--saturation", "inf", "--repeat", "1", *args)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return int((folder / "status.txt").read_text())


def test_a_local_cluster_has_no_dashboard_unless_cluster_kwargs_ask_for_one(tmp_path: Path) -> None:
    """Starting the dashboard imports bokeh (1.2 s of every session's start here): it is off, and the
    documented ``dashboard_address`` in a ``--cluster-kwargs`` file turns it on."""
    assert _dashboard_status(tmp_path) == 404
    (tmp_path / "cluster.yaml").write_text('dashboard_address: ":0"\n')
    assert _dashboard_status(tmp_path, "--cluster-kwargs", str(tmp_path / "cluster.yaml")) == 200
