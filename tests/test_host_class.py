"""DASKBENCH_HOST_CLASS: histories survive a runner's CPU change, and compare still shows the exact CPU model."""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench import provenance
from daskbench.cli import main
from daskbench.judge.compare import compare_runs
from daskbench.store import Store
from tests.helpers import HOST, add_results, add_run, make_case

CASE = make_case("shuffle", size="small")


def _store(tmp_path: Path, host_class: str | None) -> Store:
    """Twelve nights on one CPU model, then a night on another, all of one host class (or none)."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    tag = {"host_class": host_class} if host_class else {}
    for night in range(12):
        run = add_run(store, night, label=f"n{night}", host={**HOST, **tag})
        add_results(store, run, CASE, 10.0 * (1 + 0.01 * (night % 3)))
    run = add_run(store, 12, label="new-cpu", host={**HOST, **tag, "cpu_model": "Other CPU @ 2.4GHz"})
    add_results(store, run, CASE, 10.0)
    return store


def test_host_class_is_recorded_next_to_the_cpu_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """provenance.host() records the user's host class beside the exact CPU model, and nothing when unset."""
    monkeypatch.setenv("DASKBENCH_HOST_CLASS", " gh-ubuntu-latest-4core ")
    found = provenance.host()
    assert found["host_class"] == "gh-ubuntu-latest-4core" and found["cpu_model"]
    monkeypatch.delenv("DASKBENCH_HOST_CLASS")
    assert "host_class" not in provenance.host()


def test_history_spans_a_cpu_change_within_one_host_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs of one host class on different CPU models are each other's history; compare prints both CPU models."""
    store = _store(tmp_path, "gh-ubuntu-latest-4core")
    comparison = compare_runs(store, history=20)
    assert {v.verdict for v in comparison.verdicts} <= {"unchanged", "improved"}
    assert not any("history skips" in note for note in comparison.notes)
    assert main(["compare", "--history", "20", "--db", store.url]) == 0
    out = capsys.readouterr().out
    assert "Other CPU @ 2.4GHz" in out and "Test CPU @ 3GHz" in out


def test_without_host_class_a_cpu_change_starts_a_new_history(tmp_path: Path) -> None:
    """Without a host class the exact CPU model still decides: the earlier runs are skipped, as before."""
    comparison = compare_runs(_store(tmp_path, None), history=20)
    assert any("history skips 12 earlier runs" in note and "DASKBENCH_HOST_CLASS" in note for note in comparison.notes)
    assert {v.verdict for v in comparison.verdicts} <= {"inconclusive", "new"}
