"""ci/nightly --quick's stand-in package: a git repository of ``standin`` and an environment per night.

    python -m ci.quick.standin FOLDER      # from the checkout's top folder

writes ``FOLDER/standin``, a git repository of the stand-in (`COMMITS`: ``standin.work(factor)`` sleeps 0.3 s x
factor; the third commit makes it 3x that, the slowdown a night must confirm side by side and then name by
itself), with a build backend in its own tree (stdlib only: every commit installs offline, nothing fetched),
and builds, with `daskbench.envs`, one environment per night (`NIGHTS`): an overlay over this interpreter
holding that commit installed from git (``standin @ git+file://...@COMMIT``), as a nightly installs dask from
its main branch, so each run records the commit (its PEP 610 record). Prints ``NIGHT COMMIT PYTHON`` a line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from daskbench import envs

#: The repository's commits, oldest first: (subject, seconds work() sleeps). The third plants the slowdown;
#: the subjects name pull requests as a merged one does, so the culprit's comment links one.
COMMITS = (
    ("standin 1.0: work() sleeps 0.3 s", 0.3),
    ("Say what work() returns (#11)", 0.3),
    ("work(): sleep 3x longer (#12)", 0.9),
    ("Tidy the module docstring (#13)", 0.9),
)
#: The commit (index in `COMMITS`) each night installs: 1 the good night, 2 a harmless commit, 3 two after
#: the planted one.
NIGHTS = {1: 0, 2: 1, 3: 3}
SOURCE = '''"""The stand-in{tidy}: work(factor) sleeps {seconds} s x factor."""

import time

VERSION = "{version}"


def work(factor=1.0):
    {said}time.sleep({seconds} * factor)
    return VERSION
'''
PYPROJECT = """[build-system]
requires = []
build-backend = "standin_build"
backend-path = ["."]

[project]
name = "standin"
version = "{version}"
description = "ci/nightly --quick's stand-in package"
"""
#: A PEP 517 build backend in the tree, stdlib only: a wheel of ``standin/`` (and an sdist), so an installer
#: builds each commit without fetching flit or setuptools.
BACKEND = '''"""The stand-in's build backend (PEP 517, stdlib only)."""

import base64
import hashlib
import io
import pathlib
import re
import tarfile
import zipfile


def _version():
    return re.search(r'^version = "(.+)"', pathlib.Path("pyproject.toml").read_text(), re.M).group(1)


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    info = f"standin-{version}.dist-info"
    files = {path.as_posix(): path.read_bytes() for path in sorted(pathlib.Path("standin").glob("*.py"))}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\\nName: standin\\nVersion: {version}\\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: standin_build\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\\n".join([*record, f"{info}/RECORD,,"]) + "\\n").encode()
    name = f"standin-{version}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory, name), "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    name = f"standin-{version}.tar.gz"
    paths = ["pyproject.toml", "standin_build.py", *sorted(p.as_posix() for p in pathlib.Path("standin").glob("*.py"))]
    with tarfile.open(pathlib.Path(sdist_directory, name), "w:gz") as sdist:
        for path in paths:
            data = pathlib.Path(path).read_bytes()
            info = tarfile.TarInfo(f"standin-{version}/{path}")
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"standin-{version}/PKG-INFO")
        data = f"Metadata-Version: 2.1\\nName: standin\\nVersion: {version}\\n".encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
'''


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` as a fixed author, never signing; its output. Fails on an error."""
    author = ["-c", "user.name=daskbench ci", "-c", "user.email=ci@daskbench.invalid", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", "-C", str(repo), *author, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, number: int, subject: str, seconds: float) -> str:
    """Write the stand-in's tree at commit ``number`` (version ``1.0.devN``, work() sleeping ``seconds``) and
    commit it; its full id."""
    version = f"1.0.dev{number}"
    said = "# it returns its version\n    " if number >= 1 else ""
    text = SOURCE.format(tidy=" (tidied)" if number >= 3 else "", seconds=seconds, version=version, said=said)
    (repo / "standin").mkdir(parents=True, exist_ok=True)
    (repo / "standin" / "__init__.py").write_text(text)
    (repo / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    (repo / "standin_build.py").write_text(BACKEND)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def repository(repo: Path, commits: tuple[tuple[str, float], ...] = COMMITS) -> list[str]:
    """A git repository of the stand-in at ``repo`` with ``commits``; their ids, oldest first."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return [commit(repo, number, subject, seconds) for number, (subject, seconds) in enumerate(commits)]


def requirement(repo: Path, commit_id: str) -> str:
    """The requirement that installs the stand-in at ``commit_id`` from git, as a nightly installs dask's main."""
    return f"standin @ git+{repo.absolute().as_uri()}@{commit_id}"


def main(root: str) -> int:
    repo = Path(root, "standin")
    ids = repository(repo)
    wheels = Path(root, "wheels")  # nothing in it: every package comes from git or from this interpreter
    wheels.mkdir(parents=True, exist_ok=True)
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    for night, number in NIGHTS.items():
        spec = envs.spec_from_pins({}, with_daskbench=False, source=f"standin at {ids[number][:12]}",
                                   sources=(requirement(repo, ids[number]),))  # fmt: skip
        python = envs.build(spec, envs.BuildOptions(Path(root, "envs"), index), inherit=True, say=lambda _line: None)
        print(night, ids[number], python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
