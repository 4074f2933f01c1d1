"""A run records the commit of a package installed from git (its PEP 610 record), and what reads runs uses it.

Real installs: the stand-in of ``ci/nightly --quick`` (``ci.quick.standin``: a git repository with a build
backend in its tree, so a commit installs offline) installed from ``git+file://...@COMMIT`` into an overlay, and
from a local folder that is a clean git checkout; each environment's own interpreter says what it would record.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ci.quick import standin
from daskbench import envs
from daskbench.bisect import plan as bisect_plan
from daskbench.confirm import differing
from daskbench.judge.compare import compare_runs
from daskbench.model import SourceCommit, recorded_commits
from daskbench.store import Store
from daskbench.verdicts import versions_and_commits
from tests.helpers import add_results, add_run, daskbench_cli, make_case, make_run

RECORDED = "import json, sys; from daskbench import provenance; print(json.dumps(provenance.commits(['standin'])))"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The stand-in's repository (two commits) and their ids."""
    folder = tmp_path_factory.mktemp("commits") / "standin"
    return folder, standin.repository(folder, standin.COMMITS[:2])


def _recorded(tmp_path: Path, source: str) -> dict[str, str]:
    """What a run would record in an overlay holding the stand-in installed from ``source``."""
    (tmp_path / "wheels").mkdir(exist_ok=True)
    index = envs.Index(find_links=(str(tmp_path / "wheels"),), no_index=True)
    spec = envs.spec_from_pins({}, with_daskbench=False, source="the stand-in", sources=(source,))
    python = envs.build(spec, envs.BuildOptions(tmp_path / "envs", index), inherit=True, say=lambda _line: None)
    done = subprocess.run([str(python), "-c", RECORDED], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


def test_a_package_installed_from_git_records_its_commit_and_repository(
    tmp_path: Path, repo: tuple[Path, list[str]]
) -> None:
    """``standin @ git+file://REPO@COMMIT``: the tags hold that commit and the repository's URL."""
    folder, commits = repo
    tags = _recorded(tmp_path, standin.requirement(folder, commits[0]))
    assert tags == {"git_commit_standin": commits[0], "git_url_standin": folder.as_uri()}
    assert recorded_commits(tags) == {"standin": SourceCommit("standin", commits[0], folder.as_uri())}


def test_a_package_installed_from_a_clean_checkout_records_its_head(
    tmp_path: Path, repo: tuple[Path, list[str]]
) -> None:
    """Installed from a local folder that is a clean git checkout: its HEAD; an edited one records nothing."""
    folder, commits = repo
    assert _recorded(tmp_path, str(folder)) == {"git_commit_standin": commits[-1], "git_url_standin": folder.as_uri()}
    edited = tmp_path / "edited"
    subprocess.run(["git", "clone", "-q", str(folder), str(edited)], check=True, timeout=60)
    (edited / "standin" / "__init__.py").write_text("VERSION = 'edited'\n")
    assert _recorded(tmp_path, str(edited)) == {}


def _night(store: Store, index: int, commit: str, runtime: float) -> str:
    tags = SourceCommit("standin", commit, "https://github.com/example/standin.git").tags()
    run = add_run(store, index, versions={"standin": "1.0.dev0", "python": "3.11.7"}, tags=tags)
    add_results(store, run, make_case("quick"), runtime)
    return run.run_id


def test_compare_and_show_name_the_commits_that_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two nights of one static version at other commits: compare lists ``standin commit`` among the version
    differences, show prints the commit and repository, and confirm finds a package to rebuild (from git)."""
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    good, bad = _night(store, 0, "a" * 40, 1.0), _night(store, 1, "b" * 40, 1.0)
    comparison = compare_runs(store, candidate=bad, baseline=good)
    assert comparison.version_diff == {"standin commit": ("a" * 12, "b" * 12)}
    shown = daskbench_cli("show", bad, "--db", f"sqlite:///{tmp_path / 'c.db'}", capsys=capsys)
    assert "from git: standin 1.0.dev0 at bbbbbbbbbbbb https://github.com/example/standin.git" in shown.stdout
    pins, tonight = differing(store.run(good), store.run(bad))
    assert pins == (("standin", "1.0.dev0 (git aaaaaaaaaaaa)"),) and tonight == (
        ("standin", "1.0.dev0 (git bbbbbbbbbbbb)"),
    )
    assert bisect_plan.recorded_refs(store.run(bad)) == {"standin": f"1.0.dev0 @ {'b' * 40}"}


def test_an_environment_rebuilt_from_a_run_installs_its_git_packages_at_their_commits() -> None:
    """`spec_from_run`: a package the run had from git is a ``NAME @ git+URL@COMMIT`` requirement, not a pin (its
    dev version is on no index); one recorded with a password (shown ``***``) stays a pin."""
    tags = SourceCommit("standin", "c" * 40, "https://github.com/example/standin.git").tags()
    run = make_run(versions={"standin": "1.0.dev5+gccccccc", "dask": "2026.8.0"}, tags=tags)
    spec = envs.spec_from_run(run, with_daskbench=False)
    assert spec.pins == (("dask", "2026.8.0"),)
    assert spec.sources == (f"standin @ git+https://github.com/example/standin.git@{'c' * 40}",)
    assert "standin at cccccccccccc" in spec.describe()
    hidden = make_run(versions={"standin": "1.0"}, tags=SourceCommit("standin", "c" * 40, "https://u:***@h/r").tags())
    assert envs.spec_from_run(hidden, with_daskbench=False).pins == (("standin", "1.0"),)
    assert versions_and_commits(run)["standin commit"] == "c" * 12
