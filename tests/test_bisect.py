"""`daskbench bisect` over releases, end to end: real wheels, real overlay environments, real lockstep A/B.

The test writes wheels of a stand-in package, ``standin`` 1.0 to 1.5, into a folder (a local index,
``--find-links DIR --no-index``): ``standin.work()`` sleeps 0.2 s, 4x longer from 1.4 on. A benchmark
measures ``dask.delayed(standin.work)()``; each step's environment is an overlay over this interpreter
(``--inherit``) holding only its standin. A second folder of the same versions, none slower, is the
A/A bisection. ``--max-rounds 3`` lets a clear step decide at its first look (sleep noise is small). A change
this large takes the boundary's path (each later step like the bad end or like the good end); the floor rule's
path is test_bisect_repo.py's (a 1.5x change against ``--floor runtime=1.3``). One bisection serves every
test of the culprit (it was two, a 2x and a 4x, both on the boundary's path: together 234 s of a CI run's
test time, 2026-11-28).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from daskbench import envs
from daskbench.bisect import plan as bisect_plan
from daskbench.store import Store
from testing.standin import STANDIN_BENCH, standin_wheel
from tests.helpers import daskbench_cli

VERSIONS = [f"1.{minor}" for minor in range(6)]
SESSION = ["--", "--workers", "1", "--saturation", "inf"]


def wheel_folder(root: Path, slower_from: str | None, factor: float = 1.3) -> Path:
    """standin 1.0 .. 1.5, each sleeping 0.2 s, ``factor`` times that from ``slower_from`` on (None: never)."""
    root.mkdir(parents=True)
    for version in VERSIONS:
        slow = slower_from is not None and _v(version) >= _v(slower_from)
        seconds = round(0.2 * (factor if slow else 1.0), 3)
        standin_wheel(root, version, seconds)
    return root


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, quiet_machine: None) -> Path:
    """The benchmark suite, the two wheel folders and the store of this module's bisections."""
    root = tmp_path_factory.mktemp("bisect")
    (root / "test_bench.py").write_text(STANDIN_BENCH)
    wheel_folder(root / "wheels", "1.4", factor=4.0)
    wheel_folder(root / "flat", None)
    return root


def _bisect(folder: Path, wheels: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``daskbench bisect ... --inherit`` in a fresh process in ``folder``, installing only from ``wheels``."""
    flags = ["--inherit", "--find-links", str(folder / wheels), "--no-index", "--cache-dir", str(folder / "cache"),
             "--db", f"sqlite:///{folder / 'bisect.db'}", "--max-rounds", "3"]  # fmt: skip
    command = [sys.executable, "-m", "daskbench", "bisect", *flags, *args, *SESSION]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def found(folder: Path) -> subprocess.CompletedProcess[str]:
    """The bisection ``found``: standin 1.0 (good) to 1.5 (bad), 1.4 4x slower."""
    return _bisect(folder, "wheels", "--good", "standin==1.0", "--bad", "standin==1.5", "--group", "found")


def test_bisect_names_the_release_that_planted_the_slowdown_within_four_steps(found: subprocess.CompletedProcess[str]) -> None:  # fmt: skip
    """Exit 1 (a first bad release named): 1.4, in at most 4 steps (step 0 included), each shown with its
    verdict; the culprit carries its step's evidence."""
    assert found.returncode == 1, found.stdout[-2000:] + found.stderr[-3000:]
    steps = [line for line in found.stdout.splitlines() if line.startswith("step ")]
    assert 2 <= len(steps) <= 4, found.stdout
    assert steps[0].startswith("step 0  standin 1.5  regressed")
    # each later step says its verdict: against the floor, or like the bad end or the good end (a large change)
    words = ("  regressed  ", "  unchanged  ", "  improved  ", "  bad (above ", "  good (below ")
    assert all(any(word in line for word in words) for line in steps), found.stdout
    assert "first bad release: standin 1.4" in found.stdout
    assert "standin_work regressed" in found.stdout and "rounds" in found.stdout
    assert "Traceback" not in found.stderr


def test_every_step_is_tagged_in_the_store_and_a_resume_reuses_them(
    found: subprocess.CompletedProcess[str], folder: Path
) -> None:
    """Each step's runs carry bisect, step, version and verdict; ``--group found`` (ends read back from the
    tags) runs nothing new and names 1.4 again from the stored steps."""
    runs = [run for run in Store(f"sqlite:///{folder / 'bisect.db'}").runs() if run.tags.get("bisect") == "found"]
    # a step's last attempt holds its verdict (an undecided first attempt is raised on a busy machine)
    attempts = sorted(runs, key=lambda run: (run.tags["bisect_step"], int(run.tags["bisect_attempt"])))
    versions = {run.tags["bisect_step"]: (run.tags["bisect_version"], run.tags["bisect_verdict"]) for run in attempts}
    assert versions["0"] == ("1.5", "regressed") and ("1.4", "regressed") in versions.values()
    again = _bisect(folder, "wheels", "--group", "found")
    assert again.returncode == 1, again.stderr[-2000:]
    assert "first bad release: standin 1.4" in again.stdout and "(stored)" in again.stdout
    assert "bisect: step" not in again.stderr  # no step was run again
    assert len([run for run in Store(f"sqlite:///{folder / 'bisect.db'}").runs() if run.tags.get("bisect")]) == len(
        runs
    )


def test_a_large_regressions_steps_are_judged_like_the_bad_end_or_like_the_good_end(
    found: subprocess.CompletedProcess[str], folder: Path
) -> None:
    """standin 1.4 sleeps 4x longer: step 0 measures the bad end, and every later step is asked whether it is
    like it (above the geometric midpoint of 1 and step 0's lower bound) or like the good end, not whether
    it is within 10% of good; each step line says which."""
    assert "each later step is judged like it (bad: above " in found.stderr
    steps = [line for line in found.stdout.splitlines() if line.startswith("step ")]
    assert all(" good (below " in line or " bad (above " in line for line in steps[1:]), found.stdout
    boundaries = {run.tags.get("ab_boundary") for run in Store(f"sqlite:///{folder / 'bisect.db'}").runs()
                  if run.tags.get("bisect") == "found" and run.tags.get("bisect_step") != "0"}  # fmt: skip
    assert len(boundaries) == 1 and float(boundaries.pop() or 0) > 1.1, "every later step asked the same question"
    assert "bisect: rounds: " in found.stderr and "of which compute" in found.stderr


def test_an_a_a_bisection_says_no_regression_and_names_no_culprit(folder: Path) -> None:
    """standin 1.0 to 1.5 where no version is slower: step 0 finds no regression; exit 0, no culprit. The floor
    is 1.3x, so "unchanged" is proven at the first look or so: against the default 1.10 the same took up to 104 s in
    CI, 13 s with it."""
    done = _bisect(folder, "flat", "--good", "standin==1.0", "--bad", "standin==1.5", "--group", "flat",
                   "--cache-dir", str(folder / "flat-cache"), "--floor", "runtime=1.3")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "no regression between good and bad" in done.stdout
    assert "first bad" not in done.stdout
    steps = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 1 and steps[0].startswith("step 0  standin 1.5")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--good", "nosuchrun", "--bad", "standin==1.5"], "no run 'nosuchrun' in"),
        (["--good", "standin==1.0", "--bad", "standin==1.9"],
         "--bad standin==1.9 is not on the index (asked --find-links {wheels}); it offers 1.5, 1.4, 1.3"),
        (["--good", "standin==1.0", "--bad", "standin==1.0"], "--good and --bad name the same versions"),
        (["--good", "standin==1.0,zict==1.0", "--bad", "standin==1.5,zict==2.0"], "differ in 2 packages"),
        (["--good", "standin==1.5", "--bad", "standin==1.0"], "--bad standin==1.0 is not newer than --good"),
        (["--group", "nosuch"], "no bisection 'nosuch'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_anything_is_built_or_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """An unknown run, a version not on the index, identical ends, two packages, a reversed range, an
    unknown bisection: exit 2, one line, and no environment cache made."""
    wheels = wheel_folder(tmp_path / "wheels", "1.4")
    db = f"sqlite:///{tmp_path / 'bad.db'}"
    Store(db)
    cache = tmp_path / "cache"
    flags = ["--inherit", "--find-links", str(wheels), "--no-index", "--cache-dir", str(cache), "--db", db]
    done = daskbench_cli("bisect", *args, *flags, capsys=capsys)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said.format(wheels=wheels) in done.stderr, done.stderr
    assert not cache.exists()


def test_dask_and_distributed_move_together_and_a_release_of_one_only_is_skipped() -> None:
    """Candidates pair the two by version, strictly after good up to bad; a version of one alone is a note."""
    listed = {"dask": ["2026.5.0", "2026.6.0", "2026.7.0", "2026.8.0"],
              "distributed": ["2026.5.0", "2026.7.0", "2026.8.0"]}  # fmt: skip
    good = {"dask": "2026.5.0", "distributed": "2026.5.0", "numpy": "2.0"}
    bad = {"dask": "2026.8.0", "distributed": "2026.8.0", "numpy": "2.0"}
    moving = bisect_plan.moving_packages(good, bad, None)
    plan = bisect_plan.make_plan(good, bad, moving, listed, "the index")
    assert moving == ("dask", "distributed")
    assert [candidate.label() for candidate in plan.candidates] == ["2026.7.0", "2026.8.0"]
    assert plan.notes == ("dask 2026.6.0 has no matching distributed release: skipped",)
    assert plan.max_steps() == 2


def test_an_overlay_holds_only_its_pin_and_sees_this_interpreters_packages(tmp_path: Path) -> None:
    """``build(inherit=True)``: standin 1.3 from the folder, daskbench and dask from here; a key of its own."""
    wheels = wheel_folder(tmp_path / "wheels", None)
    spec = envs.spec_from_pins({"standin": "1.3"}, with_daskbench=False)
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    python = envs.build(spec, envs.BuildOptions(tmp_path / "cache", index), inherit=True, say=lambda _line: None)
    code = "import standin, daskbench, dask; print(standin.VERSION)"
    assert subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout == "1.3\n"
    assert python.parent.parent.name != spec.key()
    assert [path.name for path in (python.parent.parent / "lib").glob("python3*/site-packages/standin*")] != []
    assert envs.available_versions("standin", index) == VERSIONS
