"""Environments from the record (`daskbench env`, `daskbench ab --a-from/--b-from`), with real installs.

A stand-in package, ``standin`` 1.0 and 1.1, is built by pip (``pip wheel``) into a folder of wheels,
the only place these tests install from (``--find-links DIR --no-index``), and a store holds a run
whose record pins ``standin==1.0``. Environments are narrowed to the stand-in (``--only standin
--without-daskbench``): a full one (dask, distributed, numpy, ... and an editable daskbench) takes
about 70 s with pip here, 8 s with uv, too long for a unit test; ``ab --b-from`` is tested up to the
side's interpreter (`resolve_sides`), not through a measured session.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from daskbench import envs
from daskbench.cli import build_parser
from daskbench.cli.ab import resolve_sides
from daskbench.envs import builds, failures, installers, specs
from daskbench.errors import DaskbenchError
from daskbench.store import Store
from daskbench.text import wrap_line
from testing.standin import standin_project, standin_wheel
from testing.wheel import write_wheel
from tests.helpers import daskbench_cli, fill_disk, git, make_run, wait_for

RECORDED = {"python": "3.11.7", "standin": "1.0", "daskbench": "0.1.0"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with standin-1.0 and standin-1.1 wheels, built by ``pip wheel`` (both at once)."""
    root = tmp_path_factory.mktemp("standin")
    builds = [_pip_wheel(root, version) for version in ("1.0", "1.1")]
    for build in builds:
        assert build.wait(timeout=300) == 0, build.stdout.read() if build.stdout else ""
    return root / "wheels"


def _pip_wheel(root: Path, version: str) -> subprocess.Popen[str]:
    source = standin_project(root / f"standin-{version}", version, 0.0)
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "wheels"), str(source)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with run ``good0001`` (standin 1.0 recorded) and ``gone0002`` (standin 1.9: on no index)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'envs.db'}"
    store = Store(url)
    store.add_run(make_run(run_id="good0001-run", versions=RECORDED))
    store.add_run(make_run(run_id="gone0002-run", versions={**RECORDED, "standin": "1.9"}))
    return url


def _env(db: str, wheels: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``daskbench env`` in a fresh process, narrowed to the stand-in, installing only from ``wheels``."""
    flags = ["--only", "standin", "--without-daskbench", "--find-links", str(wheels), "--no-index"]
    return daskbench_cli("env", *args, *flags, "--db", db, "--cache-dir", str(cache), timeout=300)


def _version_in(python: str) -> str:
    code = "import standin; print(standin.VERSION)"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _error_block(stderr: str) -> list[str]:
    """The error's lines: the ``error:`` line and the indented lines that carry it on."""
    lines = stderr.splitlines()
    first = next(index for index, line in enumerate(lines) if line.startswith("error:"))
    rest = itertools.takewhile(lambda line: line.startswith("    "), lines[first + 1 :])
    return [lines[first], *rest]


def test_env_builds_the_recorded_version_prints_only_its_python_then_reuses_it(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """First call: the environment holds standin 1.0, stdout is its interpreter alone, progress is on
    stderr. Second call: the same interpreter, and the marker written at the build is untouched."""
    first = _env(db, wheels, tmp_path, "good0001")
    assert first.returncode == 0, first.stderr
    python = first.stdout.strip()
    assert first.stdout == python + "\n" and Path(python).parent.parent.parent == tmp_path
    assert _version_in(python) == "1.0"
    assert "env: building" in first.stderr and "checked 1 version against run good0001" in first.stderr
    marker = Path(python).parent.parent / envs.MARKER
    built = (marker.stat().st_mtime_ns, json.loads(marker.read_text())["built_at"])
    again = _env(db, wheels, tmp_path, "good0001")
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "env: reusing" in again.stderr and "building" not in again.stderr
    assert (marker.stat().st_mtime_ns, json.loads(marker.read_text())["built_at"]) == built


def test_a_version_the_index_does_not_have_is_one_message_naming_it_and_the_index(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """standin==1.9 is on no index: exit 2, one error message (wrapped between words at 120 columns) naming it
    and where it was looked for, no traceback, and no half-built environment left behind."""
    done = _env(db, wheels, tmp_path, "gone0002")
    assert done.returncode == 2 and done.stdout == ""
    block = _error_block(done.stderr)
    assert all(len(line) <= 120 for line in block) and done.stderr.count("error:") == 1
    said = " ".join(line.strip() for line in block)
    assert said == f"error: standin==1.9 (run gone0002) cannot be had: not on the index (asked --find-links {wheels}); " \
                   "nothing was built"  # fmt: skip
    assert "Traceback" not in done.stderr
    assert not [path for path in tmp_path.iterdir() if path.is_dir()]


def test_the_version_check_catches_an_environment_that_no_longer_holds_the_record(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """standin upgraded to 1.1 inside the cached environment: reusing it fails in one line that names
    the package, both versions and how to rebuild."""
    python = _env(db, wheels, tmp_path, "good0001").stdout.strip()
    upgrade = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index", "--find-links",
               str(wheels), "standin==1.1"]  # fmt: skip
    subprocess.run(upgrade, check=True, capture_output=True)
    done = _env(db, wheels, tmp_path, "good0001")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "does not hold run good0001's versions: standin 1.1 (wanted 1.0)" in line
    assert f"remove {Path(python).parent.parent} to rebuild it" in line


def test_two_builders_of_one_environment_build_it_once(db: str, wheels: Path, tmp_path: Path) -> None:
    """Two `daskbench env` processes at once: one builds, the other waits on the lock and reuses it."""
    flags = ["--only", "standin", "--without-daskbench", "--find-links", str(wheels), "--no-index"]
    command = [sys.executable, "-m", "daskbench", "env", "good0001", *flags, "--db", db, "--cache-dir", str(tmp_path)]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [process.communicate(timeout=300) for process in both]
    assert [process.returncode for process in both] == [0, 0]
    assert outputs[0][0] == outputs[1][0]
    assert sum("env: building" in err for _, err in outputs) == 1
    assert _version_in(outputs[0][0].strip()) == "1.0"


@pytest.mark.skipif(envs.find_uv() is None, reason="uv is neither on PATH nor importable here")
def test_uv_builds_the_recorded_environment_compiled(db: str, wheels: Path, tmp_path: Path) -> None:
    """With --installer uv the environment holds the same recorded version, its modules compiled as pip
    compiles them (PYTHONDONTWRITEBYTECODE would otherwise make every restarted worker compile them)."""
    done = _env(db, wheels, tmp_path, "good0001", "--installer", "uv")
    assert done.returncode == 0, done.stderr
    assert list(Path(done.stdout.strip()).parent.parent.glob("lib/python*/site-packages/standin/__pycache__/*.pyc"))
    assert "with uv" in done.stderr and _version_in(done.stdout.strip()) == "1.0"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["nosuchrun"], "no run 'nosuchrun' in"),
        (["good0001", "--pin", "standin=1.0"], "--pin 'standin=1.0': expected NAME or NAME with version specifiers"),
        (["good0001", "--only", "numpy"], "run good0001 recorded no version of numpy; it recorded standin"),
        (["good0001", "--find-links", "/no/such/wheels"], "--find-links /no/such/wheels: no such folder"),
        (["good0001", "--no-index"], "--no-index leaves no place to install from"),
    ],
)
def test_bad_input_is_one_line_before_anything_is_built(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """An unknown run, a malformed pin, a name the record lacks, a missing wheel folder, an index-less
    install: exit 2 and one line, and the cache folder is never made."""
    cache = tmp_path / "cache"
    done = daskbench_cli("env", *args, "--db", db, "--cache-dir", str(cache), capsys=capsys)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said in done.stderr
    assert not cache.exists()


def test_a_spec_is_keyed_by_its_sorted_versions_and_overrides_replace_the_record() -> None:
    """The key ignores order and where a pin came from; a changed version is another key; ``overrides``
    (a bisection's "the good run's versions but dask X") replace the recorded ones and may add."""
    run = make_run(versions={"python": "3.11.7", "dask": "2026.7.0", "Distributed": "2026.7.0", "daskbench": "0.1"})
    spec = envs.spec_from_run(run, with_daskbench=False)
    assert spec.pins == (("dask", "2026.7.0"), ("distributed", "2026.7.0"))
    same = envs.spec_from_pins({"distributed": "2026.7.0", "dask": "2026.7.0"}, with_daskbench=False)
    assert same.key() == spec.key()
    moved = envs.spec_from_run(run, overrides=envs.parse_pins("dask==2026.8.0,zict==3.0", "--set"),
                               with_daskbench=False)  # fmt: skip
    assert dict(moved.pins) == {"dask": "2026.8.0", "distributed": "2026.7.0", "zict": "3.0"}
    assert moved.key() != spec.key()


def test_this_daskbench_is_installed_the_way_it_is_installed_here() -> None:
    """From the PEP 610 record: an editable checkout stays editable, a VCS install is pinned to its commit,
    an archive is its URL, an index install is its version."""
    editable = {"url": "file:///work/main", "dir_info": {"editable": True}}
    assert envs.requirement_from_record(editable, "0.1.0") == ("-e", "/work/main")
    vcs = {"url": "https://example.org/daskbench.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert envs.requirement_from_record(vcs, "0.1.0") == ("daskbench @ git+https://example.org/daskbench.git@abc123",)
    archive = {"url": "https://example.org/daskbench-0.1.0-py3-none-any.whl", "archive_info": {}}
    assert envs.requirement_from_record(archive, "0.1.0") == ("daskbench @ " + archive["url"],)
    assert envs.requirement_from_record(None, "0.1.0") == ("daskbench==0.1.0",)


def test_versions_match_by_their_meaning_and_a_missing_package_is_a_mismatch() -> None:
    """``2026.07.0`` is ``2026.7.0``; an absent package and another version are each named."""
    spec = envs.spec_from_pins({"dask": "2026.07.0", "numpy": "2.4.6", "zict": "3.0"}, with_daskbench=False)
    found = {"dask": "2026.7.0", "numpy": "2.4.5", "zict": None}
    assert envs.mismatches(spec, found) == ["numpy 2.4.5 (wanted 2.4.6)", "zict missing (wanted 3.0)"]


def test_ab_b_from_runs_side_b_in_the_environment_rebuilt_from_that_run(
    db: str, wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ab --b-from RUN` gives side B the interpreter of RUN's environment (this daskbench left out, to
    keep the install small), tagged with RUN, and the header names it; side A stays this python."""
    monkeypatch.setattr(specs, "daskbench_requirement", lambda: ())
    args = build_parser().parse_args(["ab", "--b-from", "good0001", "--find-links", str(wheels), "--no-index",
                                      "--cache-dir", str(tmp_path), "--db", db])  # fmt: skip
    sides = resolve_sides(args, Store(db, create=False))
    assert sides["A"].python == sys.executable and sides["A"].env_from is None
    assert sides["B"].env_from == "good0001-run" and _version_in(sides["B"].python) == "1.0"
    said = " ".join(capsys.readouterr().err.split())  # the line is wrapped at 120 columns
    assert f"ab: side B runs in the environment of run good0001 (standin 1.0): {sides['B'].python}" in said


def test_ab_refuses_a_side_given_both_a_python_and_a_run(db: str, tmp_path: Path) -> None:
    """``--b-python`` and ``--b-from`` both choose side B's interpreter: one line, nothing built."""
    args = build_parser().parse_args(["ab", "--b-from", "good0001", "--b-python", sys.executable,
                                      "--cache-dir", str(tmp_path / "cache"), "--db", db])  # fmt: skip
    with pytest.raises(DaskbenchError, match="--b-python and --b-from both choose side B's interpreter"):
        resolve_sides(args, Store(db, create=False))
    assert not (tmp_path / "cache").exists()


# -- commits of a git checkout ----------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, list[str]]:
    """A checkout of three commits on main (``one``, ``two``, ``three``: a file's text) and a side branch
    ``side`` off ``one``; the three ids, oldest first."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    ids = []
    for word in ("one", "two", "three"):
        (repo / "sub" / "word.txt").write_text(word)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"write {word}")
        ids.append(git(repo, "rev-parse", "HEAD"))
    git(repo, "branch", "side", ids[0])
    return repo, ids


def test_a_checkout_is_found_from_any_folder_inside_it_and_a_plain_folder_is_one_line(
    checkout: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """``git_checkout`` gives the top folder from a subfolder; a folder outside any checkout, or none, is
    one line naming the flag."""
    repo, _ = checkout
    assert envs.git_checkout(repo / "sub", "--repo") == repo
    (tmp_path / "plain").mkdir()
    with pytest.raises(DaskbenchError, match=r"--repo .*plain: not a git checkout"):
        envs.git_checkout(tmp_path / "plain", "--repo")
    with pytest.raises(DaskbenchError, match=r"--repo .*nowhere: no such folder"):
        envs.git_checkout(tmp_path / "nowhere", "--repo")


def test_refs_resolve_to_full_commits_and_an_unknown_ref_is_one_line(checkout: tuple[Path, list[str]]) -> None:
    """A branch, ``HEAD~2`` and a short id name full commits; an unknown ref is one line naming it."""
    repo, ids = checkout
    assert envs.resolve_commit(repo, "main", "--bad") == ids[2]
    assert envs.resolve_commit(repo, "HEAD~2", "--good") == envs.resolve_commit(repo, ids[0][:8], "--good") == ids[0]
    with pytest.raises(DaskbenchError, match=r"--good 'v9': .* has no such branch, tag or commit"):
        envs.resolve_commit(repo, "v9", "--good")


def test_commits_between_are_oldest_first_with_their_subjects_and_need_good_before_bad(
    checkout: tuple[Path, list[str]],
) -> None:
    """After good up to bad (bad last), each with its subject; good after bad is one line."""
    repo, ids = checkout
    assert envs.commits_between(repo, ids[0], ids[2]) == ids[1:]
    assert envs.commit_subject(repo, ids[1]) == "write two"
    assert envs.commit_subjects(repo, ids[0], ids[2]) == {ids[1]: "write two", ids[2]: "write three"}
    with pytest.raises(DaskbenchError, match=f"commit {ids[2][:12]} is not an ancestor of {ids[0][:12]}"):
        envs.commits_between(repo, ids[2], ids[0])


def test_a_commit_is_exported_once_as_it_was_committed(checkout: tuple[Path, list[str]], tmp_path: Path) -> None:
    """``exported`` holds the commit's files, not the working tree's; a second call reuses the folder (with what
    running it made there: bytecode)."""
    repo, ids = checkout
    (repo / "sub" / "word.txt").write_text("uncommitted")
    tree = envs.exported(repo, ids[1], tmp_path / "cache")
    assert (tree / "sub" / "word.txt").read_text() == "two"
    (tree / "sub" / "__pycache__").mkdir()
    (tree / "sub" / "__pycache__" / "marker").write_text("")
    assert (
        envs.exported(repo, ids[1], tmp_path / "cache") == tree and (tree / "sub" / "__pycache__" / "marker").exists()
    )


def test_an_exported_commit_is_a_checkout_that_describes_itself_with_the_checkouts_tags(
    checkout: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The tree is a git checkout at the commit, with the tags of the checkout (even one made on another
    branch's commit), so ``git describe`` there, what a VCS-versioned build backend asks, says what it says in
    the checkout: the tag and the distance, never a fallback."""
    repo, ids = checkout
    git(repo, "tag", "v1.0", ids[0])
    tree = envs.exported(repo, ids[2], tmp_path / "cache")
    assert git(tree, "rev-parse", "HEAD") == ids[2]
    assert git(tree, "describe", "--tags") == git(repo, "describe", "--tags", ids[2]) == f"v1.0-2-g{ids[2][:7]}"
    assert git(tree, "status", "--porcelain") == ""


SCM_PYPROJECT = """[build-system]
requires = ["setuptools>=64", "setuptools_scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "scmdemo"
dynamic = ["version"]

[tool.setuptools]
packages = ["scmdemo"]

[tool.setuptools_scm]
"""


def test_a_commit_of_a_setuptools_scm_project_builds_with_the_version_it_has_in_the_checkout(
    tmp_path: Path,
) -> None:
    """A project versioned by setuptools_scm, one commit after its tag ``v1.0``: the exported commit builds as
    ``1.1.dev1+g<commit>`` (what setuptools_scm says in the checkout), where a ``git archive`` tree had no
    version to give."""
    repo = tmp_path / "scmdemo"
    (repo / "scmdemo").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(SCM_PYPROJECT)
    (repo / "scmdemo" / "__init__.py").write_text("")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    git(repo, "tag", "v1.0")
    (repo / "scmdemo" / "__init__.py").write_text("WORD = 'two'\n")
    git(repo, "commit", "-q", "-am", "second")
    commit = git(repo, "rev-parse", "HEAD")
    tree = envs.exported(repo, commit, tmp_path / "cache")
    wheels = tmp_path / "wheels"
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(tree)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (path.name for path in wheels.iterdir())
    assert wheel.startswith("scmdemo-1.1.dev1+g") and commit[:7] in wheel, wheel


def test_a_source_install_with_uv_tries_its_cache_alone_first() -> None:
    """``offline`` puts ``--offline`` right after ``install``, the rest unchanged."""
    command = ["uv", "pip", "install", "--python", "/env/bin/python", "--no-deps", "/src/tree"]
    assert envs.offline(command) == ["uv", "pip", "install", "--offline", "--python", "/env/bin/python",
                                     "--no-deps", "/src/tree"]  # fmt: skip


def test_an_installer_step_that_outlasts_its_time_is_stopped_and_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that never ends (an index that stopped answering) is stopped after ``STEP_TIMEOUT_S``: one
    line naming the step, the source and the log, which keeps what the step printed."""
    monkeypatch.setattr(builds, "STEP_TIMEOUT_S", 1)
    log = tmp_path / "build.log"
    spec = envs.spec_from_pins({"standin": "1.0"}, with_daskbench=False)
    hangs = [sys.executable, "-c", "import time; print('resolving', flush=True); time.sleep(30)"]
    with pytest.raises(DaskbenchError) as raised:
        builds._run(installers.Build(spec, envs.Index(), envs.Installer("uv", ("uv",)), log), hangs, "w", "install")
    assert str(raised.value).count("\n") == 0
    assert "uv did not install for the version set within 1 s" in str(raised.value) and str(log) in str(raised.value)
    assert "resolving" in log.read_text() and "(stopped after 1 s)" in log.read_text()
    assert not builds._succeeds(hangs, log)


def test_a_source_tree_that_does_not_build_is_said_within_120_columns(tmp_path: Path) -> None:
    """uv refusing a tree (its build backend does not exist) is one error, wrapped between words at 120 columns
    (`InstallFailed.wrap`): the installer's reason (without its own ``error:``) and its log's path."""
    tree = tmp_path / "broken"
    tree.mkdir()
    (tree / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "no_such_backend"\n\n'
                                         '[project]\nname = "broken"\nversion = "1"\n')  # fmt: skip
    said: list[str] = []
    for cache in (tmp_path / "c", tmp_path / ("a-cache-folder-with-a-long-name" * 2)):
        spec = envs.spec_from_pins({}, with_daskbench=False, source="head 0123456789", sources=(str(tree),))
        with pytest.raises(envs.InstallFailed) as raised:
            envs.build(spec, envs.BuildOptions(cache), inherit=True, say=said.append)
        line = f"error: {raised.value}"
        assert raised.value.wrap and all(len(part) <= 120 for part in wrap_line(line)), line
        assert line.startswith("error: uv could not install for head 0123456789: ") and "error: error" not in line
        assert "(uv's output: " in line
    log = next(line for line in said if line.startswith("env: building")).split("(its log: ")[1].rstrip(")")
    assert "no_such_backend" in Path(log).read_text() and line.endswith("(uv's output: the log named above)")


# -- faults: pins that cannot be resolved -----------------------------------------------------------


@pytest.fixture(scope="module")
def conflicting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of wheels: standin 1.0, ``alpha`` 1.0 (which needs ``beta>=2``) and ``beta`` 1.0 alone."""
    folder = tmp_path_factory.mktemp("conflicting")
    standin_wheel(folder, "1.0", 0.0)
    write_wheel(folder, "alpha", "1.0", {"alpha.py": "VERSION = '1.0'\n"}, requires=["beta>=2"])
    write_wheel(folder, "beta", "1.0", {"beta.py": "VERSION = '1.0'\n"})
    return folder


@pytest.mark.skipif(envs.find_uv() is None, reason="uv is neither on PATH nor importable here")
@pytest.mark.parametrize(
    ("pins", "named", "reason"),
    [
        (["dask==1999.99.0"], "dask==1999.99.0", "Because dask was not found in the provided package locations and "
         "you require dask==1999.99.0"),
        (["no-such-package==1.0"], "no-such-package==1.0", "Because no-such-package was not found"),
        (["alpha==1.0", "beta<2"], "alpha==1.0, beta<2", "Because all versions of alpha depend on beta>=2"),
    ],
    ids=["a-version-nowhere", "an-unknown-package", "pins-that-conflict"],
)  # fmt: skip
def test_a_pin_that_cannot_resolve_names_the_pins_and_uvs_reason_within_120_columns_with_the_log(
    db: str, conflicting: Path, tmp_path: Path, pins: list[str], named: str, reason: str
) -> None:
    """``--pin`` that no resolution satisfies (issue 45, item 4): the error named neither the pin nor why (``No
    solution found when resolving dependencies``). Now one message, wrapped between words at 120 columns: the
    pins involved, uv's own reason (its ``Because ...``), and the log holding uv's whole output; nothing built."""
    asked = [arg for pin in pins for arg in ("--pin", pin)]
    done = _env(db, conflicting, tmp_path, "good0001", "--installer", "uv", *asked)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    block = _error_block(done.stderr)
    assert all(len(line) <= 120 for line in block), block
    said = " ".join(line.strip() for line in block)
    assert said.startswith(f"error: uv could not install {named} for run good0001: {reason}"), said
    assert "No solution found" not in said
    log = next(tmp_path.glob("*.log"))
    assert said.endswith(f"(uv's output: {log})") and reason.split()[-1] in log.read_text()
    assert not [path for path in tmp_path.iterdir() if path.is_dir()]


@pytest.mark.parametrize(
    "output",
    [
        "error: No solution found when resolving dependencies\n  cause: Because all versions of alpha depend on "
        "beta>=2 and you require alpha==1.0, we can conclude that you require beta>=2.\n         And because you "
        "require beta<2, we can conclude that your requirements are unsatisfiable.\n\n  hint: beta was pinned\n",
        "  × No solution found when resolving dependencies:\n  ╰─▶ Because all versions of alpha depend on beta>=2 and "
        "you require alpha==1.0, we can conclude that you require beta>=2.\n      And because you require beta<2, we "
        "can conclude that your requirements are unsatisfiable.\n",
    ],
    ids=["piped", "on-a-terminal"],
)
def test_uvs_reason_is_its_because_sentences_whether_piped_or_drawn(output: str) -> None:
    """uv's reason, piped (``cause: Because ...``) or drawn for a terminal (``╰─▶ Because ...``), is its sentences
    joined without its hints; the requirements it names are the spec's pins and extra requirements it mentions."""
    from daskbench.envs import output as envs_output

    said = envs_output.reason(output)
    assert said == ("Because all versions of alpha depend on beta>=2 and you require alpha==1.0, we can conclude that "
                    "you require beta>=2. And because you require beta<2, we can conclude that your requirements are "
                    "unsatisfiable.")  # fmt: skip
    spec = envs.spec_from_pins({"standin": "1.0", "alpha": "1.0"}, with_daskbench=False)
    assert failures.involved(said, replace(spec, extra=("beta<2", "numpy<2"))) == ["alpha==1.0", "beta<2"]
    assert envs_output.reason("ERROR: No matching distribution found for dask==1999.99.0\n") == (
        "ERROR: No matching distribution found for dask==1999.99.0"
    )


# -- faults: a broken environment, a cache that cannot be written ------------------------------


def _one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a failed command, checked to come without a traceback."""
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return line


def test_an_environment_whose_interpreter_was_deleted_is_rebuilt_and_named_with_its_path(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """Its built marker still there, its python gone: the next call says which interpreter could not run,
    rebuilds the environment and prints the same, working, interpreter (no FileNotFoundError)."""
    python = Path(_env(db, wheels, tmp_path, "good0001").stdout.strip())
    python.unlink()
    again = _env(db, wheels, tmp_path, "good0001")
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    said = " ".join(again.stderr.split())  # progress lines wrap at 120 columns
    assert f"env: the interpreter {python} cannot run (No such file or directory); rebuilding it" in said
    assert "env: building" in said and again.stdout.strip() == str(python)
    assert _version_in(str(python)) == "1.0"


def test_an_environment_whose_interpreter_no_longer_starts_is_rebuilt_with_its_first_error_said(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """Its base python removed (the interpreter starts and dies at once, saying why): the error's line is
    said with the interpreter's path, and the environment is rebuilt."""
    python = Path(_env(db, wheels, tmp_path, "good0001").stdout.strip())
    python.unlink()
    python.write_text("#!/bin/sh\necho 'error: libpython3.so: cannot open shared object file' >&2\nexit 127\n")
    python.chmod(0o755)
    again = _env(db, wheels, tmp_path, "good0001")
    assert again.returncode == 0, again.stderr
    said = " ".join(again.stderr.split())
    assert f"the interpreter {python} could not report its versions: error: libpython3.so" in said
    assert "rebuilding it" in said and _version_in(again.stdout.strip()) == "1.0"


def test_a_read_only_cache_chosen_by_the_variable_is_named_by_the_variable(
    db: str, wheels: Path, read_only_mount: tuple[Path, Path]
) -> None:
    """DASKBENCH_ENV_CACHE on a read-only mount: one line that names DASKBENCH_ENV_CACHE and the cause,
    never --cache-dir, a flag the user did not give."""
    _, view = read_only_mount
    flags = ["--only", "standin", "--without-daskbench", "--find-links", str(wheels), "--no-index"]
    done = daskbench_cli("env", "good0001", *flags, "--db", db, env={envs.CACHE_ENV: str(view / "envs")})
    line = _one_error(done)
    assert line.startswith(f"error: DASKBENCH_ENV_CACHE {view / 'envs'}: cannot write in {view} (Read-only file")
    assert "--cache-dir" not in line


def test_a_cache_disk_full_before_the_build_is_one_line_and_leaves_nothing_half_built(
    db: str, wheels: Path, tmpfs: Path
) -> None:
    """The cache's disk has no byte left (a real tmpfs, filled): one line naming the full disk, and no
    environment folder a later call could take for built."""
    fill_disk(tmpfs)
    line = _one_error(_env(db, wheels, tmpfs, "good0001"))
    assert "No space left on device" in line, line
    assert not [path for path in tmpfs.iterdir() if path.is_dir()]


def _big_wheel(folder: Path) -> Path:
    """A folder holding a standin 1.0 wheel of 4 MB (random text, no compression saves it): more than `tmpfs` holds."""
    folder.mkdir(exist_ok=True)
    blob = base64.b64encode(os.urandom(3_000_000)).decode()
    write_wheel(
        folder, "standin", "1.0", {"standin/__init__.py": "VERSION = '1.0'\n", "standin/blob.py": f"B = {blob!r}\n"}
    )
    return folder


def test_a_cache_disk_that_fills_during_the_install_is_said_as_a_full_disk_and_builds_once_there_is_room(
    db: str, tmp_path: Path, tmpfs: Path
) -> None:
    """The disk fills while uv copies the package in (a 2 MiB tmpfs, a 4 MB wheel): one line naming the full disk
    and the fix, as before the build, never uv's "Failed to install" taken for the request's fault (a bisection
    would skip that commit as one that does not build); no half-built folder is left; once the disk has room, the
    next call builds it."""
    wheels = _big_wheel(tmp_path / "big")
    line = _one_error(_env(db, wheels, tmpfs, "good0001", "--installer", "uv"))
    assert line == f"error: cannot build in {tmpfs} (No space left on device); free space there or move the cache " \
                   "(--cache-dir)", line  # fmt: skip
    assert not [path for path in tmpfs.iterdir() if path.is_dir()]
    subprocess.run(["mount", "-o", "remount,size=32m", str(tmpfs)], check=True)
    done = _env(db, wheels, tmpfs, "good0001", "--installer", "uv")
    assert done.returncode == 0 and _version_in(done.stdout.strip()) == "1.0", done.stderr


@pytest.mark.parametrize(
    ("said", "cause"),
    [
        ("error: Failed to install: standin-1.0-py3-none-any.whl (standin==1.0)\n  cause: failed to copy file from a "
         "to b: No space left on device (os error 28)", "No space left on device"),
        ("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", "No space left"),
        ("error: failed to create directory `/cache/x`: Read-only file system (os error 30)", "Read-only file system"),
    ],
    ids=["uv-full", "pip-full", "uv-read-only"],
)  # fmt: skip
def test_an_installer_that_failed_for_the_disk_is_a_machine_fault_not_an_install_failure(
    tmp_path: Path, said: str, cause: str
) -> None:
    """The installer's words say the disk (full, read-only): an `OSError` of that cause, which `build` says as the
    cache's fault with its fix and a bisection stops at, never `InstallFailed` (a commit skipped as unbuildable)."""
    spec = envs.spec_from_pins({"standin": "1.0"}, with_daskbench=False)
    fails = [sys.executable, "-c", f"import sys; print({said!r}, file=sys.stderr); sys.exit(2)"]
    job = installers.Build(spec, envs.Index(), envs.Installer("uv", ("uv",)), tmp_path / "build.log")
    with pytest.raises(OSError, match=cause) as raised:
        builds._run(job, fails, "w", "install")
    assert not isinstance(raised.value, DaskbenchError)


#: A ``uv`` that hangs in ``pip install`` after writing a file into the environment (a build half done); anything
#: else goes to the real uv.
HANGING_UV = """#!{python}
import os, sys, time
args = sys.argv[1:]
if args[:2] == ["pip", "install"]:
    folder = os.path.dirname(os.path.dirname(args[args.index("--python") + 1]))
    open(os.path.join(folder, "half-written"), "w").write("a build cut short")
    time.sleep(600)
os.execv(sys.executable, [sys.executable, "-m", "uv", *args])
"""


def _hanging_build(db: str, wheels: Path, cache: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """``daskbench env`` whose install hangs once it has written into the environment's folder (waited for)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "uv").write_text(HANGING_UV.format(python=sys.executable))
    (folder / "uv").chmod(0o755)
    flags = ["--only", "standin", "--without-daskbench", "--find-links", str(wheels), "--no-index", "--installer", "uv"]
    command = [sys.executable, "-m", "daskbench", "env", "good0001", *flags, "--db", db, "--cache-dir", str(cache)]
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    builder = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PATH": path}
    )
    wait_for(
        lambda: list(cache.glob("*/half-written")) or builder.poll() is not None, "the install half done", within=120
    )
    assert builder.poll() is None, builder.communicate()
    return builder


def test_a_build_killed_mid_install_takes_its_installer_with_it_and_the_next_call_rebuilds_at_once(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """``daskbench env`` SIGKILLed mid-install (the OOM killer, ``kill -9``): its installer ends with it (an orphan
    would go on writing into the folder the next build makes anew), and the next call neither reuses the
    half-written folder nor waits for the dead builder's lock: it builds it again, whole, at once."""
    cache = tmp_path / "cache"
    builder = _hanging_build(db, wheels, cache, tmp_path)
    installer = psutil.Process(builder.pid).children(recursive=True)
    builder.kill()
    builder.communicate(timeout=30)
    wait_for(lambda: not [p for p in installer if p.is_running() and p.status() != psutil.STATUS_ZOMBIE],
             "the installer ended with its builder", within=10)  # fmt: skip
    started = time.monotonic()
    again = _env(db, wheels, cache, "good0001")
    assert again.returncode == 0 and "env: building" in again.stderr and "reusing" not in again.stderr, again.stderr
    assert time.monotonic() - started < 60 and "waiting for it" not in again.stderr
    assert not list(cache.glob("*/half-written")) and _version_in(again.stdout.strip()) == "1.0"


def test_a_builder_that_dies_holding_the_lock_hands_the_build_to_the_one_waiting(
    db: str, wheels: Path, tmp_path: Path
) -> None:
    """Two builders of one environment: the first hangs mid-install holding the lock, the second says it waits for
    it; the first SIGKILLed, the second takes the lock, finds no finished environment and builds it itself."""
    cache = tmp_path / "cache"
    first = _hanging_build(db, wheels, cache, tmp_path)
    said = tmp_path / "second.err"
    flags = ["--only", "standin", "--without-daskbench", "--find-links", str(wheels), "--no-index"]
    command = [sys.executable, "-m", "daskbench", "env", "good0001", *flags, "--db", db, "--cache-dir", str(cache)]
    with said.open("w") as err:
        second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        wait_for(
            lambda: "waiting for it" in said.read_text() or second.poll() is not None, "the second waits", within=120
        )
        first.kill()
        first.communicate(timeout=30)
        out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, said.read_text()
    assert "waiting for it" in said.read_text() and "env: building" in said.read_text()
    assert _version_in(out.strip()) == "1.0" and not list(cache.glob("*/half-written"))


EXPORT = "import sys; from pathlib import Path; from daskbench import envs; " \
         "print(envs.exported(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))"  # fmt: skip


def test_two_processes_exporting_one_commit_at_once_both_get_the_whole_tree_and_leave_no_scratch(
    checkout: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """Two ``pr`` runs of one repository at once share the cache: both export the same commit at the same moment;
    each gets the one whole tree (the second's clone is thrown away, never merged into the first's), and no scratch
    clone is left in the cache."""
    repo, ids = checkout
    cache = tmp_path / "cache"
    command = [sys.executable, "-c", EXPORT, str(repo), ids[1], str(cache)]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [process.communicate(timeout=120) for process in both]
    assert [process.returncode for process in both] == [0, 0], outputs
    (tree,) = {Path(out.strip()) for out, _ in outputs}
    assert (tree / "sub" / "word.txt").read_text() == "two"
    assert [path.name for path in (cache / "checkouts").iterdir()] == [tree.name]


def test_the_scratch_clone_of_an_export_that_was_killed_is_cleared_by_the_next_export(
    checkout: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """An export SIGKILLed mid-clone leaves its scratch clone (``.<name>.<pid>.tmp``: never taken for the tree);
    the next export of that commit clears it (its process gone, untouched for ten minutes), so killed exports do not
    fill the cache; a scratch clone whose process lives, or a young one (another host's, maybe), is left alone."""
    repo, ids = checkout
    cache = tmp_path / "cache"
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed.kill()
    killed.wait()
    name = f"{repo.name}-{ids[1][:16]}"
    folder = cache / "checkouts"
    stale, alive, young = (folder / f".{name}.{pid}.tmp" for pid in (killed.pid, os.getppid(), killed.pid + 100_000))
    for scratch in (stale, alive, young):
        (scratch / "sub").mkdir(parents=True)
        (scratch / "sub" / "word.txt").write_text("half")
        if scratch != young:
            os.utime(scratch, (time.time() - 3600, time.time() - 3600))
    tree = envs.exported(repo, ids[1], cache)
    assert (tree / "sub" / "word.txt").read_text() == "two"
    assert not stale.exists() and alive.exists() and young.exists()


def test_a_commit_exported_into_a_full_cache_is_one_line_and_exported_whole_once_there_is_room(
    checkout: tuple[Path, list[str]], tmpfs: Path
) -> None:
    """A clone of the commit into a full disk: one line naming the disk and the way to move the cache, no partial
    tree left; once the space is freed, the next call exports the whole commit."""
    repo, ids = checkout
    fill_disk(tmpfs)
    with pytest.raises(DaskbenchError, match="No space left on device") as raised:
        envs.exported(repo, ids[1], tmpfs)
    assert "(--cache-dir)" in str(raised.value) and "\n" not in str(raised.value)
    assert [path.name for path in (tmpfs / "checkouts").iterdir()] == []
    (tmpfs / "filler").unlink()
    tree = envs.exported(repo, ids[1], tmpfs)
    assert (tree / "sub" / "word.txt").read_text() == "two"


def test_a_commit_exported_into_a_read_only_cache_names_the_variable_that_chose_it(
    checkout: tuple[Path, list[str]], read_only_mount: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DASKBENCH_ENV_CACHE on a read-only mount: `exported` (bisect's and pr's source trees) names the
    variable and the read-only file system, before git runs."""
    repo, ids = checkout
    _, view = read_only_mount
    monkeypatch.setenv(envs.CACHE_ENV, str(view / "envs"))
    with pytest.raises(DaskbenchError, match=r"^DASKBENCH_ENV_CACHE .*: cannot write in .*\(Read-only file system\)"):
        envs.exported(repo, ids[1])


def test_a_stale_egg_info_in_the_working_folder_does_not_hide_how_daskbench_is_installed(tmp_path: Path) -> None:
    """Python run from a checkout finds the checkout's ``daskbench.egg-info`` (left by a setuptools build)
    before the installed distribution; it holds no install record, and environments then asked the index
    for ``daskbench==0.1.0``. The installed distribution's record is the one used."""
    info = tmp_path / "daskbench.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: daskbench\nVersion: 0.1.0\n")
    code = "from daskbench.envs.specs import daskbench_requirement; print(daskbench_requirement())"
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    there = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert there.stdout == here, (there.stdout, here)
