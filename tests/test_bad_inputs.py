"""Every bad input stops with one line naming the flag and a fix: before any cluster starts or row is written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from daskbench.store import Store
from tests.helpers import BENCH_FILE, daskbench_cli, make_case, make_measurement, make_run, run_pytest

#: Files a bad input may point at, written into each test's folder.
#: The bundled price table with its first instance priced at -1 $/h.
NEGATIVE_PRICES = json.dumps(
    {**(table := json.loads((Path(__file__).parents[1] / "daskbench/metrics/prices.json").read_text())),
     "instances": [{**table["instances"][0], "usd_per_hour": -1}, *table["instances"][1:]]}
)  # fmt: skip

FILES = {
    "broken.yaml": "n_workers: [1, 2\n  bad: : :\n",
    "python.yaml": "factory: !!python/object/apply:os.system ['echo pwned']\n",
    "list.yaml": "- 1\n- 2\n",
    "intkeys.yaml": "1: 2\n",
    "unknown.yaml": "bogus_keyword: 1\n",
    "mycluster.py": "class Mine:\n    def __init__(self, n_workers=1):\n        self.n_workers = n_workers\n",
    "afile": "not a folder\n",
    "negative-prices.json": NEGATIVE_PRICES,
    "nan-prices.json": NEGATIVE_PRICES.replace('"usd_per_hour": -1', '"usd_per_hour": NaN', 1),
}

#: (id, flags, env) of `pytest -m benchmark` sessions that must stop with a usage error.
PYTEST_CASES: list[tuple[str, list[str], dict[str, str]]] = [
    ("memory-overflow", ["--memory-per-worker", "1e400"], {}),
    ("prices-negative", ["--prices", "negative-prices.json"], {}),
    ("wait-idle-negative", ["--wait-idle=-1"], {}),
    ("prices-nan", ["--prices", "nan-prices.json"], {}),
    ("threads-list-zero", ["--threads-per-worker", "1,0"], {}),
    ("config-unknown-key", ["--config", "distributed.worker.memory.targett=0.6"], {}),
    ("config-no-values", ["--config", "array.chunk-size="], {}),
    ("memory-huge", ["--memory-per-worker", "1e30"], {}),
    ("memory-negative", ["--memory-per-worker=-5GiB"], {}),
    ("memory-words", ["--memory-per-worker", "lots"], {}),
    ("port-too-big", ["--cluster", "tcp://h:99999"], {}),
    ("ipv6-unclosed", ["--cluster", "tcp://[::1"], {}),
    ("address-no-host", ["--cluster", "tcp://"], {}),
    ("address-no-port", ["--cluster", "tcp://127.0.0.1"], {}),
    ("cluster-words", ["--cluster", "my cluster"], {}),
    ("kwargs-malformed", ["--cluster", "coiled", "--cluster-kwargs", "broken.yaml"], {}),
    ("kwargs-python-tag", ["--cluster", "coiled", "--cluster-kwargs", "python.yaml"], {}),
    ("kwargs-missing", ["--cluster", "mycluster:Mine", "--cluster-kwargs", "nope.yaml"], {}),
    ("kwargs-list", ["--cluster", "mycluster:Mine", "--cluster-kwargs", "list.yaml"], {}),
    ("kwargs-int-keys", ["--cluster", "mycluster:Mine", "--cluster-kwargs", "intkeys.yaml"], {}),
    ("kwargs-unknown-keyword", ["--cluster", "mycluster:Mine", "--cluster-kwargs", "unknown.yaml"], {}),
    ("class-missing", ["--cluster", "mycluster:Missing"], {}),
    ("module-missing", ["--cluster", "no_such_module_x:Cluster"], {}),
    ("db-under-a-file", ["--db", "sqlite:///{dir}/afile/sub/r.db"], {}),
    ("db-uncreatable-root", ["--db", "sqlite:////proc/daskbench-none/r.db"], {}),
    ("db-directory", ["--db", "{dir}"], {}),
    ("db-not-a-url", ["--db", "results"], {}),
    ("data-bad-bucket", ["--data", "s3://Bad_Bucket!"], {}),
    ("data-short-bucket", ["--data", "s3://ab/x"], {}),
    ("data-unsupported-scheme", ["--data", "gs://bucket/x"], {}),
    ("data-empty-bucket", ["--data", "s3:///prefix"], {}),
    ("endpoint-not-url", ["--data", "s3://bucket-ok", "--s3-endpoint", "not a url"], {}),
    ("endpoint-credentials", ["--data", "s3://bucket-ok", "--s3-endpoint", "http://user:pw@127.0.0.1:9000"], {}),
    ("endpoint-bad-port", ["--data", "s3://bucket-ok", "--s3-endpoint", "http://127.0.0.1:99999"], {}),
    ("workers-huge", ["--workers", "100000"], {}),
    ("workers-zero", ["--workers", "0"], {}),
    ("workers-fraction", ["--workers", "1.5"], {}),
    ("workers-empty-item", ["--workers", "1,,2"], {}),
    ("repeat-huge", ["--repeat", "1000000"], {}),
    ("repeat-zero", ["--repeat", "0"], {}),
    ("threads-zero", ["--threads-per-worker", "0"], {}),
    ("timeout-tiny", ["--timeout", "1e-9"], {}),
    ("timeout-inf", ["--timeout", "inf"], {}),
    ("timeout-nan", ["--timeout", "nan"], {}),
    ("timeout-negative", ["--timeout", "-3"], {}),
    ("timeout-two-days", ["--timeout", "172800"], {}),
    ("saturation-overflow", ["--saturation", "1e400"], {}),
    ("saturation-negative", ["--saturation", "-1"], {}),
    ("saturation-nan", ["--saturation", "nan"], {}),
    ("saturation-words", ["--saturation", "fast"], {}),
    ("size-unknown", ["--size", "huge"], {}),
    ("label-blank", ["--label", "   "], {}),
    ("label-newline", ["--label", "a\nb"], {}),
    ("label-too-long", ["--label", "x" * 300], {}),
    ("compare-unknown-baseline", ["--compare", "mian"], {}),
    ("env-misspelt", [], {"DASKBENCH_WORKRES": "2"}),
    ("env-bad-repeat", [], {"DASKBENCH_REPEAT": "abc"}),
    ("env-bad-interleave", [], {"DASKBENCH_INTERLEAVE": "maybe"}),
]

#: (id, CLI arguments) that must exit 2 with one line; {db} is an existing store, {dir} the test folder.
CLI_CASES: list[tuple[str, list[str]]] = [
    ("runs-limit-negative", ["runs", "--db", "{db}", "--limit", "-1"]),
    ("prepare-seed-negative", ["data", "prepare", "--seed", "-1", "--size", "tiny", "--data", "{dir}/data"]),
    ("report-under-a-file", ["report", "--db", "{db}", "-o", "{dir}/afile/report.html"]),
    ("runs-limit-words", ["runs", "--db", "{db}", "--limit", "many"]),
    ("baseline-leading-spaces", ["baseline", "set", "  main", "{run}", "--db", "{db}"]),
    ("baseline-300-chars", ["baseline", "set", "b" * 300, "{run}", "--db", "{db}"]),
    ("baseline-newline", ["baseline", "set", "ma\nin", "{run}", "--db", "{db}"]),
    ("broken-schema-version", ["runs", "--db", "{broken}"]),
    ("runs-missing-store", ["runs", "--db", "sqlite:///{dir}/missing.db"]),
    ("show-under-a-file", ["show", "abc", "--db", "sqlite:///{dir}/afile/r.db"]),
    ("compare-history-zero", ["compare", "--db", "{db}", "--history", "0"]),
    ("compare-unknown-baseline", ["compare", "--db", "{db}", "--baseline", "nosuch"]),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _fill(values: list[str], **where: str) -> list[str]:
    return [value.format(**where) if "{" in value else value for value in values]


@pytest.mark.parametrize(("flags", "env"), [pytest.param(f, e, id=i) for i, f, e in PYTEST_CASES])
def test_bad_session_input_is_one_usage_error_before_anything_starts(
    folder: Path, flags: list[str], env: dict[str, str]
) -> None:
    """The session stops with pytest's usage error: one line, no traceback, no store, no test run."""
    db = folder / "r.db"
    default_db = [] if any(f == "--db" for f in flags) else ["--db", f"sqlite:///{db}"]
    result = run_pytest(folder, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                        *default_db, *_fill(flags, dir=str(folder)), env=env, timeout=120)  # fmt: skip
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert len(errors) == 1 and errors[0].startswith("ERROR: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr and " passed" not in result.stdout
    assert not db.exists()


@pytest.mark.parametrize("args", [pytest.param(a, id=i) for i, a in CLI_CASES])
def test_bad_command_input_is_one_line_and_exit_2(folder: Path, args: list[str]) -> None:
    """A command given a bad value exits 2 with one error line and no traceback, writing nothing."""
    db = f"sqlite:///{folder / 'r.db'}"
    store = Store(db)
    run = make_run()
    store.add_run(run)
    store.close()
    broken = folder / "broken.db"
    Store(f"sqlite:///{broken}").close()
    with sqlite3.connect(broken) as conn:
        conn.execute("UPDATE schema_meta SET value = 'three' WHERE key = 'schema_version'")
    conn.close()
    before = sorted(p.name for p in folder.iterdir())
    result = daskbench_cli(*_fill(args, db=db, run=run.run_id, dir=str(folder), broken=f"sqlite:///{broken}"))
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len([e for e in errors if "error" in e.lower()]) == 1 and "Traceback" not in result.stderr
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(("r.db-", "broken.db-"))) == before
    assert Store(db).baselines() == {}


def test_report_into_a_folder_writes_report_html_there(tmp_path: Path) -> None:
    """``report -o DIR`` names a folder: the report is DIR/report.html, and the line says so."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store, run, case = Store(db), make_run(), make_case()
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case))
    store.close()
    (tmp_path / "out").mkdir()
    result = daskbench_cli("report", "--db", db, "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "report.html").stat().st_size > 0
    assert f"wrote {tmp_path / 'out' / 'report.html'}" in result.stdout
