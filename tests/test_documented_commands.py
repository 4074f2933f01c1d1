"""Every shell command README.md and docs/*.md show runs as written (issue 32).

The commands are collected from the pages, never listed here: each line of a ```bash block, and each inline
command (`daskbench gc`) in a table row. A block's lines run in order, in one workspace of their own (a git
checkout of this working tree's files, with a store of stand-in runs at the default
``results/daskbench.db``, the venv these tests run in as ``.venv`` and first on PATH, a HOME with the
``~/venvs/...`` pythons and the ``~/src/dask`` checkout the docs name, the GitHub stand-in and a moto S3
server on the port the docs name), each through ``bash -c`` exactly as written: same words, same order, same ``--``. Only placeholders
are filled in (``<run-id>``, ``RUN``, ``1a2b3c4d``: a stored run; ``<group>``: a stored A/B group) and
optional ``[...]`` parts dropped; ``ci/setup`` stands for itself (it built the venv the tests run in).

A command that measures (pytest sessions, ``ab``, ``pr``, ``bisect``, ``confirm``, ``calibrate``, ``env``,
``measure/power``...) runs through its argument parsing to its first progress line (the session's
``daskbench:`` header, a ``bisect: ...`` line), then gets Ctrl-C; every other command runs to its end and
exits 0 with no line wider than 120 columns. A command that cannot run here is marked in its page by a
comment on a line of its own before the block or table row, saying why:
``<!-- not run here: `PREFIX` WHY -->`` (PREFIX: how the command begins).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from daskbench import provenance
from daskbench.cli import build_parser
from daskbench.judge import confirmed
from daskbench.model import Case, Run
from daskbench.store import Store
from daskbench.text import WIDTH
from testing.github_server import FakeGitHub, serve
from testing.standin import standin_project
from tests.helpers import GITHUB_TEST_TOKEN, add_results, git, machine_lock, make_case

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```(?:bash|sh|shell)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
MARKER = re.compile(r"<!--\s*not run here:\s*`([^`]+)`\s*(.+?)\s*-->")
#: An inline command in a table row: `daskbench gc`, `pytest -m benchmark`, `measure/power`.
TABLE_COMMAND = re.compile(r"`((?:daskbench [a-z]|pytest |(?:ci|measure|tools)/[a-z])[^`]*)`")
#: Commands that measure: run to their first progress line, then stopped with Ctrl-C.
LONG = re.compile(
    r"(?:^|[\s;&|(])(?:\S*pytest(?:\s|$)|(?:python -m )?daskbench (?:ab|pr|bisect|confirm|calibrate|env|data)\b"
    r"|measure/(?:power|right-size|round-noise|collector-overhead|verdict-cost|bisect-under-load)\b)"
)
#: A progress line: the session's header (``daskbench: cluster=local ...``, after collection: its arguments were
#: taken) or a measuring command's own ``ab: ...``, ``env: building ...`` line (not pytest's ``rootdir: ...``).
PROGRESS = re.compile(r"^(?:daskbench: \w+=|(?:ab|pr|bisect|confirm|calibrate|env)(?: [^:]*)?: \S)")
#: Placeholders for a stored run: one in a line is the newer run; of two (--good, --bad) the first is the older.
RUN_PLACEHOLDER = re.compile(r"<run-id>|<run>|<name-or-run>|\bRUN\b|\b1a2b3c4d\b|\b5e6f7a8b\b|\b4b77c075\b")
OPTIONAL = re.compile(r"\s\[[^\[\]]*\](?=\s|$)")
#: ``ci/setup`` built the venv these tests run in (it is idempotent): the line runs on from there.
SETUP = re.compile(r"\bci/setup(?: --test)?(?=\s*&&)")
GROUP = "ab-docs-1"
SIDE_PYTHONS = ("venvs/dask-old/bin/python", "venvs/dask-new/bin/python")
#: How long a measuring command may take to its first progress line, and to stop after Ctrl-C.
FIRST_LINE_WITHIN, STOPS_WITHIN = 240.0, 60.0


@dataclass(frozen=True)
class Block:
    """The commands of one ```bash block (or one table row), in order, and the ones marked not run here."""

    page: str
    line: int
    commands: tuple[str, ...]
    not_run: tuple[tuple[str, str], ...]  # (prefix, why)

    def skipped(self, command: str) -> str | None:
        return next((why for prefix, why in self.not_run if command.startswith(prefix)), None)


def _markers_before(lines: list[str], index: int) -> tuple[tuple[str, str], ...]:
    """The not-run markers on the comment lines right above line ``index``."""
    found = []
    while index > 0 and lines[index - 1].strip().startswith("<!--"):
        index -= 1
        found += MARKER.findall(lines[index])
    return tuple(found)


def _joined(lines: list[str]) -> list[str]:
    """The block's lines stripped, a line ending in a backslash joined to the next as the shell joins them."""
    found, pending = [], ""
    for line in lines:
        whole = f"{pending} {line.strip()}".strip() if pending else line.strip()
        if whole.endswith("\\"):
            pending = whole[:-1].rstrip()
            continue
        pending = ""
        found.append(whole)
    return [*found, pending] if pending else found


def documented_blocks() -> list[Block]:
    """Every ```bash block and every table row with an inline command, of every page."""
    blocks = []
    for page in PAGES:
        text = page.read_text()
        lines = text.splitlines()
        for match in FENCE.finditer(text):
            start = text.count("\n", 0, match.start())
            commands = tuple(line for line in _joined(match[1].splitlines()) if line and line[0] != "#")
            blocks.append(Block(page.name, start + 1, commands, _markers_before(lines, start)))
        for number, line in enumerate(lines):
            if line.startswith("|"):
                commands = tuple(TABLE_COMMAND.findall(line))
                if commands:
                    blocks.append(Block(page.name, number + 1, commands, _markers_before(lines, number)))
    return blocks


BLOCKS = documented_blocks()


def test_the_collection_finds_the_pages_commands_and_their_markers() -> None:
    """Not empty, every page with a bash block is in it, and each marker names a command that is there."""
    pages = {block.page for block in BLOCKS}
    assert {"README.md", "pull-requests.md", "bisect.md", "comparing.md", "reliability.md"} <= pages
    assert sum(len(block.commands) for block in BLOCKS) > 60
    for block in BLOCKS:
        for prefix, why in block.not_run:
            assert any(command.startswith(prefix) for command in block.commands), (block.page, block.line, prefix)
            assert len(why) > 15, f"{block.page}:{block.line}: say why {prefix!r} cannot run here"


# -- the workspace -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workspace:
    folder: Path
    env: dict[str, str]
    old: Run
    new: Run


def _stand_in_store(db: str) -> tuple[Run, Run]:
    """Two finished runs of this machine (dask 2026.6.0, then this environment's versions) measuring the same
    ocean and word-count cases, the older one baseline ``main``; an A/B group of two rounds and a confirmation
    of the newer run."""
    store = Store(db)
    here = provenance.versions()
    older = {**here, "dask": "2026.6.0", "distributed": "2026.6.0"}
    cases = [make_case(workload, saturation=saturation) for workload in ("ocean_anomaly", "wordcount")
             for saturation in (1.1, float("inf"))]  # fmt: skip
    runs = []
    for index, versions in enumerate((older, here)):
        run = Run(
            run_id=f"{'0a1b2c3d' if index == 0 else '9e8f7a6b'}-0000-4000-8000-00000000000{index}",
            label=("first", "second")[index],
            started_at=f"2026-11-2{index}T10:00:00+00:00",
            ended_at=f"2026-11-2{index}T10:30:00+00:00",
            versions=versions,
            host=provenance.host(),
        )
        store.add_run(run)
        for case in cases:
            add_results(store, run, case, 2.0)
        runs.append(run)
    store.set_baseline("main", [runs[0].run_id])  # as README's "Then:" sets it (options.md: pytest --compare main)
    for number in range(2):
        for offset, side in enumerate("AB"):
            tags = {"ab_group": GROUP, "ab_side": side, "ab_round": str(number)}
            _side_run(store, f"{GROUP}-{side}{number}", f"2026-11-22T10:0{2 * number + offset}", tags, cases[0])
    group = f"confirm-{runs[1].run_id[:8]}"  # what `daskbench confirm --candidate NEW` leaves, for the alert after it
    pins = (("dask", older["dask"]),), (("dask", here.get("dask", "?")),)
    for offset, side in enumerate("AB"):
        tags = {"ab_group": group, "ab_side": side, "ab_round": "0", "ab_mode": "lockstep", "ab_max_rounds": "3",
                **confirmed.tags(runs[1].run_id, runs[0].run_id, *pins, {})}  # fmt: skip
        _side_run(store, f"{group}-{side}0", f"2026-11-23T10:0{offset}", tags, cases[0])
    return runs[0], runs[1]


def _side_run(store: Store, name: str, minute: str, tags: dict[str, str], case: Case) -> None:
    """One finished side of an A/B group, started at ``minute`` (``2026-11-22T10:01``), measuring ``case``."""
    run = Run(run_id=name, label=name, started_at=f"{minute}:00+00:00", ended_at=f"{minute}:30+00:00",
              host=provenance.host(), tags=tags)  # fmt: skip
    store.add_run(run)
    add_results(store, run, case, 2.0)


def _package_checkout(folder: Path) -> None:
    """``~/src/dask`` for ``bisect --repo``: a git checkout of the stand-in package, tagged ``v2026.6.0``, with
    two commits after the tag on ``main``."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    for number, seconds in enumerate((0.1, 0.1, 0.3)):
        standin_project(folder, f"2026.6.{number}", seconds)
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", f"release {number}")
        if number == 0:
            git(folder, "tag", "v2026.6.0")


def _side_pythons(home: Path) -> None:
    """``~/venvs/dask-old/bin/python`` and ``~/venvs/dask-new/bin/python``: this venv's python, by wrappers."""
    for relative in SIDE_PYTHONS:
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        path.chmod(0o755)


@pytest.fixture(scope="module")
def github_api() -> Iterator[str]:
    server = serve(FakeGitHub())
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def s3_on_5555() -> Iterator[None]:
    """A moto S3 server on the port options.md names, with its bucket ``bench``: started by the first worker of
    this run (pytest -n) to need it, under a lock; a later one finds the port taken and uses that server."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = None
    with machine_lock(Path(tempfile.gettempdir()) / "daskbench-docs-s3-5555.lock", exclusive=True):
        with socket.socket() as probe:
            free = probe.connect_ex(("127.0.0.1", 5555)) != 0
        if free:  # moto's start() would wait for ever on a port it cannot bind: asked only when it is free
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=5555, verbose=False)
            server.start()
    client = boto3.client("s3", endpoint_url="http://127.0.0.1:5555", region_name="us-east-1",
                          aws_access_key_id="testing-key-id", aws_secret_access_key="testing-secret")  # fmt: skip
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket="bench")
    yield
    if server is not None:
        server.stop()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run, Run]:
    """The workspace every block starts from, made once: the checkout (committed on ``main``, a change on
    ``change``) and the home; each block gets a copy of its own (`workspace`)."""
    root = tmp_path_factory.mktemp("docs-template")
    folder, home = root / "checkout", root / "home"
    folder.mkdir()
    listed = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for name in (name for name in listed if name and (ROOT / name).is_file()):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    (folder / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (folder / "results").mkdir(exist_ok=True)
    old, new = _stand_in_store(f"sqlite:///{folder / 'results' / 'daskbench.db'}")
    with (folder / ".gitignore").open("a") as ignore:
        ignore.write("\nresults/\n.venv\n")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "the checkout")
    git(folder, "checkout", "-q", "-b", "change")
    (folder / "benchmarks" / "NOTE.txt").write_text("a change on the pull request's branch\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "a change")
    _side_pythons(home)
    _package_checkout(home / "src" / "dask")
    return root, old, new


@pytest.fixture
def workspace(tmp_path: Path, template: tuple[Path, Run, Run], github_api: str, s3_on_5555: None) -> Workspace:
    """A copy of the template of its own (links kept as links), its GitHub and S3 shared by the module."""
    root, old, new = template
    for part in ("checkout", "home"):
        shutil.copytree(root / part, tmp_path / part, symlinks=True)
    folder = tmp_path / "checkout"
    shas = {"BASE_SHA": git(folder, "rev-parse", "main"), "HEAD_SHA": git(folder, "rev-parse", "change")}
    return Workspace(folder, _environment(tmp_path / "home", tmp_path / "envs", github_api, shas), old, new)


def _environment(home: Path, env_cache: Path, github_api: str, shas: dict[str, str]) -> dict[str, str]:
    """What the documented commands run with: this interpreter's tools first, the stand-in GitHub and S3,
    a home of their own, and a pull request's variables (``shas``: its base and head)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DASKBENCH_", "PYTEST_"))},
        "HOME": str(home),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": str(WIDTH),
        "DASKBENCH_GITHUB_API": github_api,
        "GITHUB_TOKEN": GITHUB_TEST_TOKEN,
        "DASKBENCH_ENV_CACHE": str(env_cache),
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        **shas,
        "REPOSITORY": "owner/repo",
        "PR_NUMBER": "7",
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


# -- running a command ---------------------------------------------------------------------------


def as_run_here(command: str, space: Workspace) -> str:
    """The command with its placeholders filled in and its optional parts dropped."""
    while OPTIONAL.search(command):
        command = OPTIONAL.sub("", command)
    whole = [m for m in RUN_PLACEHOLDER.finditer(command) if _whole_word(command, m)]
    ids = [space.old.run_id[:8], space.new.run_id[:8]] if len(whole) > 1 else [space.new.run_id[:8]]
    chosen = {m.start(): ids[min(i, len(ids) - 1)] for i, m in enumerate(whole)}
    by_token = {m[0]: chosen[m.start()] for m in reversed(whole)}  # a token's first whole-word run

    def fill(m: re.Match[str]) -> str:  # confirm-RUN: the run the same token named as a word of its own
        return chosen.get(m.start()) or by_token.get(m[0], space.new.run_id[:8])

    command = RUN_PLACEHOLDER.sub(fill, command)
    command = command.replace("<group>", GROUP).replace("<that python>", f"~/{SIDE_PYTHONS[0]}")
    return SETUP.sub("true", command)


def _whole_word(command: str, m: re.Match[str]) -> bool:
    before, after = command[m.start() - 1 : m.start()], command[m.end() : m.end() + 1]
    return before in ("", " ", '"') and after in ("", " ", '"')


@dataclass
class Ran:
    command: str
    code: int | None
    lines: list[str]
    stopped: bool  # stopped with Ctrl-C after its first progress line
    before_stop: int  # how many lines it wrote before that (what the Ctrl-C caused is not its fault)

    def said(self) -> str:
        return f"$ {self.command}\n" + "\n".join(self.lines[-40:])


def run_command(command: str, space: Workspace) -> Ran:
    """Run ``command`` in the workspace; a measuring one only to its first progress line (then Ctrl-C to
    its process group, SIGKILL if it has not ended within `STOPS_WITHIN`)."""
    long = bool(LONG.search(command))
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=space.folder,
        env=space.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    progressed = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if long and PROGRESS.match(line):
                progressed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + (FIRST_LINE_WITHIN if long else 180.0)
    while process.poll() is None and not progressed.is_set() and time.monotonic() < deadline:
        time.sleep(0.1)
    stopped = process.poll() is None
    before_stop = len(lines)
    if stopped:
        _stop(process)
    reader.join(timeout=10)
    return Ran(command, process.returncode, lines, stopped and progressed.is_set(), before_stop)


def _stop(process: subprocess.Popen[str]) -> None:
    """Ctrl-C to the command's process group, as a terminal sends it; SIGKILL to what is left after a while."""
    with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=STOPS_WITHIN)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # what the Ctrl-C left behind in its group
    process.wait(timeout=30)


def check(ran: Ran) -> None:
    """A measuring command reached its first progress line with no error before it, its own lines within 120
    columns; any other command ended with exit 0, no traceback, every line within 120 columns."""
    text = "\n".join(ran.lines[: ran.before_stop] if ran.stopped else ran.lines)
    assert "Traceback" not in text, ran.said()
    if LONG.search(ran.command) and ran.code is not None and not ran.stopped:
        assert ran.code == 0, f"ended before its first progress line, exit {ran.code}:\n{ran.said()}"
        return
    if LONG.search(ran.command):
        assert ran.stopped, f"no progress line within {FIRST_LINE_WITHIN:.0f} s:\n{ran.said()}"
        assert not any(line.startswith(("error:", "ERROR:")) for line in ran.lines), ran.said()
        wide = [line for line in ran.lines if PROGRESS.match(line) and len(line) > WIDTH]  # its own lines
        assert not wide, f"lines wider than {WIDTH} columns:\n" + "\n".join(wide)
        return
    assert ran.code == 0, f"exit {ran.code}:\n{ran.said()}"
    if "--format json" in ran.command:
        return  # for programs: a JSON string is not wrapped
    wide = [line for line in ran.lines if len(line) > WIDTH]
    assert not wide, f"lines wider than {WIDTH} columns:\n" + "\n".join(wide)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page}:{b.line}" for b in BLOCKS])
def test_a_documented_command_runs_as_written(block: Block, workspace: Workspace) -> None:
    """Each command of the block, in order, in one workspace: as written, placeholders filled in."""
    skipped = []
    for command in block.commands:
        why = block.skipped(command)
        if why is not None:
            skipped.append(f"{command} ({why})")
            continue
        check(run_command(as_run_here(command, workspace), workspace))
    if len(skipped) == len(block.commands):
        pytest.skip("; ".join(skipped))


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser: ``daskbench``, ``daskbench baseline``, ``daskbench baseline set``, ..."""
    yield " ".join(("daskbench", *path)), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in dict(action.choices).items():
                yield from _parsers(sub, (*path, name))


def test_every_commands_help_fits_120_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``daskbench ... --help`` of every command and subcommand, in a terminal 120 columns wide."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    found = list(_parsers(build_parser()))
    assert len(found) > 20
    wide = [
        f"{name}: {line}" for name, parser in found for line in parser.format_help().splitlines() if len(line) > WIDTH
    ]
    assert not wide, "\n".join(wide)
