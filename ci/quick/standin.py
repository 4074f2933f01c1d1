"""ci/nightly --quick's stand-in package: wheels of ``standin`` and an environment per version.

    python ci/quick/standin.py FOLDER

writes ``FOLDER/wheels/standin-{1.0,1.0.1,1.1}-py3-none-any.whl`` (``standin.work(factor)`` sleeps
0.3 s x factor; 1.0.1 is a harmless release, 1.1 is 3x slower: the slowdown a night must confirm side by
side) and builds, with `daskbench.envs` (an overlay over this interpreter, installed with
``--no-index --find-links``, as ``daskbench env --inherit`` does), one environment per version under
``FOLDER/envs``. Prints ``VERSION PYTHON`` a line.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

from daskbench import envs

#: Each version and its sleep in seconds: 1.1 plants the slowdown.
VERSIONS = {"1.0": 0.3, "1.0.1": 0.3, "1.1": 0.9}
SOURCE = '''"""The stand-in: work(factor) sleeps {seconds} s x factor."""

import time

VERSION = "{version}"


def work(factor=1.0):
    time.sleep({seconds} * factor)
    return VERSION
'''


def write_wheel(folder: Path, version: str, seconds: float) -> Path:
    """A pure-python wheel of ``standin`` ``version`` (with its RECORD)."""
    info = f"standin-{version}.dist-info"
    files = {
        "standin/__init__.py": SOURCE.format(version=version, seconds=seconds),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: standin\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: daskbench-ci\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(text)},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / f"standin-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def main(root: str) -> int:
    wheels = Path(root, "wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    for version, seconds in VERSIONS.items():
        write_wheel(wheels, version, seconds)
    for version in VERSIONS:
        spec = envs.spec_from_pins({"standin": version}, with_daskbench=False, source=f"standin {version}")
        python = envs.build(spec, cache=Path(root, "envs"), index=index, inherit=True, say=lambda _line: None)
        print(version, python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
