"""The two registries (workloads, cluster backends) are the one place every reader looks."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from daskbench import config as cfg
from daskbench.clusters import BACKENDS, backend_named, backend_of
from daskbench.errors import DaskbenchError
from daskbench.metrics.cost import load_prices
from daskbench.plugin.state import DaskbenchSession
from daskbench.workloads import datasets
from daskbench.workloads.base import SIZES
from daskbench.workloads.registry import WORKLOADS, describe_all

# -- workloads ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_registered_workload_describes_every_size(name: str) -> None:
    """Each size gives one row per declared case, with bytes and chunks; the table has every size."""
    workload = WORKLOADS[name]
    assert set(workload.sizes) == set(SIZES)
    for size in SIZES:
        rows = workload.describe(size)
        assert [row["workload"] for row in rows] == list(workload.cases)
        assert all(row["size"] == size and row["input_bytes"] > 0 and row["chunks"] for row in rows)


def test_the_size_table_has_one_row_per_case_and_size() -> None:
    """`describe_all` reads the registry: every declared case at every size, nothing else."""
    cases = [case for workload in WORKLOADS.values() for case in workload.cases]
    rows = describe_all()
    assert sorted((row["workload"], row["size"]) for row in rows) == sorted((c, s) for c in cases for s in SIZES)


@pytest.mark.parametrize("name", [name for name, workload in WORKLOADS.items() if workload.inputs])
def test_a_workload_declared_with_inputs_has_a_generator_found_by_datasets(name: str) -> None:
    """`datasets` finds the declared generator, and names its datasets from the declared parameters."""
    assert datasets.GENERATORS[name] is WORKLOADS[name].inputs
    assert datasets.dataset_name(name, "tiny", 0).startswith(f"{name}-tiny-0-")


def test_only_workloads_declared_with_inputs_have_generators() -> None:
    """A workload that generates its data in the graph has nothing to prepare."""
    assert set(datasets.GENERATORS) == {name for name, workload in WORKLOADS.items() if workload.inputs}
    without = next(name for name, workload in WORKLOADS.items() if workload.inputs is None)
    with pytest.raises(ValueError, match="has no prepared inputs"):
        datasets.dataset_name(without, "tiny", 0)


def test_config_sizes_are_the_workloads_sizes() -> None:
    """--size accepts exactly the sizes the workloads declare (one tuple, `workloads.base.SIZES`)."""
    assert [cfg.parse_size(size) for size in SIZES] == list(SIZES)
    with pytest.raises(ValueError, match=f"choose one of {', '.join(SIZES)}"):
        cfg.parse_size("enormous")


# -- cluster backends ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("local", "local"),
        ("tcp://10.0.0.5:8786", "address"),
        ("tls://scheduler.example:8786", "address"),
        ("coiled", "coiled"),
        ("dask_kubernetes.operator:KubeCluster", "class"),
    ],
)
def test_backend_of_dispatches_each_form(value: str, name: str) -> None:
    """Each --cluster form names its backend, and that backend is registered."""
    assert backend_of(value) == name
    assert backend_named(name).matches(value)


@pytest.mark.parametrize("junk", ["kubernetes", "tcp://", "", "local:", "http//x"])
def test_backend_of_rejects_junk_listing_every_registered_form(junk: str) -> None:
    """An unknown value is one error line that lists every backend's form."""
    with pytest.raises(DaskbenchError) as raised:
        backend_of(junk)
    message = str(raised.value)
    assert message.startswith(f"--cluster {junk!r} is not a cluster spec")
    assert all(backend.form in message for backend in BACKENDS)


def test_cluster_help_lists_every_registered_form() -> None:
    """--cluster's help text is derived from the registry, so a new backend shows up there."""
    help_text = cfg.OPTIONS_BY_NAME["cluster"].help
    assert all(backend.form in help_text for backend in BACKENDS)


def test_config_and_the_backend_registry_import_no_dask() -> None:
    """Reading the registry for help text keeps `daskbench.config` cheap (the CLI imports it)."""
    code = "import sys, daskbench.config; print(sorted({'dask', 'distributed', 'coiled'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_backend_names_are_unique_and_every_form_matches_only_its_backend() -> None:
    """No two backends share a name, and the example in each form is claimed by its own backend."""
    assert len({backend.name for backend in BACKENDS}) == len(BACKENDS)
    for backend in BACKENDS:
        example = backend.form.split(" ", 1)[0]
        assert backend_of(example) == backend.name


def test_an_unregistered_backend_name_is_refused() -> None:
    """A spec naming no registered backend (say, from another version's store) is a clear error."""
    with pytest.raises(DaskbenchError, match="not registered; use one of local, address"):
        backend_named("kubernetes")


def _session(cluster: str) -> DaskbenchSession:
    flags = {"cluster": cluster, "workers": "1,2,4", "saturation": "1.0,inf"}
    settings = cfg.resolve(flags, env={}, pyproject={})
    return DaskbenchSession(settings, backend_of(cluster), load_prices(None))


def test_an_address_backend_yields_one_requested_spec_per_saturation() -> None:
    """A running scheduler's size is whatever it has, so only one worker count is requested."""
    specs = _session("tcp://127.0.0.1:8786").requested_specs()
    assert [spec.worker_saturation for spec in specs] == [1.0, float("inf")]
    assert {spec.n_workers for spec in specs} == {1}
    assert {(spec.backend, spec.target) for spec in specs} == {("address", "tcp://127.0.0.1:8786")}


def test_a_local_backend_sweeps_every_worker_count_without_a_target() -> None:
    """local is sized by the harness: every (saturation, workers) pair, no target recorded."""
    specs = _session("local").requested_specs()
    assert [(spec.worker_saturation, spec.n_workers) for spec in specs] == [
        (sat, n) for sat in (1.0, float("inf")) for n in (1, 2, 4)
    ]
    assert {spec.target for spec in specs} == {""}


def test_preflight_runs_the_backends_check() -> None:
    """An unreachable scheduler fails in preflight, before any cluster starts."""
    with pytest.raises(DaskbenchError, match=re.escape("cannot reach the scheduler at tcp://127.0.0.1:9")):
        _session("tcp://127.0.0.1:9").preflight()


def test_coiled_cluster_gets_size_memory_and_an_idle_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """What daskbench asks of coiled.Cluster (checked on a stand-in module: Coiled is not
    reachable from here): the spec's size, threads and memory, and an idle timeout so a
    cluster orphaned by a killed harness stops itself; --cluster-kwargs override each."""
    import types

    from daskbench.clusters import coiled as backend
    from daskbench.model import ClusterSpec

    asked: list[dict[str, object]] = []

    class Stop(Exception):
        pass

    def cluster(**kwargs: object) -> None:
        asked.append(kwargs)
        raise Stop

    monkeypatch.setitem(sys.modules, "coiled", types.SimpleNamespace(Cluster=cluster))
    monkeypatch.setenv("DASK_COILED__TOKEN", "stand-in")
    spec = ClusterSpec("coiled", 3, 2, 4 * 2**30, 1.1)
    for kwargs in ({}, {"idle_timeout": "2 hours"}):
        with pytest.raises(Stop):
            backend.start(spec, kwargs)
    assert asked[0] == {"n_workers": 3, "worker_options": {"nthreads": 2, "memory_limit": 4 * 2**30},
                        "idle_timeout": backend.IDLE_TIMEOUT, "worker_memory": "4GiB"}  # fmt: skip
    assert asked[1]["idle_timeout"] == "2 hours"


def test_every_command_and_the_pytest_options_have_working_help(capsys: pytest.CaptureFixture[str]) -> None:
    """``daskbench COMMAND --help`` for every registered command (and its subcommands) exits 0
    with text, and pytest's help lists every daskbench option: help strings are %-formatted,
    so a stray % in one would break them all."""
    from daskbench.cli import SUBCOMMAND_MODULES, build_parser, main

    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    commands = [[name] for name in subparsers.choices]  # type: ignore[union-attr]
    commands += [["baseline", action] for action in ("set", "list", "accept")] + [["data", "prepare"]]
    assert {c[0] for c in commands} >= {name.rstrip("_") for name in SUBCOMMAND_MODULES}  # a module per command
    for command in commands:
        with pytest.raises(SystemExit) as done:
            main([*command, "--help"])
        assert done.value.code == 0 and "usage: daskbench" in capsys.readouterr().out, command
    shown = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert all(option.flag in shown.stdout for option in cfg.OPTIONS)
