"""The first day, round 2: what a new user meets when following the README (issue: the first day)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from contextlib import nullcontext
from pathlib import Path

from daskbench.judge.compare import compare_runs
from daskbench.store import Store
from tests.helpers import add_run, cpu_load, machine_lock, make_case, make_measurement, run_pytest

ROOT = Path(__file__).resolve().parents[1]

TWIN = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def test_sum(measure):
    assert measure(dask.delayed(sum)([1, 2]), name="same", params={"n": 1}) == 3
"""


def test_two_benchmarks_with_one_identity_get_one_line_and_the_first_measurement_stays(tmp_path: Path) -> None:
    """Two files measuring one name and params: the second test fails with one line naming both
    tests and what to change; no traceback; the first one's measurement is stored."""
    (tmp_path / "test_one.py").write_text(TWIN)
    (tmp_path / "test_two.py").write_text(TWIN)
    db = f"sqlite:///{tmp_path / 'd.db'}"
    done = run_pytest(tmp_path, "-m", "benchmark", "--db", db, "--workers", "1", "--saturation", "inf")
    assert done.returncode == 1, done.stdout[-2000:]
    line = "test_two.py::test_sum[sat=inf-workers=1] measures the same case as test_one.py::test_sum[sat=inf-workers=1]"
    assert line in done.stdout and "another name= or params=" in done.stdout
    assert "Traceback" not in done.stdout and "IntegrityError" not in done.stdout and "UNIQUE" not in done.stdout
    measured = Store(db).measurements()
    assert len(measured) == 1 and measured[0].extra["test"] == "test_one.py::test_sum[sat=inf-workers=1]"


def test_runs_made_by_ab_are_not_the_latest_run_of_plain_compare(store: Store) -> None:
    """After daskbench ab, plain compare judges the newest ordinary run, not the last B session."""
    base, cand = add_run(store, 0, label="plain"), add_run(store, 1, label="plain")
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    for run in (base, cand):
        store.add_measurement(make_measurement(run, case))
    side_b = add_run(store, 2, label="ab-B0", tags={"ab_group": "g", "ab_side": "B", "ab_round": "0"})
    store.add_measurement(make_measurement(side_b, case))
    store.set_baseline("main", [base.run_id])
    assert compare_runs(store).candidate_run.run_id == cand.run_id


def readme_quickstart() -> list[str]:
    """The quickstart as the README writes it: command 1's benchmark run, then the "Then:" block."""
    text = (ROOT / "README.md").read_text()
    first = re.search(r"ci/setup && (\.venv/bin/pytest -m benchmark)\n", text)
    then = re.search(r"^Then:\n\n```bash\n(.*?)```", text, re.S | re.M)
    assert first and then, "README.md: the quickstart's command 1 or its 'Then:' block moved"
    commands = [line.split("#")[0].strip() for line in then.group(1).splitlines()]
    return [first.group(1), *(command for command in commands if command)]


def test_the_quickstart_as_written_ends_with_compare_exit_0_when_the_second_run_is_on_a_loaded_machine(
    tmp_path: Path, machine_lock_file: Path
) -> None:
    """Every quickstart command, word for word from the README, at size tiny on the word count's
    one-worker cases (settings from the environment, so the text is unchanged); the second
    benchmark run shares the machine with a busy loop per core. Unchanged code: `compare` exits 0
    and names the slower machine instead of calling its time a regression."""
    env = {**os.environ, "DASKBENCH_DB": f"sqlite:///{tmp_path / 'quick.db'}", "DASKBENCH_SIZE": "tiny",
           "DASKBENCH_WORKERS": "1", "DASKBENCH_REPORT": str(tmp_path / "report.html"),
           "PYTEST_ADDOPTS": "-k wordcount -p no:cacheprovider", "PATH": f"{ROOT / '.venv/bin'}:{os.environ['PATH']}"}  # fmt: skip
    commands = readme_quickstart()
    benchmark_runs = [i for i, command in enumerate(commands) if command.endswith("pytest -m benchmark")]
    assert len(benchmark_runs) == 2 and commands[-1] == "daskbench compare", commands
    outputs: list[subprocess.CompletedProcess[str]] = []
    for i, command in enumerate(commands):
        run_id = _first_run_id(env) if "<run-id>" in command else ""
        argv = shlex.split(command.replace("<run-id>", run_id))
        loaded = i == benchmark_runs[1]
        lock = machine_lock(machine_lock_file, exclusive=True) if loaded else nullcontext()
        with lock, cpu_load((os.cpu_count() or 2) if loaded else 0):
            done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        outputs.append(done)
    last = outputs[-1].stdout + outputs[-1].stderr
    assert "the machine was" in last and "slower during the candidate" in last, last[-3000:]


def _first_run_id(env: dict[str, str]) -> str:
    listing = subprocess.run(["daskbench", "runs", "--format", "json"], env=env, capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
    return str(json.loads(listing)["runs"][-1]["run_id"])


def test_the_comparison_names_the_runs_that_taught_the_noise_and_never_a_later_one(store: Store) -> None:
    """Between two named runs the noise comes from runs started before the candidate; the note lists them."""
    case = make_case("wordcount", n_workers=1)
    store.add_case(case)
    runs = [add_run(store, index) for index in range(4)]
    for run in runs:
        store.add_measurement(make_measurement(run, case))
    comparison = compare_runs(store, baseline=runs[1].run_id, candidate=runs[2].run_id)
    (note,) = [note for note in comparison.notes if note.startswith("run-to-run noise")]
    assert runs[0].run_id[:8] in note and runs[1].run_id[:8] in note
    assert runs[2].run_id[:8] not in note and runs[3].run_id[:8] not in note


def test_benchmarks_under_pytest_xdist_are_refused_in_one_line(tmp_path: Path) -> None:
    """`pytest -m benchmark -n 2` would measure two cases at once on one machine: usage error, no run."""
    (tmp_path / "test_one.py").write_text(TWIN)
    db = tmp_path / "d.db"
    done = run_pytest(tmp_path, "-m", "benchmark", "-n", "2", "--db", f"sqlite:///{db}", timeout=120)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        "ERROR: -n 2 (pytest-xdist) would measure benchmarks side by side, each in the other's load; run them without -n"
    ]
    assert not db.exists()
