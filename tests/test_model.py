"""Records validate themselves and fingerprints depend on identity only."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from daskbench.model import Case, ClusterSpec, Measurement
from tests.helpers import make_case


def test_fingerprint_ignores_info_and_cluster_target() -> None:
    """Adding a note or a scheduler address never forks a case's history."""
    case = make_case()
    noted = Case(case.workload, case.params, replace(case.cluster, target="tcp://10.0.0.1:8786"), info={"test": "x"})
    assert noted.fingerprint == case.fingerprint


def test_fingerprint_changes_with_saturation_workers_and_params() -> None:
    """Any identity field (saturation, cluster size, workload parameter) makes a new case."""
    base = make_case()
    assert make_case(saturation=math.inf).fingerprint != base.fingerprint
    assert make_case(n_workers=1).fingerprint != base.fingerprint
    assert make_case(size="small").fingerprint != base.fingerprint


def test_fingerprint_is_stable_across_processes() -> None:
    """The fingerprint is a content hash, not Python's randomized hash()."""
    code = "from tests.helpers import make_case; print(make_case().fingerprint)"
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert other.stdout.strip() == make_case().fingerprint


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("worker_saturation", 0.0, "worker_saturation"),
        ("n_workers", 0, "n_workers"),
        ("memory_per_worker", -1, "memory"),
    ],
)
def test_cluster_spec_names_the_bad_field(field: str, value: float, words: str) -> None:
    """A bad ClusterSpec value is refused with a message naming the field."""
    good = {
        "backend": "local",
        "n_workers": 1,
        "threads_per_worker": 1,
        "memory_per_worker": None,
        "worker_saturation": 1.0,
    }
    with pytest.raises(ValueError, match=words):
        ClusterSpec(**{**good, field: value})


def test_passed_measurement_requires_runtime() -> None:
    """A passed measurement without a compute time is refused; a failed one may lack it."""
    with pytest.raises(ValueError, match="runtime_s"):
        Measurement(run_id="r", fingerprint="f", repeat=0, outcome="passed")
    assert Measurement(run_id="r", fingerprint="f", repeat=0, outcome="oom").runtime_s is None


def test_unknown_outcome_is_refused() -> None:
    """Only the documented outcomes can be stored."""
    with pytest.raises(ValueError, match="outcome"):
        Measurement(run_id="r", fingerprint="f", repeat=0, outcome="crashed")  # type: ignore[arg-type]


def test_inf_saturation_is_spelled_inf_in_identity() -> None:
    """Identity is JSON-safe: infinity is the string 'inf', as dask config spells it."""
    assert make_case(saturation=math.inf).cluster.identity()["worker_saturation"] == "inf"
