"""What a built environment holds: each package's version as its own interpreter reads it
(``importlib.metadata``), checked against the `EnvSpec` it was built for, before it is marked built and again
before it is reused. An interpreter that is gone or cannot run is a `BrokenEnvironment` (rebuilt).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path

from daskbench.envs.installers import interpreter
from daskbench.envs.output import first_error
from daskbench.envs.specs import EnvSpec, normalized
from daskbench.errors import DaskbenchError

_VERSIONS_SCRIPT = (
    "import json, sys\nfrom importlib import metadata\nfound = {}\nfor name in sys.argv[1:]:\n"
    "    try:\n        found[name] = metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n        found[name] = None\nprint(json.dumps(found))"
)


class BrokenEnvironment(DaskbenchError):
    """A built environment whose interpreter is gone or cannot run (deleted, its base python removed)."""


def installed_versions(python: Path, names: Collection[str]) -> dict[str, str | None]:
    """Each name's version as the environment's own interpreter reads it (None: not installed); a
    `BrokenEnvironment` when that interpreter cannot be run or cannot say."""
    try:
        done = subprocess.run(
            [str(python), "-c", _VERSIONS_SCRIPT, *names], capture_output=True, text=True, timeout=120
        )
    except OSError as exc:
        raise BrokenEnvironment(f"the interpreter {python} cannot run ({exc.strerror or exc})") from None
    try:
        found: dict[str, str | None] = json.loads(done.stdout) if done.returncode == 0 else {}
    except ValueError:
        found = {}
    if done.returncode != 0 or not isinstance(found, dict):
        raise BrokenEnvironment(f"the interpreter {python} could not report its versions: {first_error(done.stderr)}")
    return found


def mismatches(spec: EnvSpec, found: Mapping[str, str | None]) -> list[str]:
    """``standin 1.1 (wanted 1.0)`` for each pin the environment does not hold as pinned, and
    ``pandas 2.2.3 (wanted <2)`` for an installed package outside its extra requirement."""
    from packaging.requirements import Requirement

    wrong = []
    for name, version in spec.pins:
        have = found.get(name)
        if have is None or not same_version(have, version):
            wrong.append(f"{name} {have or 'missing'} (wanted {version})")
    for text in spec.extra:
        wanted = Requirement(text)
        have = found.get(normalized(wanted.name))
        if have is not None and not wanted.specifier.contains(have, prereleases=True):
            wrong.append(f"{normalized(wanted.name)} {have} (wanted {wanted.specifier})")
    return wrong


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality (``2026.07.0`` is ``2026.7.0``), else the same text."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def check_versions(folder: Path, spec: EnvSpec, *, rebuilt: bool) -> None:
    """One line when the environment's versions are not the spec's."""
    from packaging.requirements import Requirement

    names = [name for name, _ in spec.pins] + [normalized(Requirement(text).name) for text in spec.extra]
    wrong = mismatches(spec, installed_versions(interpreter(folder), names))
    if not wrong:
        return
    fix = "the installer did not install what was pinned" if rebuilt else f"remove {folder} to rebuild it"
    raise DaskbenchError(f"the environment {folder} does not hold {spec.source}'s versions: {'; '.join(wrong)}; {fix}")
