"""Records validate themselves and fingerprints depend on identity only."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import fields, replace

import pytest

from daskbench.model import WRONG_RESULT, Case, ClusterSpec, Measurement, Run, TaskMemory
from daskbench.verdicts import Comparison
from tests.helpers import make_case, make_run


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


def _full_run() -> Run:
    return Run(
        "r1", "nightly", "2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+00:00", "abc", "https://ci/1",
        {"dask": "2025.1.0"}, {"cores": 8}, {"distributed": {"x": 1}}, {"ab_group": "g"},
    )  # fmt: skip


def test_a_run_reads_back_from_the_json_it_writes() -> None:
    run = _full_run()
    assert Run.from_json(json.loads(json.dumps(run.to_json()))) == run
    assert set(run.to_json()) == {f.name for f in fields(Run)}


def test_a_case_reads_back_from_its_json_which_keeps_identity_not_the_clusters_target() -> None:
    """The store keeps a case's identity: ``info`` and the cluster's ``target`` are not written."""
    case = make_case(saturation=math.inf)
    targeted = Case(case.workload, case.params, replace(case.cluster, target="tcp://10.0.0.1:8786"), info={"a": 1})
    written = json.loads(json.dumps(targeted.to_json()))
    assert written["fingerprint"] == case.fingerprint and "target" not in written["cluster"]
    assert Case.from_json(written) == case


def test_a_cluster_spec_reads_back_from_its_json_target_included() -> None:
    spec = ClusterSpec("address", 2, 4, None, 1.5, (("distributed.x", "1"),), target="tcp://10.0.0.1:8786")
    assert ClusterSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_a_measurement_reads_back_from_its_json_with_tasks_flags_and_timeline() -> None:
    m = Measurement.of(
        run_id="r1", fingerprint="f" * 16, repeat=2, outcome="passed", runtime_s=1.5, peak_memory_bytes=2**30,
        phases={"compute": 1.5}, timeline=((0.0, 10), (0.5, 20)), extra={"instance": "m5.large"},
        recorded_at="2026-01-01T00:00:00+00:00", flags=("noisy",), tasks=(TaskMemory("sum", 4, 100, 90, 10, 2),),
    )  # fmt: skip
    written = json.loads(json.dumps(m.to_json()))
    assert written["timeline"] == [[0.0, 10], [0.5, 20]] and written["tasks"][0]["prefix"] == "sum"
    assert Measurement.from_json(written) == m
    assert set(written) == {f.name for f in fields(Measurement)}


def test_a_measurement_flagged_wrong_result_reads_back_as_wrong_result() -> None:
    m = Measurement.of(run_id="r1", fingerprint="f", repeat=0, outcome="passed", runtime_s=1.0, flags=(WRONG_RESULT,))
    assert Measurement.from_json(m.to_json()).outcome == WRONG_RESULT


def test_a_comparison_of_several_candidate_runs_holds_its_candidate_run_among_them() -> None:
    """A merged check's candidate side is every shard's run; the run compared for versions must be one of them."""
    base, first, last = make_run(), make_run(), make_run()
    merged = Comparison("ab", (base,), last, (), {}, {}, {}, candidate_runs=(first, last))
    assert merged.candidates == (first, last)
    assert Comparison("ab", (base,), last, (), {}, {}, {}).candidates == (last,)
    with pytest.raises(ValueError, match="candidate_runs"):
        Comparison("ab", (base,), last, (), {}, {}, {}, candidate_runs=(first, base))
