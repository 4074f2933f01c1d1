"""What a benchmark repository's tree is (`envs.trees`): a package, or a folder of benchmarks whose requirements
alone are installed; what ``daskbench pr`` installs for a side and what ``daskbench init``'s workflows install,
by one rule; and what ``init --pr`` warns would not work in CI. Real files in real folders (and real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from daskbench import envs
from daskbench.envs import deps
from daskbench.errors import DaskbenchError
from tests.helpers import git

BUILD = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
SETTINGS = '[tool.daskbench]\nsize = "small"\n\n[tool.pytest.ini_options]\naddopts = ["-m", "not benchmark"]\n'
PROJECT = '[project]\nname = "bench"\nversion = "0"\ndependencies = ["xarray>=2024.1", "zarr"]\n'
BENCHMARK = "import pytest\n\npytestmark = pytest.mark.benchmark\n\n\ndef test_x(measure):\n    pass\n"


def folder(root: Path, files: dict[str, str]) -> Path:
    """``root`` holding ``files`` (relative name -> text)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "package", "why"),
    [
        ({"pyproject.toml": BUILD + PROJECT}, True, "pyproject.toml has [build-system]"),
        ({"setup.py": "from setuptools import setup\nsetup()\n"}, True, "it has setup.py"),
        ({"setup.cfg": "[metadata]\nname = x\n", "pyproject.toml": SETTINGS}, True, "it has setup.cfg"),
        ({"pyproject.toml": SETTINGS}, False, "no [build-system] in pyproject.toml, no setup.py or setup.cfg"),
        ({"pyproject.toml": PROJECT}, False, "no [build-system] in pyproject.toml, no setup.py or setup.cfg"),
        ({"requirements.txt": "zarr\n"}, False, "no [build-system] in pyproject.toml, no setup.py or setup.cfg"),
    ],
    ids=["build-system", "setup.py", "setup.cfg", "init's settings", "project-without-build", "requirements"],
)
def test_a_tree_is_a_package_only_when_an_installer_can_build_it(
    tmp_path: Path, files: dict[str, str], package: bool, why: str
) -> None:
    """``[build-system]``, setup.py or setup.cfg make a package; settings alone, a ``[project]`` table without a
    build system, or requirements files make a folder of benchmarks: the rule says which file decided."""
    found = envs.tree_shape(folder(tmp_path, files))
    assert (found.package, found.why) == (package, why)


def test_a_folders_requirements_are_its_files_includes_and_project_dependencies(tmp_path: Path) -> None:
    """requirements*.txt at the top (sorted), comments, blank lines and options left out, per-line options cut,
    ``-r`` includes followed where they stand (once), then ``[project] dependencies``; a package declares none
    this way, and a missing include is one line naming it."""
    tree = folder(
        tmp_path / "bench",
        {
            "pyproject.toml": PROJECT + "\n" + SETTINGS,
            "requirements.txt": "# what the benchmarks import\n-r requirements/common.txt\nnumpy>=1.24  # arrays\n",
            "requirements/common.txt": "--index-url https://example.invalid/simple\ndask[array] --hash=sha256:00\n",
            "requirements-extra.txt": "--requirement=requirements/common.txt\n./vendor/helper\n\n",
        },
    )
    found = envs.tree_shape(tree)
    assert found.files == ("requirements-extra.txt", "requirements.txt") and found.project == ("xarray>=2024.1", "zarr")
    lines = envs.requirement_lines(tree, found)
    assert lines == ("dask[array]", "./vendor/helper", "numpy>=1.24", "xarray>=2024.1", "zarr")
    assert envs.requirement_lines(tree, envs.Shape(True, "a package")) == ()
    (tree / "requirements.txt").write_text("-r missing.txt\n")
    with pytest.raises(DaskbenchError, match=r"missing.txt is named by a requirements file \(-r\) of .* not there"):
        envs.requirement_lines(tree, envs.tree_shape(tree))


def test_what_a_pr_side_installs_follows_the_trees_shape(tmp_path: Path) -> None:
    """A package: its tree (editable when the side is a folder); a folder of benchmarks: nothing, unless the sides'
    requirements differ (``full``), then its requirements, a ``./path`` made absolute in that tree."""
    package = folder(tmp_path / "package", {"pyproject.toml": BUILD + PROJECT})
    bench = folder(tmp_path / "bench", {"pyproject.toml": SETTINGS, "requirements.txt": "zarr\n./vendor/helper\n"})
    assert envs.side_sources(package, editable=False, full=False) == (str(package),)
    assert envs.side_sources(package, editable=True, full=True) == ("-e", str(package))
    assert envs.side_sources(bench, editable=False, full=False) == ()
    assert envs.side_sources(bench, editable=True, full=True) == ("zarr", str(bench.resolve() / "vendor" / "helper"))


def test_a_folders_requirement_changes_are_read_as_pip_reads_them(tmp_path: Path) -> None:
    """Two folders of benchmarks: a changed bound and an added URL requirement (no PEP 508 name: compared as its
    text) are the changes; the same files are none."""
    base = folder(tmp_path / "base", {"requirements.txt": "zarr>=2\n"})
    head = folder(tmp_path / "head", {"requirements.txt": "zarr>=3\ngit+https://example.invalid/helper\n"})
    assert deps.changed_dependencies(base, head) == [
        "git+https://example.invalid/helper: added (any version)",
        "zarr >=2 -> >=3",
    ]
    assert deps.changed_dependencies(base, base) == []


@pytest.mark.parametrize(
    ("files", "lines"),
    [
        ({"pyproject.toml": BUILD + PROJECT}, ["python -m pip install ."]),
        ({"pyproject.toml": SETTINGS}, []),
        (
            {"requirements.txt": "zarr\n", "requirements-bench.txt": "xarray\n"},
            ["python -m pip install -r requirements-bench.txt -r requirements.txt"],
        ),
        ({"pyproject.toml": PROJECT}, [envs.trees.PROJECT_DEPENDENCIES_LINE]),
    ],
    ids=["package", "init's settings", "requirements", "project-without-build"],
)
def test_a_workflow_installs_what_the_shape_needs(tmp_path: Path, files: dict[str, str], lines: list[str]) -> None:
    """The workflows' install lines after daskbench: the package, else the folder's requirements (uv reads
    ``[project] dependencies`` without building), else nothing."""
    assert envs.install_lines(folder(tmp_path, files)) == lines


def test_init_pr_warns_of_what_would_not_work_in_ci(tmp_path: Path) -> None:
    """The README's repository (a git checkout's top, a benchmark in it) and a suite named by its client fixtures
    give no warning; outside git, below the top, without a benchmark or with dynamic dependencies no build system
    computes, one line each."""
    readme = folder(tmp_path / "readme", {"pyproject.toml": SETTINGS, "benchmarks/test_example.py": BENCHMARK})
    git(readme, "init", "-q")
    assert envs.ci_warnings(readme) == []
    suite = folder(tmp_path / "suite", {"pyproject.toml": '[tool.daskbench]\nclient-fixtures = ["client"]\n',
                                        "tests/test_arrays.py": "def test_sum(client):\n    pass\n"})  # fmt: skip
    git(suite, "init", "-q")
    assert envs.ci_warnings(suite) == []  # a suite brought as it is: measured without the mark in its files
    below = folder(readme / "sub", {"benchmarks/test_x.py": BENCHMARK})
    assert [line.split(":")[0] for line in envs.ci_warnings(below)] == [f"{below} is not the top of its git checkout"]
    dynamic = '[project]\nname = "x"\nversion = "0"\ndynamic = ["dependencies"]\n'
    bare = folder(tmp_path / "bare", {"pyproject.toml": dynamic})
    said = envs.ci_warnings(bare)
    assert len(said) == 3, said
    assert said[0].startswith("pyproject.toml has dynamic [project] dependencies but no [build-system]")
    assert "is not in a git checkout yet" in said[1] and said[2].startswith("no test file here marks a benchmark")
