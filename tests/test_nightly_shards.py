"""``pytest -m benchmark --shard K/N``: a plain session (a nightly on several runners) measures only its shard of the
selected cases, split by the store's history of them, tagged so that ``compare`` reads the other shards' cases
as outside its selection. Real sessions on a real LocalCluster and SQLite store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from daskbench.model import SHARD, SHARD_PLAN
from daskbench.plugin import sharding
from daskbench.shards.plan import suite_name
from daskbench.store import Store
from tests.helpers import daskbench_cli, run_pytest

#: Four cases of unequal time (0.05 s to 0.6 s), so a split by history differs from a split by count.
BENCH = """
import time

import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.parametrize("seconds", [0.05, 0.1, 0.2, 0.6])
def test_nap(measure, seconds):
    measure(lambda: time.sleep(seconds), name="nap", params={"seconds": seconds})
"""
SESSION = ("-m", "benchmark", "bench_naps.py", "--workers", "1", "--saturation", "inf", "--size", "tiny")


def _measured(store: Store, run_id: str) -> set[str]:
    return {suite_name(str(m.extra["test"])) for m in store.measurements([run_id])}


def test_a_shard_measures_its_part_of_the_split_by_history_and_compare_leaves_the_other_shards_cases_out(
    tmp_path: Path,
) -> None:
    """A whole night first (history), then shard 2 of 2: it measures exactly the cases the split by that history
    gives it (what every runner reading the same store computes), says so in its header, and is tagged with its
    shard and the split; ``compare --history`` of it lists the other shard's cases as outside its selection
    (``--shard '2/2'``), not as missing, and exits 0."""
    (tmp_path / "bench_naps.py").write_text(BENCH)
    db = f"sqlite:///{tmp_path / 'nights.db'}"
    whole = run_pytest(tmp_path, *SESSION, "--db", db)
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-2000:]
    store = Store(db)
    (first,) = store.runs()
    every = sorted(_measured(store, first.run_id))
    expected = sharding.split(db, every, (2, 2))
    assert expected.split.basis == "history" and 0 < len(expected.kept) < len(every)

    shard = run_pytest(tmp_path, *SESSION, "--db", db, "--shard", "2/2")
    assert shard.returncode == 0, shard.stdout[-3000:] + shard.stderr[-2000:]
    said = f"daskbench: shard 2/2: {len(expected.kept)} of {len(every)} cases (split by history"
    assert said in shard.stdout, shard.stdout[:3000]
    run = Store(db).runs()[0]
    assert _measured(Store(db), run.run_id) == set(expected.kept)
    assert run.tags[SHARD] == "2/2" and run.tags[SHARD_PLAN] == expected.split.digest()

    assert _shards_run_as_the_workflow_finds_it(tmp_path, db, "2/2") == run.run_id

    compared = daskbench_cli("compare", "--history", "5", "--candidate", run.run_id, "--db", db, cwd=tmp_path)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    outside = len(every) - len(expected.kept)
    assert f"missing: {outside} case" in compared.stdout and "(--shard '2/2')" in compared.stdout, compared.stdout


def test_a_shard_outside_its_bounds_is_one_line_before_any_cluster_starts(tmp_path: Path) -> None:
    (tmp_path / "bench_naps.py").write_text(BENCH)
    bad = run_pytest(tmp_path, *SESSION, "--db", f"sqlite:///{tmp_path / 'n.db'}", "--shard", "3/2")
    assert bad.returncode == 4 and "--shard: '3/2': give K/N, shard K of N" in bad.stderr, bad.stdout + bad.stderr
    assert not (tmp_path / "n.db").exists()


def _shards_run_as_the_workflow_finds_it(tmp_path: Path, db: str, shard: str) -> str:
    """The run id the step "This shard's run" of the workflow ``daskbench init --shards 2`` writes puts in
    ``$GITHUB_OUTPUT``, its script run as written by bash with this venv's daskbench and python first on PATH."""
    repo = tmp_path / "repo"
    assert daskbench_cli("init", str(repo), "--shards", "2", "--install", "daskbench==0.1.0").returncode == 0
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "daskbench-nightly.yml").read_text())
    step = next(step for step in workflow["jobs"]["benchmarks"]["steps"] if step.get("name") == "This shard's run")
    output = tmp_path / "github-output"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "SHARD_OF": shard,
           "GITHUB_OUTPUT": str(output), "DASKBENCH_DB": db}  # fmt: skip
    subprocess.run(["bash", "-e", "-c", step["run"]], env=env, check=True, timeout=120, cwd=tmp_path)
    (line,) = output.read_text().splitlines()
    return line.removeprefix("id=")
