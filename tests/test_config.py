"""Settings layering and the one-line errors for bad values."""

from __future__ import annotations

import math

import pytest

from daskbench.config import resolve, resolve_option
from daskbench.errors import DaskbenchError
from daskbench.text import WIDTH


def test_flags_beat_env_beat_pyproject_beat_defaults() -> None:
    """Each layer overrides the one below it."""
    assert resolve({}).saturation == (1.0, 1.1, math.inf)
    assert resolve({}, env={}, pyproject={"saturation": [1.0, "inf"]}).saturation == (1.0, math.inf)
    env = {"DASKBENCH_SATURATION": "2.0"}
    assert resolve({}, env=env, pyproject={"saturation": "1.0"}).saturation == (2.0,)
    assert resolve({"saturation": "0.5"}, env=env).saturation == (0.5,)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        ({"saturation": "0"}, "--saturation: '0' is not a number > 0 or 'inf'"),
        ({"saturation": "abc"}, "--saturation: 'abc' is not a number > 0"),
        ({"saturation": "nan"}, "is not a number > 0"),
        ({"workers": "-1"}, "--workers: worker count '-1' must be >= 1"),
        ({"size": "huge"}, "--size: 'huge' is not a size; choose one of tiny, small, medium, large"),
        ({"memory_per_worker": "lots"}, "--memory-per-worker: 'lots' is not a memory size"),
        ({"repeat": "0"}, "--repeat"),
        ({"client_fixtures": "small-client"}, "--client-fixtures: 'small-client' is not a fixture name"),
        ({"client_fixtures": "client,measure"}, "'measure' is a fixture daskbench declares itself"),
        ({"client_fixtures": "daskbench_client"}, "'daskbench_client' is a fixture daskbench declares itself"),
    ],
)
def test_bad_values_give_one_line_error_with_example(flags: dict[str, str], words: str) -> None:
    """Every bad value names its flag, what is accepted, and an example."""
    with pytest.raises(DaskbenchError) as info:
        resolve(flags, env={})
    assert words in str(info.value)
    assert "example:" in str(info.value)
    assert "\n" not in str(info.value)


def test_env_error_names_the_env_var() -> None:
    """A bad DASKBENCH_* value is blamed on the variable, not on a flag the user never typed."""
    with pytest.raises(DaskbenchError, match="DASKBENCH_WORKERS"):
        resolve({}, env={"DASKBENCH_WORKERS": "two"})


def test_unknown_pyproject_key_is_refused_naming_the_nearest_key() -> None:
    """A typo in [tool.daskbench] is one line within 120 columns: the key, the one meant, where to see all."""
    with pytest.raises(DaskbenchError) as info:
        resolve({}, env={}, pyproject={"saturaton": "1.0"})
    assert str(info.value) == (
        "[tool.daskbench] has 1 unknown key: saturaton (did you mean saturation?); "
        "the keys are the flags without --: pytest --help"
    )


def test_unknown_env_vars_are_one_line_naming_the_first_and_how_many_more() -> None:
    """Three misspelt DASKBENCH_* variables: the first, the count of the others, the nearest name; never the 40 known."""
    env = {"DASKBENCH_FLOR": "1.2", "DASKBENCH_ZZZ": "1", "DASKBENCH_ZZZZ": "1"}
    with pytest.raises(DaskbenchError) as info:
        resolve({}, env=env)
    message = str(info.value)
    assert message == (
        "3 unknown environment variables: DASKBENCH_FLOR and 2 more (did you mean DASKBENCH_FLOOR?); "
        "the variables: pytest --help"
    )
    assert len(message) <= WIDTH


def test_memory_sizes_parse_binary_and_decimal_units() -> None:
    """4GiB and 4GB are different numbers; auto means the machine split."""
    assert resolve({"memory_per_worker": "4GiB"}, env={}).memory_per_worker == (4 * 2**30,)
    assert resolve({"memory_per_worker": "4GB,auto"}, env={}).memory_per_worker == (4 * 10**9, None)
    assert resolve({}, env={}).memory_per_worker == (None,)


def test_client_fixtures_come_from_a_pyproject_list_an_env_var_or_the_flag_alone() -> None:
    """``client-fixtures = ["small_client", "client"]`` in pyproject, DASKBENCH_CLIENT_FIXTURES or the flag;
    `resolve_option` layers that one option as `resolve` does (the plugin reads it before collection)."""
    assert resolve({}, env={}).client_fixtures is None
    pyproject = {"client-fixtures": ["small_client", "client", "client"]}
    assert resolve({}, env={}, pyproject=pyproject).client_fixtures == ("small_client", "client")
    env = {"DASKBENCH_CLIENT_FIXTURES": "big_client"}
    assert resolve_option("client_fixtures", {}, env, pyproject) == ("big_client",)
    assert resolve_option("client_fixtures", {"client_fixtures": "c"}, env, pyproject) == ("c",)
