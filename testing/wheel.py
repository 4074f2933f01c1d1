"""A pure-Python wheel written directly, without a build backend: what a package index serves.

Used by ``ci/quick/standin.py`` (ci/nightly --quick's stand-in package), ``measure/bisect_under_load.py`` (its
stand-in releases) and the harness's tests (``tests/helpers.py``, the stand-in of the environment tests).
Stdlib only.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def write_wheel(
    folder: Path, name: str, version: str, modules: Mapping[str, str], requires: Sequence[str] = ()
) -> Path:
    """A pure-Python wheel of ``name`` ``version`` in ``folder`` holding ``modules`` (path in the wheel -> source),
    depending on ``requires`` (``Requires-Dist``), with its METADATA, WHEEL and RECORD; its path."""
    info = f"{name}-{version}.dist-info"
    depends = "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        **modules,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{depends}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: daskbench-ci\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(text)},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for inside, text in files.items():
            wheel.writestr(inside, text)
    return path


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
