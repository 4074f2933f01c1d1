"""Secrets planted in dask config reach nothing daskbench writes: store bytes, terminal, JSON, report."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daskbench import config as cfg
from daskbench import provenance
from daskbench.clusters import check_config_applied
from daskbench.errors import DaskbenchError
from daskbench.model import ClusterSpec
from daskbench.redact import masked_choices, redact_text, redact_url, redact_value
from daskbench.store import Store
from tests.helpers import BENCH_FILE, daskbench_cli, make_measurement, make_run, run_pytest

QUERY_SECRET = "qs-7f3a9c"
LIST_SECRET = "wJalrXUtnFEMI-list-value"
URL_SECRET = "pw-in-url-51d2"
PLANTED = {
    "DASK_DISTRIBUTED__DASHBOARD__LINK": f"http://dash.example/status?token={QUERY_SECRET}&x=1",
    "DASK_JOBQUEUE__SLURM__JOB_SCRIPT_PROLOGUE": f'["module load x", "export AWS_SECRET_ACCESS_KEY={LIST_SECRET}"]',
    "DASK_MYTEAM__RESULTS_ENDPOINT": f"https://bench:{URL_SECRET}@results.example/upload",
}
SECRETS = (QUERY_SECRET, LIST_SECRET, URL_SECRET)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("postgresql://host/db?password=X1", "postgresql://host/db?password=***"),
        ("postgresql://u:X1@host:5432/db", "postgresql://u:***@host:5432/db"),
        ("s3://b/k?X-Amz-Signature=X1&part=2", "s3://b/k?X-Amz-Signature=***&part=2"),
        ("sqlite:////tmp/results.db", "sqlite:////tmp/results.db"),
    ],
)
def test_url_passwords_are_hidden_in_user_info_and_query(raw: str, shown: str) -> None:
    """`redact_url` hides passwords in both places and leaves a URL without one byte for byte."""
    assert redact_url(raw) == shown


def test_credential_looking_text_is_hidden_inside_strings_and_lists() -> None:
    """Assignments to secret-looking names, AWS key ids and URL passwords inside values are masked."""
    value = {"prologue": ["export AWS_SECRET_ACCESS_KEY=abc", "id AKIAABCDEFGHIJKLMNOP"], "api_token": "t"}
    assert redact_value(value) == {"prologue": ["export AWS_SECRET_ACCESS_KEY=***", "id ***"], "api_token": "***"}
    assert redact_text("GITHUB_TOKEN: ghp_x and https://u:pw@h/") == "GITHUB_TOKEN: *** and https://u:***@h/"


def test_planted_secrets_reach_no_store_byte_output_json_or_report(tmp_path: Path) -> None:
    """A query token, a secret in a list value and a URL password in dask config appear nowhere we write."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    db_path = tmp_path / "r.db"
    db = f"sqlite:///{db_path}"
    session = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                         "--db", db, "-k", "small_sum", env=PLANTED)  # fmt: skip
    assert session.returncode == 0, session.stdout + session.stderr
    store = Store(db)
    (cand,) = store.runs()
    config = cand.dask_config
    assert config["myteam.results_endpoint"] == "https://bench:***@results.example/upload"
    assert "***" in config["jobqueue.slurm.job_script_prologue"] and "***" in config["distributed.dashboard.link"]
    earlier = make_run(started_at=(datetime.now(UTC) - timedelta(hours=1)).isoformat(), host=dict(cand.host),
                       versions=dict(cand.versions), dask_config={key: "plain" for key in config})  # fmt: skip
    store.add_run(earlier)
    for m in store.measurements([cand.run_id]):
        store.add_measurement(dataclasses.replace(make_measurement(earlier, store.cases()[m.fingerprint]), repeat=0))
    table = daskbench_cli("compare", "--db", db, "--baseline", earlier.run_id)
    as_json = daskbench_cli("compare", "--db", db, "--baseline", earlier.run_id, "--format", "json")
    assert "myteam.results_endpoint" in table.stdout and json.loads(as_json.stdout)["config_diff"]
    report = tmp_path / "report.html"
    made = daskbench_cli("report", "--db", db, "--baseline", earlier.run_id, "-o", str(report))
    assert made.returncode == 0, made.stderr
    store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("r.db*"))
    written = {
        "pytest output": session.stdout + session.stderr,
        "compare table": table.stdout + table.stderr,
        "compare json": as_json.stdout + as_json.stderr,
        "report": report.read_text(),
        "store bytes": stored.decode("latin-1"),
    }
    leaks = [(where, secret) for where, text in written.items() for secret in SECRETS if secret in text]
    assert leaks == []


def test_provenance_redacts_dask_config_by_the_same_rule() -> None:
    """`provenance.redacted` masks secrets by key and inside list values, as `redact_value` does."""
    flat = {"a.token": "t", "b.prologue": ["export DB_PASSWORD=p"], "c.link": "http://h/?sig=s"}
    stored = provenance.redacted(flat)
    assert stored == {"a.token": "***", "b.prologue": "['export DB_PASSWORD=***']", "c.link": "http://h/?sig=***"}


# -- swept config values under credential-looking keys ------------------------------------------


def test_swept_values_of_a_secret_key_are_masked_apart_and_others_kept() -> None:
    """One secret value is ``***``, several ``***1``, ``***2`` (in sweep order); other keys as given."""
    assert masked_choices("comm.tls.password", ["a"]) == ("***",)
    assert masked_choices("myteam.api_token", ["a", "b"]) == ("***1", "***2")
    assert masked_choices("distributed.worker.memory.target", ["0.6", "0.8"]) == ("0.6", "0.8")


def test_a_masked_spec_is_unmasked_to_the_values_it_stands_for() -> None:
    """`config.unmasked` turns a spec's masked pairs back into the swept values (what the cluster gets)."""
    sweep = (("myteam.api_token", ("s-one", "s-two")), ("array.chunk-size", ("64MiB",)))
    shown = cfg.masked_sweep(sweep)
    assert shown == (("myteam.api_token", ("***1", "***2")), ("array.chunk-size", ("64MiB",)))
    pairs = (("array.chunk-size", "64MiB"), ("myteam.api_token", "***2"))
    assert cfg.unmasked(sweep, pairs) == (("array.chunk-size", "64MiB"), ("myteam.api_token", "s-two"))


def test_redaction_leaves_a_masked_stand_in_as_it_is() -> None:
    """``api_token=***2`` stays (the case's identity), ``api_token=hunter2`` is masked."""
    assert redact_text("x.api_token=***2 r0") == "x.api_token=***2 r0"
    assert redact_text("x.api_token=hunter2 r0") == "x.api_token=*** r0"


# -- errors that echo what the user typed ---------------------------------------------------------

ECHO_SECRET = "s3cr3t-echo-77"


@pytest.mark.parametrize(
    "args",
    [
        ["data", "prepare", "--size", "tiny", "--data", f"s3://AKIDEXAMPLE:{ECHO_SECRET}@bucket/x"],
        [
            "data",
            "prepare",
            "--size",
            "tiny",
            "--data",
            "s3://bucket/x",
            "--s3-endpoint",
            f"http://127.0.0.1:1/?X-Amz-Signature={ECHO_SECRET}",
        ],
        ["data", f"s3://AKIDEXAMPLE:{ECHO_SECRET}@bucket/x"],  # argparse: "invalid choice: ..."
        ["runs", "--db", f"postgresql://u@127.0.0.1:1/db?password={ECHO_SECRET}"],
        ["runs", "--db", f"postgresql://u:{ECHO_SECRET}@h:notaport/db"],
        ["alert", "--infrastructure", "x", "--github", f"https://u:{ECHO_SECRET}@github.com/o/r"],
    ],
    ids=["s3-user-info", "endpoint-signature", "argparse-choice", "db-query", "db-bad-port", "github-repo"],
)
def test_errors_that_echo_a_url_hide_its_credentials(args: list[str], tmp_path: Path) -> None:
    """The command fails in one line (exit 2, no traceback) without the credential it was given."""
    done = daskbench_cli(*args, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and ECHO_SECRET not in said and "Traceback" not in said, said
    assert "***" in said or "credentials" in said, said


def test_a_presigned_endpoint_is_refused_by_the_session_without_echoing_it(tmp_path: Path) -> None:
    """pytest's usage error for ``--s3-endpoint ...?X-Amz-Signature=`` masks the signature."""
    (tmp_path / "test_bench.py").write_text(BENCH_FILE)
    done = run_pytest(tmp_path, "-m", "benchmark", "-p", "no:benchmark", "--db", f"sqlite:///{tmp_path / 'r.db'}",
                      "--data", "s3://bucket/x", "--s3-endpoint", f"http://h:1/?X-Amz-Signature={ECHO_SECRET}")  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR and ECHO_SECRET not in said, said
    assert "X-Amz-Signature=***" in said and not (tmp_path / "r.db").exists()


class _ClientSeeing:
    """A client whose scheduler and one worker read back ``value`` for every key (the read-back's two calls)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def run_on_scheduler(self, _function: object, keys: list[str]) -> dict[str, str]:
        return dict.fromkeys(keys, self.value)

    def run(self, _function: object, keys: list[str]) -> dict[str, dict[str, str]]:
        return {"tcp://127.0.0.1:1": dict.fromkeys(keys, self.value)}


def test_a_secret_config_value_that_did_not_take_effect_is_named_without_either_value() -> None:
    """The read-back of a swept --config key names the key and where it differs, never the
    credential asked for nor the one the scheduler has."""
    spec = ClusterSpec("local", 1, 1, 2**30, 1.1, scheduler_config=(("distributed.scheduler.api_token", "wanted-1"),))
    with pytest.raises(DaskbenchError) as raised:
        check_config_applied(_ClientSeeing("theirs-2"), spec)  # type: ignore[arg-type]
    assert "distributed.scheduler.api_token" in str(raised.value) and "the scheduler has" in str(raised.value)
    assert "wanted-1" not in str(raised.value) and "theirs-2" not in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "--github needs a token in GITHUB_TOKEN (in Actions: env GITHUB_TOKEN: ${{ github.token }})",
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "GITHUB_TOKEN: ${{github.token}}",
        'token: "${{ secrets.BENCH_TOKEN }}"',
        "export GITHUB_TOKEN=$GITHUB_TOKEN",
        "DB_PASSWORD=${DB_PASSWORD} pytest -m benchmark",
        "set API_KEY=%API_KEY%",
        "--db postgresql://bench@db/results --set token=<your-token>",
        "Author: Jane Doe; authority: the nightly",
        "password=*** (masked already), token=***2",
    ],
)
def test_text_that_only_says_where_a_secret_comes_from_is_never_eaten(text: str) -> None:
    """An Actions expression (``${{ ... }}``, spaces or none), a variable (``$NAME``, ``${NAME}``, ``%NAME%``),
    a ``<placeholder>``, an author and a value masked already are no secrets: byte for byte as given."""
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("password=hunter2", "password=***"),
        ("connection failed: token: ghp_abc123", "connection failed: token: ***"),
        ("x-auth-token=abc", "x-auth-token=***"),
        ("DB_PASSWORD=$ecret", "DB_PASSWORD=***"),
        ("AWS_SECRET_ACCESS_KEY=$AWSKEYabc", "AWS_SECRET_ACCESS_KEY=***"),
        ("GITHUB_TOKEN=${{x", "GITHUB_TOKEN=${{x"),
        ("DB_PASSWORD=hunter2 and GITHUB_TOKEN=${{ secrets.T }}", "DB_PASSWORD=*** and GITHUB_TOKEN=${{ secrets.T }}"),
    ],
)
def test_a_secret_that_looks_like_a_reference_or_stands_alone_is_still_masked(text: str, shown: str) -> None:
    """A bare ``password=`` or ``token:`` (no prefix before the name) and a value that only starts like a
    variable (``$ecret``: lower case; ``$AWSKEYabc``) are masked; an expression's opening is left."""
    assert redact_text(text) == shown


def test_the_token_hint_reads_whole_on_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``daskbench alert --github o/r`` without GITHUB_TOKEN: the one line shows ``${{ github.token }}`` whole."""
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    done = daskbench_cli("alert", "--infrastructure", "x", "--github", "owner/repo")
    assert done.returncode == 2 and "env GITHUB_TOKEN: ${{ github.token }})" in done.stderr, done.stderr
