"""Every bad input stops with one line naming the flag and a fix: before any cluster starts or row is written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from daskbench.store import Store, exchange
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
    "mycluster.py": "class Mine:\n    def __init__(self, n_workers=1):\n        self.n_workers = n_workers\n\n"
    "    def scale(self, n):\n        self.n_workers = n\n\n\nclass Plain:\n    pass\n",
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


# -- settings that would lose results or hang, and inputs that used to end in a traceback (issue 20, 5 and 6) --

#: The header line of an export file, with its version replaced.
HEADER = '{{"format": "daskbench-export", "version": {version}, "exported_at": "2026-01-01T00:00:00+00:00"}}\n'
#: The password in URLs below: no output may show it.
SECRET = "hunter2-db-secret"
#: A run id 100 KB long.
HUGE_ID = "a" * 100_000

EXPORT_FILES = {
    "version-words.jsonl": HEADER.format(version='"two"'),
    "version-infinite.jsonl": HEADER.format(version="Infinity"),
    "version-fraction.jsonl": HEADER.format(version="1.5"),
    "version-zero.jsonl": HEADER.format(version="0"),
    "row-without-run-id.jsonl": HEADER.format(version="2") + '{"kind": "run", "row": {"label": "x"}}\n',
    "metric-not-a-number.jsonl": HEADER.format(version="2") + '{"kind": "measurement", "row": {"run_id": "r", '
    '"fingerprint": "f", "repeat": 0, "outcome": "passed", "message": "", "phases": "{}", "timeline": "[]", '
    '"extra": "{}", "recorded_at": "2026-01-01", "metrics": {"runtime_s": "fast"}}}\n',
}
#: A well-formed measurement of a run neither the file nor the store has.
EXPORT_FILES["run-unknown.jsonl"] = EXPORT_FILES["metric-not-a-number.jsonl"].replace('"fast"', "1.5")

#: (id, flags, the text the error line must contain) of sessions refused before anything starts.
SESSION_CASES: list[tuple[str, list[str], str]] = [
    ("db-in-memory", ["--db", "sqlite:///:memory:"], "loses every result"),
    ("db-in-memory-no-path", ["--db", "sqlite://"], "loses every result"),
    ("memory-1kib", ["--memory-per-worker", "1KiB"], "--memory-per-worker"),
    ("memory-one-too-small", ["--memory-per-worker", "2GiB,100MB"], "'100MB'"),
    ("evidence-dir-under-a-file", ["--evidence", "--evidence-dir", "{dir}/afile/evidence"], "--evidence-dir"),
    ("evidence-dir-unwritable", ["--evidence", "--evidence-dir", "/proc/daskbench-none/evidence"], "--evidence-dir"),
    ("evidence-dir-is-a-file", ["--evidence", "--evidence-dir", "{dir}/afile"], "--evidence-dir"),
    ("config-value-words", ["--config", "distributed.worker.memory.target=abc"], "'abc'"),
    ("config-value-out-of-range", ["--config", "distributed.worker.memory.target=0.6,5"], "'5'"),
    ("config-bool-words", ["--config", "distributed.scheduler.work-stealing=maybe"], "'maybe'"),
    ("cluster-names-a-module", ["--cluster", "os:path"], "os:path"),
    ("cluster-class-not-a-cluster", ["--cluster", "mycluster:Plain"], "mycluster:Plain"),
    ("local-kwargs-unknown", ["--cluster", "local", "--cluster-kwargs", "unknown.yaml"], "bogus_keyword"),
    ("compare-100kb-name", ["--compare", HUGE_ID], "--compare"),
]

#: (id, CLI arguments, the text the error line must contain); {db} is an existing store (its bytes must not
#: change), {new} a store that must not be created, {dir} the test folder, {export} a good export file.
COMMAND_CASES: list[tuple[str, list[str], str]] = [
    ("import-into-memory", ["import", "{export}", "--db", "sqlite:///:memory:"], "loses every result"),
    ("import-into-memory-no-path", ["import", "{export}", "--db", "sqlite://"], "loses every result"),
    ("import-into-empty-sqlite-path", ["import", "{export}", "--db", "sqlite:///"], "loses every result"),
    (
        "import-into-memory-uri",
        ["import", "{export}", "--db", "sqlite:///file:x?mode=memory&uri=true"],
        "loses every result",
    ),
    ("db-two-slashes", ["import", "{export}", "--db", "sqlite://r2.db"], "sqlite://r2.db"),
    ("db-scheme-without-slashes", ["import", "{export}", "--db", "sqlite:r2.db"], "sqlite:r2.db"),
    ("db-port-not-a-number", ["runs", "--db", f"postgresql://u:{SECRET}@h:notaport/db"], "is not a database URL"),
    ("db-unclosed-ipv6", ["runs", "--db", f"postgresql://u:{SECRET}@[::1/db"], "is not a database URL"),
    ("import-binary-file", ["import", "{dir}/binary.jsonl", "--db", "{new}"], "binary.jsonl"),
    ("import-binary-into-store", ["import", "{dir}/binary.jsonl", "--db", "{db}"], "binary.jsonl"),
    ("import-good-then-binary", ["import", "{export}", "{dir}/binary.jsonl", "--db", "{new}"], "binary.jsonl"),
    ("import-version-words", ["import", "{dir}/version-words.jsonl", "--db", "{new}"], "'two'"),
    ("import-version-infinite", ["import", "{dir}/version-infinite.jsonl", "--db", "{new}"], "version"),
    ("import-version-fraction", ["import", "{dir}/version-fraction.jsonl", "--db", "{new}"], "1.5"),
    ("import-version-zero", ["import", "{dir}/version-zero.jsonl", "--db", "{db}"], "version"),
    ("import-row-without-run-id", ["import", "{dir}/row-without-run-id.jsonl", "--db", "{db}"], "run_id"),
    ("import-metric-not-a-number", ["import", "{dir}/metric-not-a-number.jsonl", "--db", "{db}"], "runtime_s"),
    ("import-measurement-of-unknown-run", ["import", "{dir}/run-unknown.jsonl", "--db", "{db}"], "nothing merged"),
    ("report-unwritable", ["report", "--db", "{db}", "-o", "/proc/daskbench-none/report.html"], "-o"),
    ("report-in-proc", ["report", "--db", "{db}", "-o", "/proc/report.html"], "-o"),
    ("export-under-a-file", ["export", "--db", "{db}", "-o", "{dir}/afile/x.jsonl"], "afile"),
    ("export-unwritable", ["export", "--db", "{db}", "-o", "/proc/daskbench-none/x.jsonl"], "-o"),
    ("export-onto-a-folder", ["export", "--db", "{db}", "-o", "{dir}"], "folder"),
    ("publish-under-a-file", ["publish", "--db", "{db}", "-o", "{dir}/afile/site"], "afile"),
    ("publish-onto-a-file", ["publish", "--db", "{db}", "-o", "{dir}/afile"], "afile"),
    ("publish-unwritable", ["publish", "--db", "{db}", "-o", "/proc/daskbench-none/site"], "-o"),
    ("init-unwritable", ["init", "/proc/daskbench-none"], "/proc/daskbench-none"),
    ("init-under-a-file", ["init", "{dir}/afile/repo"], "afile"),
    ("show-100kb-run-id", ["show", HUGE_ID, "--db", "{db}"], "run id"),
    ("compare-100kb-candidate", ["compare", "--db", "{db}", "--candidate", HUGE_ID], "run id"),
    ("baseline-set-100kb-run-id", ["baseline", "set", "main", HUGE_ID, "--db", "{db}"], "run id"),
    ("advise-100kb-run-id", ["advise", HUGE_ID, "--db", "{db}"], "run id"),
    ("compare-100kb-baseline", ["compare", "--db", "{db}", "--baseline", HUGE_ID], "--baseline"),
    ("compare-100kb-ab-group", ["compare", "--db", "{db}", "--group", HUGE_ID], "--group"),
    ("report-100kb-baseline", ["report", "--db", "{db}", "--baseline", HUGE_ID, "-o", "{dir}/r.html"], "--baseline"),
]


@pytest.fixture
def stores(folder: Path) -> dict[str, str]:
    """An existing store with one measured run, its export, and the bad export files; the values to fill in."""
    store, run, case = Store(f"sqlite:///{folder / 'r.db'}"), make_run(), make_case()
    store.add_run(run)
    store.add_case(case)
    store.add_measurement(make_measurement(run, case))
    (folder / "good.jsonl").write_text("".join(line + "\n" for line in exchange.export_lines(store)))
    store.close()
    (folder / "binary.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256)))
    for name, text in EXPORT_FILES.items():
        (folder / name).write_text(text)
    return {"db": store.url, "new": f"sqlite:///{folder / 'new.db'}", "dir": str(folder),
            "export": str(folder / "good.jsonl")}  # fmt: skip


def _one_error_line(out: str, err: str) -> str:
    """The one non-empty line a refused command printed (there must be exactly one, and no traceback)."""
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert "Traceback" not in out + err and SECRET not in out + err, out + err
    assert len(lines) == 1, out + err
    return lines[0]


@pytest.mark.parametrize(("flags", "names"), [pytest.param(f, n, id=i) for i, f, n in SESSION_CASES])
def test_session_setting_that_would_lose_results_or_hang_is_one_usage_error(
    folder: Path, flags: list[str], names: str
) -> None:
    """Refused with pytest's usage error (4): one line naming the value, no traceback, no store, nothing run."""
    db = folder / "r.db"
    default_db = [] if "--db" in flags else ["--db", f"sqlite:///{db}"]
    result = run_pytest(folder, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                        *default_db, *_fill(flags, dir=str(folder)), timeout=120)  # fmt: skip
    line = _one_error_line("", result.stderr)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert line.startswith("ERROR: ") and names in line and len(line.replace(str(folder), "DIR")) <= 200, line
    assert "Traceback" not in result.stdout and " passed" not in result.stdout
    assert not db.exists() and not (folder / "afile").is_dir()


@pytest.mark.parametrize(("args", "names"), [pytest.param(a, n, id=i) for i, a, n in COMMAND_CASES])
def test_command_input_that_used_to_end_in_a_traceback_is_one_line_and_exit_2(
    folder: Path,
    stores: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    names: str,
) -> None:
    """Exit 2 with one line naming the value (never a password), no traceback; no store created or changed."""
    monkeypatch.chdir(folder)  # a relative path a bad --db would create lands here, where it is seen
    store_file = folder / "r.db"
    before = (hashlib.sha256(store_file.read_bytes()).hexdigest(), sorted(p.name for p in folder.iterdir()))
    capsys.readouterr()
    result = daskbench_cli(*_fill(args, **stores), capsys=capsys)
    line = _one_error_line(result.stdout, result.stderr)
    assert result.returncode == 2, line
    assert line.startswith("error: ") and names in line and len(line.replace(str(folder), "DIR")) <= 200, line
    after = (hashlib.sha256(store_file.read_bytes()).hexdigest(),
             sorted(p.name for p in folder.iterdir() if not p.name.startswith("r.db-")))  # fmt: skip
    assert after == before
