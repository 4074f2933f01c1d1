"""The history benchmarks (benchmarks/history/): reproducers of performance regressions users reported
upstream. They stay out of the bundled suite, name their issue and the releases around it, pass at size
tiny on the installed dask, and their client memory (where their graphs are built) is stored and shown."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from packaging.version import Version

from daskbench import catalog
from daskbench.cli import build_parser
from measure.history_bisect import REGRESSIONS
from tests.helpers import daskbench_cli, run_pytest

REPO = Path(__file__).resolve().parent.parent
HISTORY = REPO / "benchmarks" / "history"
FILES = sorted(HISTORY.glob("test_*.py"))


def _collected(*args: str) -> list[str]:
    result = run_pytest(REPO, "-m", "benchmark", "--collect-only", "-q", "--workers", "1", *args)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_the_bundled_suite_leaves_the_history_benchmarks_out_until_they_are_named() -> None:
    """``pytest -m benchmark`` collects the bundled files only; naming benchmarks/history collects each of its files."""
    bundled = _collected()
    assert bundled and not any("history" in item for item in bundled)
    named = {item.split("::")[0] for item in _collected("benchmarks/history")}
    assert named == {str(path.relative_to(REPO)) for path in FILES} and len(FILES) >= 3


def test_each_history_benchmark_names_its_issue_and_its_good_and_bad_releases() -> None:
    """The module docstring links the upstream issue its file name carries and says ``Good: dask X``, ``Bad: dask Y``."""
    for path in FILES:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        number = re.fullmatch(r"test_\w+_(\d+)\.py", path.name)
        assert number, f"{path.name}: name it test_<what>_<issue number>.py"
        assert f"https://github.com/dask/dask/issues/{number.group(1)}" in doc, path.name
        assert re.search(r"Good: dask \d{4}\.\d+\.\d+", doc) and re.search(r"Bad: dask \d{4}\.\d+\.\d+", doc), path.name


def test_the_history_benchmarks_pass_at_tiny_and_their_client_memory_is_stored_and_shown(tmp_path: Path) -> None:
    """Each passes its own check on this dask; ``show`` has the client's peak above idle, and every
    measurement has both client memory metrics, the peak at least the rise above idle."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_pytest(
        REPO, "-m", "benchmark", "benchmarks/history", "--size", "tiny", "--workers", "1", "--saturation", "inf",
        "--db", db, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{len(FILES)} passed" in result.stdout
    run = json.loads(daskbench_cli("runs", "--db", db, "--format", "json", check=True).stdout)["runs"][0]["run_id"]
    table = daskbench_cli("show", run, "--db", db, check=True).stdout
    assert "client peak" in table and "above idle" in table
    rows = json.loads(daskbench_cli("show", run, "--db", db, "--format", "json", check=True).stdout)["measurements"]
    assert len(rows) == len(FILES)
    for row in rows:
        assert row["client_peak_memory_bytes"] >= row["client_peak_memory_above_idle_bytes"] >= 0, row["workload"]


def test_ci_history_bisect_bisects_each_history_benchmark_with_a_command_bisect_accepts() -> None:
    """One bisection per file, between pinned ends whose other pins agree, the release it should name after
    good and at most bad, a declared metric, and a command line that ``daskbench bisect`` parses."""
    assert sorted(r.benchmark for r in REGRESSIONS) == sorted(path.name for path in FILES)
    for regression in REGRESSIONS:
        assert Version(regression.good) < Version(regression.expected) <= Version(regression.bad), regression
        assert regression.metric in catalog.names(), regression
        command = regression.command("history-test", "sqlite:///x.db")
        parsed = build_parser().parse_args(command[command.index("bisect") :])
        good, bad = (dict(pin.split("==") for pin in end.split(",")) for end in (parsed.good, parsed.bad))
        assert {name for name in good if good[name] != bad.get(name)} == {"dask", "distributed"}, regression
        assert (HISTORY / regression.benchmark).is_file() and regression.benchmark in " ".join(parsed.pytest_args)
