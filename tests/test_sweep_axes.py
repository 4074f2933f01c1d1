"""Sweep axes beyond saturation and workers: threads, memory and any Dask config key.

Parsing and the product of the axes are checked directly; one real sweep (four
LocalClusters) checks that each value reaches the worker processes and the client, and
lands in the store, the test ids and ``daskbench show``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daskbench import config as cfg
from daskbench.clusters import backend_named
from daskbench.errors import DaskbenchError
from daskbench.metrics.cost import load_prices
from daskbench.model import Case, ClusterSpec
from daskbench.plugin.state import DaskbenchSession, check_sweep_fits_backend, config_combinations
from daskbench.plugin.sweep import header_lines, slots_lines, spec_id
from daskbench.plugin.taking import progress_line
from daskbench.store import Store
from daskbench.text import WIDTH
from tests.helpers import daskbench_cli, make_measurement, make_run, run_pytest

TARGET = "distributed.worker.memory.target"


def settings(**flags: object) -> cfg.Settings:
    return cfg.resolve(flags, env={})


def test_config_sweep_parses_keys_and_values() -> None:
    sweep = cfg.parse_config_sweep(f"{TARGET}=0.6,0.8; array.chunk-size=64MiB")
    assert sweep == ((TARGET, ("0.6", "0.8")), ("array.chunk-size", ("64MiB",)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "distributed.worker.memory.targett=0.6",
            "is not a Dask config key; did you mean distributed.worker.memory.target?",
        ),
        ("distributed.scheduler.worker-saturation=2", "has its own option; use --saturation"),
        (f"{TARGET}", "is not KEY=VALUE"),
        (f"{TARGET}=0.6,,0.8", "is not a comma-separated list"),
        (f"{TARGET}=0.6;{TARGET}=0.7", "is given twice"),
    ],
)
def test_bad_config_sweep_is_one_line_naming_the_fix(text: str, expected: str) -> None:
    with pytest.raises(DaskbenchError) as info:
        settings(config=[text])
    assert expected in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("--config: ")


def test_repeated_config_flags_env_and_pyproject_give_the_same_sweep() -> None:
    from_flags = cfg.resolve({"config": [f"{TARGET}=0.6,0.8", "array.chunk-size=1MiB"]}, env={}).config
    from_env = cfg.resolve({}, env={"DASKBENCH_CONFIG": f"{TARGET}=0.6,0.8;array.chunk-size=1MiB"}).config
    from_toml = cfg.resolve({}, env={}, pyproject={"config": [f"{TARGET}=0.6,0.8", "array.chunk-size=1MiB"]}).config
    assert from_flags == from_env == from_toml == ((TARGET, ("0.6", "0.8")), ("array.chunk-size", ("1MiB",)))


def test_every_axis_multiplies_the_cluster_specs_and_names_them_in_the_test_id() -> None:
    s = settings(workers="1", saturation="1.1,inf", threads_per_worker="1,2", memory_per_worker="2GiB,4GiB",
                 config=[f"{TARGET}=0.6,0.8"])  # fmt: skip
    specs = DaskbenchSession(s, "local", load_prices()).requested_specs()
    assert len(specs) == 2 * 2 * 2 * 2 == cfg.sweep_size(s)
    ids = [spec_id(spec, s) for spec in specs]
    assert len(set(ids)) == len(ids)
    assert "sat=1.1-workers=1-threads=2-memory=4GiB-memory.target=0.6" in ids
    assert {spec.config[TARGET] for spec in specs} == {"0.6", "0.8"}


def test_default_sweep_keeps_the_short_test_ids() -> None:
    s = settings()
    assert [spec_id(spec, s) for spec in DaskbenchSession(s, "local", load_prices()).requested_specs()][:2] == [
        "sat=1.0-workers=1",
        "sat=1.0-workers=2",
    ]


def test_config_combinations_are_the_product_of_the_keys() -> None:
    combos = config_combinations((("a.b", ("1", "2")), ("c.d", ("x", "y"))))
    assert len(combos) == 4 and (("a.b", "2"), ("c.d", "x")) in combos
    assert config_combinations(None) == [()]


def test_a_sweep_too_large_for_a_typo_needs_allow_large() -> None:
    with pytest.raises(DaskbenchError, match="asks for 80 cluster settings"):
        settings(workers="1,2,3,4,5", saturation="1,2,3,4", threads_per_worker="1,2,3,4")
    assert cfg.sweep_size(settings(workers="1,2,3,4,5", saturation="1,2,3,4", threads_per_worker="1,2,3,4",
                                   allow_large="true")) == 80  # fmt: skip


def test_saturations_that_give_the_same_slots_are_named_at_the_start() -> None:
    lines = slots_lines(settings(saturation="1.0,1.1,2.0,inf", threads_per_worker="1,2"))
    assert "task slots per worker at 1 thread: 1.0 -> 1, 1.1 -> 2, 2.0 -> 2, inf -> unlimited" in lines[0]
    assert any("saturation 1.1 and 2.0 give 2 slots at 1 thread" in line for line in lines)
    assert "at 2 threads: 1.0 -> 2, 1.1 -> 3, 2.0 -> 4, inf -> unlimited" in "\n".join(lines)
    assert all(len(line) <= WIDTH for line in lines)


#: Every axis swept, two values each: 32 cluster settings.
WIDE = {"workers": "1,2", "saturation": "1.1,inf", "threads_per_worker": "1,2", "memory_per_worker": "2GiB,4GiB",
        "config": [f"{TARGET}=0.6,0.8"]}  # fmt: skip


def test_every_swept_case_prints_its_own_progress_line_within_120_columns() -> None:
    """32 settings of one case: 32 different lines, each naming memory, workers, threads, saturation and config."""
    s = settings(**WIDE)
    run = make_run()
    lines = [progress_line(Case("wordcount", {"size": "small"}, spec), make_measurement(run, Case("w", {}, spec)))
             for spec in DaskbenchSession(s, "local", load_prices()).requested_specs()]  # fmt: skip
    assert len(set(lines)) == len(lines) == 32 and all(len(line) <= WIDTH for line in lines)
    for word in ("mem=2GiB", "mem=4GiB", "w=1", "w=2", "t=1", "t=2", "sat=1.1", "sat=inf", "memory.target=0.8"):
        assert any(f" {word} " in line for line in lines), word


def test_a_progress_line_too_wide_wraps_between_whole_params_never_cutting_one() -> None:
    """A param 90 columns long: the line wraps, every line fits, and the value is printed whole."""
    path = "s3://bucket/" + "p" * 78
    spec = ClusterSpec("local", 2, 1, 4 * 2**30, 1.1, scheduler_config=((TARGET, "0.6"),))
    case = Case("wordcount", {"size": "small", "input": path}, spec)
    lines = progress_line(case, make_measurement(make_run(), case)).splitlines()
    assert len(lines) == 2 and all(len(line) <= WIDTH for line in lines) and "..." not in "".join(lines)
    assert f"input={path}" in lines[0] + lines[1] and lines[1].startswith("    ")


def test_the_session_header_fits_in_120_columns_and_names_every_axis() -> None:
    """A wide sweep and a long --db: every header line fits, and every value is there whole."""
    db = "/srv/benchmarks/a-rather-long-folder-name/another-rather-long-folder-name/results.db"
    s = settings(**WIDE, db=str(db), size="small", repeat="3")
    lines = header_lines(DaskbenchSession(s, "local", load_prices()), fixed_size=False)
    assert all(len(line) <= WIDTH for line in lines), lines
    words = " ".join(lines).split()
    for word in ("workers=1,2", "threads=1,2", "memory=2GiB,4GiB", f"{TARGET}=0.6,0.8", "saturation=1.1,inf",
                 "size=small", "repeat=3", f"db=sqlite:///{db}"):  # fmt: skip
        assert word in words, word


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("distributed.worker.memory.targt", "is not a Dask config key; did you mean distributed.worker.memory.target?"),
        ("distributed.foo", "is not a Dask config key; distributed has adaptive and {more} more (dask config get distributed)"),
        ("distributed.scheduler.foo", "is not a Dask config key (dask config get distributed.scheduler)"),
    ],
)  # fmt: skip
def test_an_unknown_config_key_is_one_line_naming_the_nearest_keys_and_where_to_see_all(
    key: str, expected: str
) -> None:
    """One line within 120 columns: the key meant, else as many of its section's keys as fit, how many more,
    and the command that lists them all; the example only when it still fits."""
    import dask
    import distributed  # noqa: F401  (loads distributed's defaults into dask.config)

    with pytest.raises(DaskbenchError) as info:
        settings(config=[f"{key}=1"])
    more = len(dask.config.get("distributed")) - 1
    assert str(info.value).startswith(f"--config: {key} {expected.format(more=more)}") and len(str(info.value)) <= WIDTH


def test_a_running_scheduler_refuses_sweeps_of_what_it_cannot_change() -> None:
    address = backend_named("address")
    with pytest.raises(DaskbenchError, match="--threads-per-worker: a running scheduler"):
        check_sweep_fits_backend(settings(cluster="tcp://127.0.0.1:8786", threads_per_worker="1,2"), address)
    with pytest.raises(DaskbenchError, match=f"--config {TARGET}: a running scheduler"):
        check_sweep_fits_backend(settings(cluster="tcp://127.0.0.1:8786", config=[f"{TARGET}=0.6"]), address)
    check_sweep_fits_backend(settings(cluster="tcp://127.0.0.1:8786", config=["array.chunk-size=1MiB"]), address)


SWEEP_FILE = """
import dask
import pytest

pytestmark = pytest.mark.benchmark


def _worker_view():
    return dask.config.get("distributed.worker.memory.target"), dask.config.get("array.chunk-size")


def test_config_reaches_workers_and_client(measure):
    worker = measure(dask.delayed(_worker_view)(), name="config_view")
    assert worker == (0.5, "3MiB")
    assert dask.config.get("array.chunk-size") == "3MiB"
"""


def test_a_real_sweep_sets_each_value_where_it_is_used_and_records_it(tmp_path: Path) -> None:
    (tmp_path / "test_sweep.py").write_text(SWEEP_FILE)
    db = f"sqlite:///{tmp_path / 'sweep.db'}"
    result = run_pytest(
        tmp_path, "-m", "benchmark", "-v", "--db", db, "--workers", "1", "--saturation", "1.1",
        "--threads-per-worker", "1,2", "--memory-per-worker", "1GiB,2GiB",
        "--config", f"{TARGET}=0.5", "--config", "array.chunk-size=3MiB",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[sat=1.1-workers=1-threads=2-memory=2GiB-array.chunk-size=3MiB-memory.target=0.5]" in result.stdout
    assert "task slots per worker at 2 threads: 1.1 -> 3" in result.stdout
    progress = [line for line in result.stdout.splitlines() if line.startswith("daskbench: config_view ")]
    assert len(progress) == len(set(progress)) == 4 and all(len(line) <= WIDTH for line in progress)
    store = Store(db, create=False)
    cases = store.cases().values()
    specs = {(c.cluster.threads_per_worker, c.cluster.memory_per_worker) for c in cases}
    assert specs == {(1, 2**30), (1, 2**31), (2, 2**30), (2, 2**31)}
    assert all(c.cluster.config == {TARGET: "0.5", "array.chunk-size": "3MiB"} for c in cases)
    run = store.latest_run().run_id
    shown = daskbench_cli("show", run, "--db", db, "--format", "json", timeout=60)
    rows = json.loads(shown.stdout)["measurements"]
    assert sorted(r["task_slots"] for r in rows) == [2, 2, 3, 3]
    table = daskbench_cli("show", run, "--db", db, timeout=60).stdout
    assert {line for line in table.splitlines() if line.startswith("config_view ")} == {
        f"config_view local 1w/{threads}t {memory} sat=1.1 ({slots} slots) array.chunk-size=3MiB memory.target=0.5"
        for threads, slots in ((1, 2), (2, 3)) for memory in ("1GiB", "2GiB")
    }  # fmt: skip


def test_an_unknown_config_key_stops_before_any_cluster_starts(tmp_path: Path) -> None:
    (tmp_path / "test_sweep.py").write_text(SWEEP_FILE)
    db = tmp_path / "none.db"
    result = run_pytest(tmp_path, "-m", "benchmark", "--db", f"sqlite:///{db}", "--config", f"{TARGET}x=0.5")
    assert result.returncode == 4
    assert f"--config: {TARGET}x is not a Dask config key" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout and not db.exists()
