"""`daskbench bisect --repo` on a checkout of one of two packages released together (dask and distributed): each
step's environment gets the other at a matching commit (``--other-repo``) or release (`bisect.points.partner`).

Two tiny stand-in checkouts play the pair: ``alpha`` (as dask: its extra ``beta`` pins ``beta == X``) and
``beta`` (as distributed: it requires ``alpha == X``), each tagged at its releases, with commit dates set so the
matching by date is known. No real dask clone: that is `measure/dask-commit-bisect`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest

from daskbench import envs
from daskbench.bisect import points
from daskbench.bisect import search as bisect_search
from daskbench.bisect.plan import Candidate
from daskbench.cli import bisect as bisect_cli
from daskbench.store import Store
from tests.helpers import add_run, daskbench_cli, git

PYPROJECT = """[build-system]
requires = ["flit_core>=3.4"]
build-backend = "flit_core.buildapi"

[project]
name = "{name}"
version = "{version}"
description = "a stand-in of a package released with another, for daskbench's tests"
dependencies = [{dependencies}]

[project.optional-dependencies]
{extras}
"""


def commit(repo: Path, name: str, version: str, date: str, *, needs: str = "", extra: str = "", body: str = "") -> str:
    """Write ``name`` at ``version`` (requiring ``needs``, its extra ``extra``) and commit it at ``date``."""
    (repo / name).mkdir(parents=True, exist_ok=True)
    deps = f'"{needs}"' if needs else ""
    (repo / "pyproject.toml").write_text(PYPROJECT.format(name=name, version=version, dependencies=deps, extras=extra))
    text = f'"""{name}, a stand-in."""\n\n{body}VERSION = "{version}"  # committed at {date}\n'
    (repo / name / "__init__.py").write_text(text)
    git(repo, "add", "-A")
    dated = {**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
    git(repo, "commit", "-q", "-m", f"{name} {version} at {date}", env=dated)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the ``alpha`` and ``beta`` checkouts (and of the environments built from them)."""
    return tmp_path_factory.mktemp("pair")


@pytest.fixture(scope="module")
def pair(root: Path) -> dict[str, list[str]]:
    """``alpha`` and ``beta`` checkouts: releases 1.0 on day 1, work on days 2-4 (alpha's of day 4 does not
    import), releases 2.0 on day 5; beta's commits two hours before alpha's of the same day. Their ids."""
    found: dict[str, list[str]] = {"alpha": [], "beta": []}
    for name in found:
        (root / name).mkdir()
        git(root / name, "init", "-q", "-b", "main")
    for day in range(1, 6):
        release = "1.0" if day < 5 else "2.0"
        broken = "raise ImportError('alpha: broken on day 4')\n" if day == 4 else ""
        found["alpha"].append(commit(root / "alpha", "alpha", release, f"2024-08-0{day}T12:00:00+00:00",
                                     extra=f'beta = ["beta == {release}"]', body=broken))  # fmt: skip
        found["beta"].append(commit(root / "beta", "beta", release, f"2024-08-0{day}T10:00:00+00:00",
                                    needs=f"alpha == {release}"))  # fmt: skip
        if day in (1, 5):
            for name in found:
                git(root / name, "tag", release)
    return found


def _tree(repo: Path, commit: str, root: Path) -> Path:
    return envs.exported(repo, commit, root / "cache")


def _options(root: Path) -> envs.BuildOptions:
    """How ``bisect`` builds here: the default index and installer, a cache of the test's own."""
    return envs.BuildOptions(root / "cache")


def _candidate(commit: str) -> Candidate:
    return Candidate(commit=commit, subject="a step")


def _installed_from(python: Path, name: str) -> str:
    """The commit part of the exported tree's folder ``name`` was installed from (its PEP 610 record)."""
    code = f"from importlib import metadata; print(metadata.distribution({name!r}).read_text('direct_url.json'))"
    record = json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)
    return record["url"].rstrip("/").rsplit("-", 1)[-1]


def test_exact_pins_are_the_packages_a_tree_pins_to_one_release_in_its_dependencies_or_extras(tmp_path: Path) -> None:
    """``==`` in dependencies and extras counts; a range, a wildcard and its own name do not."""
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["flit_core"]\n[project]\nname = "Dask"\n'
        'dependencies = ["toolz >= 0.10", "partd == 1.4.*", "zict == 3.0.0"]\n'
        '[project.optional-dependencies]\ndistributed = ["distributed == 2024.8.0"]\narray = ["dask[array] == 1.0"]\n'
    )
    assert envs.project_name(tmp_path) == "dask"
    assert envs.exact_pins(tmp_path) == {"zict": "3.0.0", "distributed": "2024.8.0"}


def test_a_commit_gets_the_release_its_tree_pins_of_the_other_package(pair: dict[str, list[str]], root: Path) -> None:
    """Without --other-repo, alpha's work commit after 1.0 gets beta 1.0 (its extra's pin), beta's gets alpha 1.0,
    and the releases 2.0 each other's 2.0."""
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        repo = root / name
        for at, release in ((1, "1.0"), (4, "2.0")):
            found = points.partner(repo, pair[name][at], _tree(repo, pair[name][at], root), None)
            assert found.refs == {other: points.Ref(release)} and found.how == "the release the tree pins"


def test_with_the_other_checkout_a_commit_gets_its_last_commit_at_or_before_its_date(
    pair: dict[str, list[str]], root: Path
) -> None:
    """--other-repo: alpha's commit of day N (noon) gets beta's of day N (10:00), not the next day's; beta's of
    day N gets alpha's of day N-1; none earlier: the release the tree pins."""
    alpha, beta = root / "alpha", root / "beta"
    for day in range(5):
        found = points.partner(alpha, pair["alpha"][day], _tree(alpha, pair["alpha"][day], root), ("beta", beta))
        assert found.refs == {"beta": points.Ref("", pair["beta"][day])}
    later = points.partner(beta, pair["beta"][2], _tree(beta, pair["beta"][2], root), ("alpha", alpha))
    assert later.refs == {"alpha": points.Ref("", pair["alpha"][1])}
    first = points.partner(beta, pair["beta"][0], _tree(beta, pair["beta"][0], root), ("alpha", alpha))
    assert first.refs == {"alpha": points.Ref("1.0")}


def test_a_dask_tree_that_pins_nothing_gets_distributed_named_like_the_tag_it_follows(tmp_path: Path) -> None:
    """The fallback for dask and distributed (an old setup.py tree): the other at the release of the followed tag."""
    repo = tmp_path / "dask"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    first = commit(repo, "dask", "0", "2024-08-01T12:00:00+00:00")
    git(repo, "tag", "v2024.8.0")
    (repo / "NOTES").write_text("later\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    later = git(repo, "rev-parse", "HEAD")
    assert first != later
    found = points.partner(repo, later, repo, None)
    assert found.refs == {"distributed": points.Ref("2024.8.0")} and "v2024.8.0" in found.how


def test_each_step_environment_holds_both_packages_and_a_commit_that_does_not_import_is_skipped(
    pair: dict[str, list[str]], root: Path
) -> None:
    """Built from source (overlays, --other-repo): alpha's day-2 commit beside beta's day-2 commit, both versions
    read in the environment; alpha's day-4 commit builds but does not import: `envs.InstallFailed`, which the
    bisection skips."""
    args = argparse.Namespace(inherit=True)
    python_of = bisect_cli._commit_maker(
        args, root / "alpha", pair["alpha"][0], ("beta", root / "beta"), _options(root)
    )
    python = python_of(_candidate(pair["alpha"][1]))
    found = envs.installed_versions(Path(python), ["alpha", "beta"])
    assert found == {"alpha": "1.0", "beta": "1.0"}
    tags = {name: _installed_from(Path(python), name) for name in ("alpha", "beta")}
    assert tags == {"alpha": pair["alpha"][1][:16], "beta": pair["beta"][1][:16]}
    with pytest.raises(envs.InstallFailed, match=r"does not import .*broken on day 4"):
        python_of(_candidate(pair["alpha"][3]))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--other-repo", "{root}/beta", "--good", "HEAD~1", "--bad", "HEAD"], "--other-repo goes with --repo"),
        (["--repo", "{root}/alpha", "--other-repo", "{root}/alpha", "--good", "1.0", "--bad", "2.0"],
         "is a checkout of alpha as --repo is"),
        (["--repo", "{root}/alpha", "--other-repo", "{root}/nowhere", "--good", "1.0", "--bad", "2.0"],
         "--other-repo {root}/nowhere: no such folder"),
        (["--repo", "{root}/plain", "--good", "HEAD~1", "--bad", "HEAD"], "not a package's checkout"),
        (["--repo", "{root}/alpha", "--good", "0.9", "--bad", "2.0"], "--good '0.9': {root}/alpha has no such"),
    ],
)  # fmt: skip
def test_bad_pair_input_is_one_line_before_anything_is_built(
    pair: dict[str, list[str]],
    root: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    said: str,
) -> None:
    """--other-repo without --repo, the same package twice, no such folder, a checkout of no package, an unknown
    ref: exit 2, one line, no environment cache made."""
    plain = root / "plain"
    if not plain.exists():
        plain.mkdir()
        git(plain, "init", "-q", "-b", "main")
        for note in ("one", "two"):
            (plain / "README").write_text(note)
            git(plain, "add", "-A")
            git(plain, "commit", "-q", "-m", note)
    cache = tmp_path / "cache"
    filled = [arg.format(root=root) for arg in args]
    done = daskbench_cli("bisect", *filled, "--cache-dir", str(cache), "--db", f"sqlite:///{tmp_path / 'b.db'}",
                         capsys=capsys)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said.format(root=root) in done.stderr, done.stderr
    assert not cache.exists()


def test_a_continued_bisection_takes_its_other_repo_from_the_store_and_refuses_another_in_one_line(
    pair: dict[str, list[str]], root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bisection of alpha's commits started with --other-repo beta is tagged with it: ``--group`` alone takes
    beta again (each step's partner from it), and another checkout given is one line, nothing built."""
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    run = add_run(store, 0, label="step-0-A")
    store.tag_run(run.run_id, {"bisect": "pairs", "bisect_good": "1.0", "bisect_bad": "2.0",
                               "bisect_repo": str(root / "alpha"), "bisect_other_repo": str(root / "beta")})  # fmt: skip
    assert bisect_search.stored_repo(store, "pairs", bisect_search.OTHER_REPO_TAG) == str(root / "beta")
    args = argparse.Namespace(other_repo=None)
    assert bisect_cli._other_repo(args, root / "alpha", str(root / "beta")) == ("beta", root / "beta")
    elsewhere = root / "beta-copy"
    if not elsewhere.exists():
        git(root, "clone", "-q", str(root / "beta"), str(elsewhere))
    cache = tmp_path / "cache"
    done = daskbench_cli("bisect", "--group", "pairs", "--other-repo", str(elsewhere), "--cache-dir", str(cache),
                         "--db", f"sqlite:///{tmp_path / 'b.db'}", capsys=capsys)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"this bisection ran with --other-repo {root / 'beta'}; continue it with that" in done.stderr
    assert not cache.exists()
