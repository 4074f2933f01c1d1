"""Hostile text and secrets in one real session reach nothing daskbench prints, stores or posts raw.

One tiny session (1 worker, 1 repeat) runs a benchmark whose parameter and name hold terminal escape
sequences (ESC colour, BEL, an OSC window title), HTML, an ``@mention`` and an issue reference, and
whose second case fails with such a message (and a URL password). It sweeps a credential-looking Dask
config key over two secret values. Then the terminal output, ``show`` (table and JSON), ``export``,
``compare``, the stored run and cases, and the alert (job summary, GitHub issue title and body, sent to
the loopback stand-in) are read for a raw control character, live HTML or mention, or a secret.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daskbench.cli import main
from daskbench.model import Run
from daskbench.store import Store
from daskbench.text import ZERO_WIDTH_SPACE
from testing.github_server import FakeGitHub
from tests.helpers import make_measurement, make_run, run_pytest

#: A parameter value that would colour the terminal, ring its bell, retitle its window, and on
#: GitHub render a tag, notify a user and cross-reference issue 1.
HOSTILE = "red\x1b[31mX\x07\x1b]0;pwned\x07 <img src=x onerror=alert(1)> @octocat #1"
#: Two values swept for a credential-looking key, and a password inside a failing case's message.
SECRETS = ("hunter2-sweep-a", "hunter3-sweep-b")
MESSAGE_SECRET = "pw-in-message-9c1"
KEY = "myteam.api_token"
BENCH = f"""
import dask
import pytest

pytestmark = pytest.mark.benchmark
HOSTILE = {HOSTILE!r}


def _one(x):
    return 1


def _boom(x):
    raise ValueError("bad \\x1b]0;pwned\\x07 <b>x</b> @octocat https://u:{MESSAGE_SECRET}@host/")


def test_hostile(measure):
    assert dask.config.get({KEY!r}) in {SECRETS!r}  # the real value is applied, only its record is masked
    assert measure(lambda: dask.delayed(_one)(1), name="hostile\\x1b[2J", params={{"tag": HOSTILE}}) == 1


def test_boom(measure):
    measure(lambda: dask.delayed(_boom)(1), name="boom", params={{"tag": HOSTILE}})
"""
RAW = ("\x1b", "\x07")


@dataclasses.dataclass
class Session:
    """The session's output, its store, its run and a planted earlier run of the same cases."""

    output: str
    db: str
    run: Run
    earlier: Run
    folder: Path


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """The tiny session, and a planted earlier run where every case passed (so ``boom`` is newly failing)."""
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "test_hostile.py").write_text(BENCH)
    db = f"sqlite:///{folder / 'r.db'}"
    ran = run_pytest(folder, "-m", "benchmark", "-p", "no:benchmark", "--workers", "1", "--saturation", "1.1",
                     "--repeat", "1", "--size", "tiny", "--db", db, "--config", f"{KEY}={','.join(SECRETS)}",
                     env={"DASK_MYTEAM__API_TOKEN": "placeholder"})  # fmt: skip
    output = ran.stdout + ran.stderr
    assert ran.returncode == pytest.ExitCode.TESTS_FAILED and "2 failed, 2 passed" in output, output[-3000:]
    store = Store(db)
    (run,) = store.runs()
    started = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    earlier = make_run(started_at=started, host=dict(run.host), versions=dict(run.versions), dask_config={})
    store.add_run(earlier)
    for m in store.measurements([run.run_id]):
        store.add_measurement(make_measurement(earlier, store.cases()[m.fingerprint], runtime_s=m.runtime_s or 0.1))
    store.close()
    yield Session(output, db, run, earlier, folder)


def _inert(markdown: str) -> bool:
    """No raw control character, live mention or secret anywhere, and no tag outside code spans (where
    Markdown shows a tag as the text it is)."""
    prose = re.sub(r"(`+).*?\1", "", markdown, flags=re.DOTALL)  # a code span may wrap to the next line
    found = [part for part in (*RAW, "@octocat", *SECRETS, MESSAGE_SECRET) if part in markdown]
    return not found and not [tag for tag in ("<img", "<b>", "<script") if tag in prose]


def test_terminal_output_shows_hostile_text_escaped_and_secrets_masked(session: Session) -> None:
    """Header, test ids, progress lines and failures: ESC/BEL shown as ``\\x1b``/``\\x07``, the swept
    values as ``***1``/``***2`` (the cases stay apart), the message's URL password as ``***``."""
    out = session.output
    ours = "\n".join(line for line in out.splitlines() if line.startswith(("daskbench", "failed:", "    ")))
    assert not [raw for raw in RAW if raw in out] and not [s for s in SECRETS if s in out]
    assert MESSAGE_SECRET not in ours  # (Dask's own worker log of the exception, captured by pytest, is Dask's)
    assert f"{KEY}=***1,***2" in out  # the header
    assert f"test_boom[sat=1.1-workers=1-{KEY}=***1]" in out and f"test_boom[sat=1.1-workers=1-{KEY}=***2]" in out
    assert "daskbench: hostile\\x1b[2J tag=red\\x1b[31mX\\x07\\x1b]0;pwned\\x07" in out  # the progress line
    assert "failed: ValueError: bad \\x1b]0;pwned\\x07" in out and "https://u:***@host/" in out


def test_the_store_keeps_no_secret_and_the_masked_values_as_case_identity(session: Session) -> None:
    """The store's bytes hold neither swept value nor the message's password; each case's cluster
    config holds its masked stand-in, so the two settings are two cases; the run config masks the key."""
    stored = b"".join(path.read_bytes() for path in session.folder.glob("r.db*")).decode("latin-1")
    assert not [secret for secret in (*SECRETS, MESSAGE_SECRET) if secret in stored]
    store = Store(session.db, create=False)
    cases = store.cases({m.fingerprint for m in store.measurements([session.run.run_id])})
    assert sorted({case.cluster.config[KEY] for case in cases.values()}) == ["***1", "***2"]
    assert len(cases) == 4 and session.run.dask_config[KEY] == "***"


def test_show_table_and_json_and_export_hold_no_raw_control_character_or_secret(
    session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` escapes the case label (``\\x1b``); its JSON and ``export`` escape it as JSON does."""
    for args in (["show", session.run.run_id], ["show", session.run.run_id, "--format", "json"], ["export"]):
        assert main([*args, "--db", session.db]) == 0
        out = capsys.readouterr().out
        assert not [raw for raw in RAW if raw in out] and not [s for s in SECRETS if s in out], args
    main(["show", session.run.run_id, "--db", session.db])
    assert "hostile\\x1b[2J[tag=red\\x1b[31mX\\x07" in capsys.readouterr().out
    main(["show", session.run.run_id, "--format", "json", "--db", session.db])
    assert json.loads(capsys.readouterr().out)["measurements"][0]["params"]["tag"] == HOSTILE


def test_compare_escapes_case_labels_and_failure_notes(session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """The compare table names the hostile cases and the newly failing one's message, escaped."""
    code = main(["compare", "--candidate", session.run.run_id, "--baseline", session.earlier.run_id,
                 "--db", session.db, "--all"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1 and "newly-failing" in out, out
    assert not [raw for raw in RAW if raw in out] and not [s for s in SECRETS if s in out]
    assert "boom[tag=red\\x1b[31mX\\x07" in out and "bad \\x1b]0;pwned\\x07" in out


def test_alert_markdown_and_issues_render_hostile_text_inert(
    session: Session, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job summary, the issue title and body hold no raw control character, tag or live mention:
    the label is a code span, the failure note escaped prose (``&lt;b&gt;``, ``@``+zero-width space),
    the title plain text; the issue is found again by its key, not by a look-alike in the label."""
    summary = tmp_path / "summary.md"
    args = ["alert", "--candidate", session.run.run_id, "--baseline", session.earlier.run_id,
            "--github", "owner/repo", "-o", str(summary), "--db", session.db]  # fmt: skip
    assert main(args) == 1
    out = capsys.readouterr().out
    bodies = [call["body"]["body"] for call in github.calls if call["body"] and "body" in call["body"]]
    titles = [issue["title"] for issue in github.issues.values()]
    for where, text in {"summary": summary.read_text(), "stdout": out, "bodies": "".join(bodies)}.items():
        assert _inert(text), where
    assert len(bodies) == len(titles) == 2 and "&lt;b&gt;x&lt;/b&gt;" in bodies[0]
    for title in titles:  # plain text: GitHub shows a title's tags as text, but acts on mentions and references
        assert not [raw for raw in (*RAW, "@octocat", "#1") if raw in title] and title.startswith("Regression: boom[")
    assert f"@{ZERO_WIDTH_SPACE}octocat" in summary.read_text() and "&lt;b&gt;x&lt;/b&gt;" in summary.read_text()
    assert f"#{ZERO_WIDTH_SPACE}1" in titles[0] and "- `boom[tag=red\\x1b[31mX" in summary.read_text()
    assert main(args) == 1  # the same cases again: a comment on each issue, none opened
    assert len(github.issues) == 2 and sorted(github.comments) == [1, 2]


def test_infrastructure_reason_is_redacted_and_inert_in_markdown(
    github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``alert --infrastructure REASON``: the reason's URL password is masked, its HTML and mention inert."""
    summary = tmp_path / "summary.md"
    reason = f"store at postgresql://u:{MESSAGE_SECRET}@db/x unreachable <script>x</script> @octocat \x1b[31m"
    assert main(["alert", "--infrastructure", reason, "--github", "owner/repo", "-o", str(summary)]) == 0
    body = github.issues[1]["body"]
    for text in (body, summary.read_text(), capsys.readouterr().out):
        assert _inert(text) and f"postgresql://u:\\*\\*\\*@{ZERO_WIDTH_SPACE}db/x" in text
