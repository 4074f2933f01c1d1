"""The libraries an environment of an old release gets (`daskbench.envs.known`): the era's caps, the known
incompatibilities, the user's ``--pin``, and the releases daskbench cannot measure.

The era and the rules are checked against what ran here: the floor environment of distributed 2023.1.0
(numpy 1.24, pandas 1.5.3, xarray 2023.1.0, pyarrow 11, bokeh 2.4.3) is what the defaults give it.
Builds with a real installer use the stand-in wheels of a local folder (`tests/test_envs.py` builds the
recorded environments; here, what the defaults add to them).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from daskbench import envs
from daskbench.envs import known
from daskbench.errors import DaskbenchError
from testing.standin import standin_project
from tests.helpers import make_run

OLDEST = {"dask": "2023.1.0", "distributed": "2023.1.0"}


def _requirements(pins: dict[str, str], *users: str, era_from: dict[str, str] | None = None) -> tuple[str, ...]:
    return known.requirements(known.default_pins(pins, [known.parse_user_pin(u) for u in users], era_from))


def test_the_oldest_release_gets_the_libraries_it_ran_with_here() -> None:
    """dask 2023.1.0: numpy and pandas lines from before 2023.2, pyarrow 11, xarray 2023.1, bokeh 2 (its
    dashboard needs bokeh<3); the floor environment that passed the suite."""
    assert _requirements(OLDEST) == ("bokeh<3", "numpy<1.25", "pandas<2.0", "pyarrow<12", "xarray<2023.2")


def test_a_release_mid_2023_gets_its_era_and_the_p2p_pyarrow_cap() -> None:
    """dask 2023.6.0: pandas<2.1 and xarray<2023.7 (what its users installed), pyarrow<13 (distributed before
    2023.7.1 splits pyarrow 13's tables wrongly in the p2p shuffle), bokeh<3.9 for its performance report."""
    assert _requirements({"dask": "2023.6.0", "distributed": "2023.6.0"}) == (
        "bokeh<3.4", "numpy<1.26", "pandas<2.1", "pyarrow<13", "xarray<2023.7")  # fmt: skip


def test_the_yanked_dask_expr_of_dask_2024_11_0_is_pinned_so_an_installer_takes_it() -> None:
    assert "dask-expr==1.1.17" in _requirements({"dask": "2024.11.0", "distributed": "2024.11.0"})


def test_a_users_numpy_below_2_brings_pyarrow_below_26_on_any_release() -> None:
    """pyarrow 26 imports only with numpy 2, though its metadata allows numpy 1: the rule follows the cap."""
    found = _requirements({"dask": "2026.8.0", "distributed": "2026.8.0"}, "numpy<2")
    assert "numpy<2" in found and "pyarrow<26" in found


def test_exact_pins_stay_and_the_users_pins_replace_the_defaults_of_their_package() -> None:
    """A recorded numpy is kept (the era adds nothing for it); --pin 'pandas<1.6' replaces the era's pandas
    cap; a bare --pin bokeh drops bokeh's defaults and adds nothing."""
    found = _requirements({**OLDEST, "numpy": "1.23.5"}, "pandas<1.6", "bokeh")
    assert found == ("pandas<1.6", "pyarrow<12", "xarray<2023.2")


def test_a_recorded_version_a_rule_excludes_is_one_line_saying_how_to_choose() -> None:
    """dask 2023.1.0 with a recorded pandas 2.2.3 does not import dask.dataframe: one line before any build,
    naming both ways out; --pin pandas (build anyway) and --pin 'pandas<2' (replace the pin) are accepted."""
    pins = {**OLDEST, "pandas": "2.2.3"}
    with pytest.raises(DaskbenchError) as said:
        known.default_pins(pins)
    assert str(said.value) == (
        "pandas 2.2.3 cannot run here: dask<2023.2.0: import dask.dataframe fails on pandas 2 (no "
        "pandas.core.strings.StringMethods); give it a version with --pin 'pandas<2', or build it anyway with "
        "--pin pandas"
    )
    spec = envs.spec_from_pins(pins, with_daskbench=False)
    assert "pandas==2.2.3" in known.pinned(spec, [known.parse_user_pin("pandas")]).requirements()
    replaced = known.pinned(spec, [known.parse_user_pin("pandas<2")])
    assert "pandas<2" in replaced.requirements() and "pandas" not in dict(replaced.pins)


@pytest.mark.parametrize("text", ["pandas @ https://example.org/pandas.whl", "pandas[test]<2", "pandas<2; os_name=='nt'",
                                  "<2", "pandas<<2"])  # fmt: skip
def test_a_pin_that_is_not_a_name_and_specifiers_is_one_line(text: str) -> None:
    with pytest.raises(
        DaskbenchError, match=re.escape("expected NAME or NAME with version specifiers, e.g. --pin 'pandas<2.1'")
    ):
        known.parse_user_pin(text)


def test_a_release_older_than_daskbench_measures_is_one_line_naming_the_oldest_that_runs() -> None:
    """dask 2022.12.1 is below daskbench's declared floor (read from its installed metadata)."""
    assert known.floor_of("dask") == "2023.1.0" and known.floor_of("distributed") == "2023.1.0"
    with pytest.raises(DaskbenchError) as said:
        known.check_measurable({"dask": "2022.12.1", "distributed": "2022.12.1"})
    assert str(said.value) == ("dask 2022.12.1 cannot be measured here: daskbench's measuring side runs on "
                               "dask>=2023.1.0 (its declared floor); the oldest release that runs is 2023.1.0")  # fmt: skip
    known.check_measurable(OLDEST)


def test_a_release_below_the_floor_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    spec = envs.spec_from_pins({"dask": "2022.12.1", "distributed": "2022.12.1"})
    with pytest.raises(DaskbenchError, match=re.escape("dask 2022.12.1 cannot be measured here")):
        envs.build(spec, envs.BuildOptions(tmp_path / "cache"), say=lambda _line: None)
    assert not (tmp_path / "cache").exists()


def test_a_new_dask_drops_the_recorded_dask_expr_that_was_made_for_the_old_one() -> None:
    """Each dask-expr requires one dask exactly: a bisection's "the good run's versions but dask X" leaves
    dask-expr to the resolver instead of pinning the good run's."""
    run = make_run(versions={"dask": "2024.7.1", "distributed": "2024.7.1", "dask-expr": "1.1.9", "numpy": "2.0.1"})
    moved = envs.spec_from_run(run, overrides={"dask": "2024.8.0", "distributed": "2024.8.0"}, with_daskbench=False)
    assert dict(moved.pins) == {"dask": "2024.8.0", "distributed": "2024.8.0", "numpy": "2.0.1"}
    kept = envs.spec_from_run(run, with_daskbench=False)
    assert dict(kept.pins)["dask-expr"] == "1.1.9"


def test_a_bisection_step_gets_the_good_ends_era_and_its_own_as_the_fallback() -> None:
    """Every step of a bisection from dask 2023.1.0 first tries the libraries of 2023.1 (so it differs from
    the good end in dask alone), then, if that does not install, those of its own release."""
    spec = envs.spec_from_pins({"dask": "2024.4.1", "distributed": "2024.4.1"}, with_daskbench=False)
    first, own = envs.builds._choices(spec, (), OLDEST)
    assert "pandas<2.0" in first.extra and "pandas<2.3" in own.extra
    assert envs.builds._choices(spec, (), None) == [own]


# -- with an installer ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """standin 1.0 and 1.1 wheels, built by ``pip wheel``."""
    root = tmp_path_factory.mktemp("standin")
    for version in ("1.0", "1.1"):
        source = standin_project(root / f"standin-{version}", version, 0.0)
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "wheels"), str(source)]
        subprocess.run(command, check=True, capture_output=True, timeout=300)
    return root / "wheels"


def test_a_users_pin_is_installed_checked_and_part_of_the_environments_identity(wheels: Path, tmp_path: Path) -> None:
    """--pin 'standin<1.1' beside nothing else: the environment holds 1.0, says it was pinned, and is another
    environment than the one of --pin 'standin>=1.1' (which holds 1.1)."""
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    said: list[str] = []
    pythons = {}
    for text in ("standin<1.1", "standin>=1.1"):
        base = envs.EnvSpec((), (), "the pins")
        options = envs.BuildOptions(tmp_path, index, extra_pins=(known.parse_user_pin(text),))
        pythons[text] = envs.build(base, options, say=said.append)
    versions = {text: envs.installed_versions(python, ["standin"])["standin"] for text, python in pythons.items()}
    assert versions == {"standin<1.1": "1.0", "standin>=1.1": "1.1"}
    assert any(line.startswith("env: also pinned: standin<1.1 (defaults") for line in said)


def test_a_step_that_does_not_install_with_the_good_ends_era_is_built_with_its_own(
    wheels: Path, tmp_path: Path
) -> None:
    """The good end's era (dask 2023.1.0) asks for numpy<1.25, which this wheel folder lacks: the build says
    so and builds the step with its own defaults (none for a release-less stand-in)."""
    options = envs.BuildOptions(tmp_path, envs.Index(find_links=(str(wheels),), no_index=True))
    said: list[str] = []
    spec = envs.spec_from_pins({"standin": "1.1"}, with_daskbench=False)
    python = envs.build(spec, options, say=said.append, era_from=OLDEST)
    assert envs.installed_versions(python, ["standin"]) == {"standin": "1.1"}
    retry = [line for line in said if "does not install beside the libraries of the good end's release" in line]
    assert len(retry) == 1 and retry[0].endswith("building it with those of its own release")
    again: list[str] = []
    assert envs.build(spec, options, say=again.append, era_from=OLDEST) == python
    assert again[0].startswith("env: reusing")  # the fallback is found at once the next time
