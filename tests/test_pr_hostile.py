"""`daskbench pr` on a pull request whose benchmark code is hostile (issue 45): it runs with this user's rights,
so what it must not get is kept from it, and what it breaks is said.

A folder of benchmarks in a real git repository (nothing is built: each side's files run as they are, so a
run is a few seconds of rounds): ``main`` sleeps 0.05 s in a dask task; ``hostile`` runs, in its session (the
client) and in its task (a dask worker), code that writes its whole environment to a file and appends to every
GitHub Actions file it can name from there; at import it changes base's exported tree in the environments'
cache (a later comparison measures base from it). ``HOSTILE_MODE`` (its environment passes to the sessions)
picks the rest: ``hang``, its task never returns (``--timeout 2``); ``garbage``, its first task writes garbage
over the store file and its write-ahead log. Two real ``pr`` runs, each shared by several tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daskbench import envs
from daskbench.pr.sides import WITHHELD, withheld, withholding
from daskbench.store import Store
from testing.github_server import FakeGitHub
from tests.helpers import GITHUB_TEST_TOKEN, PULL_NUMBER, git, wait_for

NUMBER = PULL_NUMBER
BASE = """import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def work():
    time.sleep(0.05)
    return 1


def test_work(measure):
    assert measure(dask.delayed(work)(), name="work", params={}) == 1
"""
HOSTILE = """import json
import os
import sys
import time
from pathlib import Path

import dask
import pytest

pytestmark = pytest.mark.benchmark
MODE = os.environ.get("HOSTILE_MODE", "")
OUT = Path(os.environ["HOSTILE_OUT"])
DB = Path(sys.argv[sys.argv.index("--db") + 1].removeprefix("sqlite:///"))


def dump(where):
    (OUT / f"{where}-{os.getpid()}.json").write_text(json.dumps(dict(os.environ)))
    for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"):
        if os.environ.get(name):
            with open(os.environ[name], "a") as out:
                out.write("LD_PRELOAD=/tmp/hostile.so\\n")


def tamper_with_base():
    here = Path.cwd()
    for tree in here.parent.glob(here.name.rsplit("-", 1)[0] + "-*"):
        if tree != here:
            (tree / "benchmarks" / "conftest.py").write_text("import time\\ntime.sleep(1)\\n")
            with open(tree / "benchmarks" / "test_plain.py", "a") as out:
                out.write("\\nSLOWER = True\\n")


def garbage():
    for path in (DB, DB.with_name(DB.name + "-wal")):
        size = path.stat().st_size
        with open(path, "r+b") as out:
            out.write((b"garbage!" * size)[:size])


def work():
    dump("worker")
    if MODE == "garbage":
        garbage()
    while MODE == "hang":
        time.sleep(1)
    time.sleep(0.05)
    return 1


dump("client")
tamper_with_base()


def test_work(measure):
    assert measure(dask.delayed(work)(), name="work", params={}) == 1
"""
#: What a GitHub Actions step has in its environment, secrets and write channels (every value a file or a secret).
ACTIONS = {
    "GITHUB_TOKEN": GITHUB_TEST_TOKEN,
    "GH_TOKEN": "gh-secret-value",
    "ACTIONS_RUNTIME_TOKEN": "runtime-secret-value",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-secret-value",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://oidc.invalid/token",
    "ACTIONS_CACHE_URL": "https://cache.invalid/",
}
CHANNELS = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
SESSION = ["--", "--workers", "1", "--saturation", "inf", "--timeout", "2"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``main``: the plain benchmark; ``hostile``: the hostile one."""
    folder = tmp_path_factory.mktemp("hostile") / "project"
    (folder / "benchmarks").mkdir(parents=True)
    (folder / "benchmarks" / "test_plain.py").write_text(BASE)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "a plain benchmark")
    git(folder, "checkout", "-q", "-b", "hostile")
    (folder / "benchmarks" / "test_plain.py").write_text(HOSTILE)
    git(folder, "commit", "-q", "-am", "a hostile benchmark")
    git(folder, "checkout", "-q", "main")
    return folder


def _pr(repo: Path, mode: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``daskbench pr main hostile`` in a fresh process, ``HOSTILE_MODE=mode``, its dumps in ``out-<mode>``."""
    out = repo.parent / f"out-{mode}"
    out.mkdir()
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DASKBENCH_", "GITHUB_", "ACTIONS_"))}
    flags = ["--cache-dir", str(repo.parent / "cache"), "--db", f"sqlite:///{repo.parent / f'{mode}.db'}",
             "--max-rounds", "3", "--no-report"]  # fmt: skip
    command = [sys.executable, "-m", "daskbench", "pr", "main", "hostile", *flags, *args, *SESSION]
    full = {**kept, **env, "HOSTILE_MODE": mode, "HOSTILE_OUT": str(out)}
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300, env=full)


@pytest.fixture(scope="module")
def hanging(repo: Path, pull_github: tuple[FakeGitHub, str]) -> subprocess.CompletedProcess[str]:
    """``pr --github owner/project --pr 7`` in an Actions-like environment; head's task never returns."""
    channels = {name: str(repo.parent / name.lower()) for name in CHANNELS}
    env = {**ACTIONS, **channels, "DASKBENCH_GITHUB_API": pull_github[1]}
    return _pr(repo, "hang", env, "--github", "owner/project", "--pr", str(NUMBER))


def _dumps(repo: Path, mode: str) -> dict[str, list[dict[str, str]]]:
    """The environments the hostile code wrote, by where it ran (client, worker)."""
    found: dict[str, list[dict[str, str]]] = {}
    for path in sorted((repo.parent / f"out-{mode}").glob("*-*.json")):
        found.setdefault(path.name.split("-")[0], []).append(json.loads(path.read_text()))
    return found


def test_the_measured_code_sees_no_secret_and_no_actions_channel(repo: Path, hanging: subprocess.CompletedProcess[str]) -> None:  # fmt: skip
    """Head's session and its dask worker both ran; neither environment holds any token's value, any
    ``ACTIONS_*`` variable or any write channel's name (so its files stay untouched by it)."""
    dumps = _dumps(repo, "hang")
    assert dumps.get("client") and dumps.get("worker"), hanging.stderr[-3000:]
    for environment in (*dumps["client"], *dumps["worker"]):
        text = json.dumps(environment)
        assert not [value for value in ACTIONS.values() if value in text]
        assert not [name for name in environment if withheld(name)], sorted(environment)
        assert not [name for name in CHANNELS if str(repo.parent / name.lower()) in text]


def test_the_actions_files_hold_only_what_daskbench_wrote(repo: Path, hanging: subprocess.CompletedProcess[str]) -> None:  # fmt: skip
    """Outputs, env, path and state are empty; the job summary holds the comment's Markdown, nothing planted."""
    for name in CHANNELS:
        path = repo.parent / name.lower()
        assert "LD_PRELOAD" not in (path.read_text() if path.exists() else ""), name
    assert (repo.parent / "github_step_summary").read_text() == hanging.stdout + "\n"


def test_a_task_that_never_returns_is_a_timeout_and_head_newly_failing(
    repo: Path, pull_github: tuple[FakeGitHub, str], hanging: subprocess.CompletedProcess[str]
) -> None:
    """--timeout 2 ends the hung task: head's case is newly failing (base passed), exit 1; the comment and the
        status are still set with the token the sessions never had; no process stays in the cache's trees (a
    forkserver may take a moment to see its session gone)."""
    assert hanging.returncode == 1, hanging.stderr[-3000:]
    assert "side B timeout in round 1" in hanging.stderr and "Traceback" not in hanging.stderr
    assert "**newly-failing**" in hanging.stdout
    head = git(repo, "rev-parse", "hostile")
    assert pull_github[0].statuses[head][-1]["state"] == "failure" and pull_github[0].comments[NUMBER] == [
        hanging.stdout
    ]
    wait_for(lambda: not _processes_in(repo.parent), "the sessions' processes to end", within=30)


def _processes_in(folder: Path) -> list[str]:
    """The processes whose working folder is under ``folder``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")).is_relative_to(folder):
                found.append((proc / "cmdline").read_text().replace("\0", " "))
        except OSError:
            continue
    return found


def test_a_base_tree_changed_by_heads_code_is_exported_again(repo: Path, hanging: subprocess.CompletedProcess[str]) -> None:  # fmt: skip
    """Head's code wrote a conftest.py into base's exported tree and edited its benchmark: the next comparison
    says so and measures base as committed."""
    base = git(repo, "rev-parse", "main")
    tree = repo.parent / "cache" / "checkouts" / f"project-{base[:16]}"
    assert (tree / "benchmarks" / "conftest.py").exists(), hanging.stderr[-2000:]
    said: list[str] = []
    again = envs.exported(repo, base, repo.parent / "cache", say=said.append)
    assert again == tree and not (tree / "benchmarks" / "conftest.py").exists()
    assert (tree / "benchmarks" / "test_plain.py").read_text() == BASE
    assert len(said) == 1 and "was changed since it was exported (2 file(s): " in said[0], said
    assert envs.exported(repo, base, repo.parent / "cache", say=said.append) == tree and len(said) == 1


def test_a_store_written_over_mid_run_is_one_line_and_no_verdict(repo: Path) -> None:
    """Head's first task writes garbage over the store and its log: exit 2, one line saying the store was
    damaged while the sides ran, no traceback, nothing said unchanged."""
    done = _pr(repo, "garbage", {})
    assert done.returncode == 2, done.stderr[-3000:]
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "was damaged while base and head were measured" in error[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "unchanged" not in done.stdout + done.stderr


@pytest.mark.parametrize("how", ["deleted", "replaced", "garbage", "truncated"])
def test_a_store_damaged_under_an_open_store_is_named(tmp_path: Path, how: str) -> None:
    """`Store.damage`, what pr asks after measuring: a deleted or replaced file, garbage or an emptied file."""
    path = tmp_path / "s.db"
    store = Store(f"sqlite:///{path}")
    assert store.damage() is None
    if how == "deleted":
        path.unlink()
    elif how == "replaced":
        path.unlink()
        path.write_bytes(b"")
    else:
        size = path.stat().st_size
        for part in (path, path.with_name("s.db-wal")):
            if part.exists():
                part.write_bytes(b"garbage!" * size if how == "garbage" else b"")
    found = store.damage()
    assert found is not None and "\n" not in found
    if how in ("deleted", "replaced"):
        assert "deleted, moved or replaced while in use" in found


@pytest.mark.parametrize("name", sorted(WITHHELD | {"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL"}))
def test_an_installer_started_while_withholding_inherits_no_secret_or_channel(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build backend of a side's project (the pull request's code) runs in the installer `side_python`
    starts under `withholding`: a process started there lacks the variable; it is back afterwards."""
    monkeypatch.setenv(name, "secret-or-file")
    monkeypatch.setenv("KEPT_VARIABLE", "kept")
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    with withholding():
        seen = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout)
    assert name not in seen and "secret-or-file" not in json.dumps(seen) and seen["KEPT_VARIABLE"] == "kept"
    assert os.environ[name] == "secret-or-file"
