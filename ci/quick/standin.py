"""ci/nightly --quick's stand-in package: wheels of ``standin`` and an environment per version.

    python -m ci.quick.standin FOLDER      # from the checkout's top folder

writes ``FOLDER/wheels/standin-{1.0,1.0.1,1.1}-py3-none-any.whl`` (``standin.work(factor)`` sleeps
0.3 s x factor; 1.0.1 is a harmless release, 1.1 is 3x slower: the slowdown a night must confirm side by
side) and builds, with `daskbench.envs` (an overlay over this interpreter, installed with
``--no-index --find-links``, as ``daskbench env --inherit`` does), one environment per version under
``FOLDER/envs``. Prints ``VERSION PYTHON`` a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from daskbench import envs
from testing.wheel import write_wheel

#: Each version and its sleep in seconds: 1.1 plants the slowdown.
VERSIONS = {"1.0": 0.3, "1.0.1": 0.3, "1.1": 0.9}
SOURCE = '''"""The stand-in: work(factor) sleeps {seconds} s x factor."""

import time

VERSION = "{version}"


def work(factor=1.0):
    time.sleep({seconds} * factor)
    return VERSION
'''


def main(root: str) -> int:
    wheels = Path(root, "wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    for version, seconds in VERSIONS.items():
        write_wheel(
            wheels, "standin", version, {"standin/__init__.py": SOURCE.format(version=version, seconds=seconds)}
        )
    for version in VERSIONS:
        spec = envs.spec_from_pins({"standin": version}, with_daskbench=False, source=f"standin {version}")
        python = envs.build(spec, cache=Path(root, "envs"), index=index, inherit=True, say=lambda _line: None)
        print(version, python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
