"""A session's time estimate without a history (`daskbench.plugin.pace.estimate`): the figure measured on this
project's machine, scaled by how fast this machine's CPU probe runs against the probe then."""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench.plugin import pace


@pytest.mark.parametrize(("probe", "expected"), [(0.022, 16.4), (0.044, 32.8), (0.011, 8.2)])
def test_an_estimate_without_history_is_the_documented_figure_scaled_by_the_probe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, probe: float, expected: float
) -> None:
    """16.4 s a measurement at small, measured with the probe at 22 ms: a machine whose probe reads 44 ms
    (twice as slow) plans 32.8 s, one at 11 ms 8.2 s; the basis says which figure and which factor."""
    monkeypatch.setattr(pace, "DOCUMENTED", {"small": (16.4, 0.022)})
    monkeypatch.setattr(pace, "probe_seconds", lambda: probe)
    found = pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "small", "AMD EPYC")
    assert found is not None and found.seconds_each == pytest.approx(expected)
    assert found.basis == f"16.4 s a measurement at small as documented, x{probe / 0.022:.1f} by CPU probe"
    assert pace.estimate(f"sqlite:///{tmp_path / 'empty.db'}", "medium", "AMD EPYC") is None
