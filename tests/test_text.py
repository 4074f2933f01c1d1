"""daskbench.text: the shared small helpers, each checked against answers worked out by hand."""

from __future__ import annotations

import math

import pytest

from daskbench.text import flatten, format_bytes, inf_or_number, json_safe, one_line, saturation_text


def test_json_safe_turns_nan_into_null_and_infinities_into_text() -> None:
    assert json_safe([math.nan, math.inf, -math.inf, 1.5]) == [None, "inf", "-inf", 1.5]


def test_json_safe_turns_nested_tuples_into_lists_and_keys_into_text() -> None:
    value = {1: (2.0, (math.nan, "x")), "b": {"c": (math.inf,)}}
    assert json_safe(value) == {"1": [2.0, [None, "x"]], "b": {"c": ["inf"]}}


def test_flatten_joins_nested_keys_with_dots_and_keeps_leaves_as_they_are() -> None:
    nested = {"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None, "f": {}}
    assert flatten(nested) == {"a.b": 1, "a.c.d": [1, 2], "e": None}


def test_flatten_puts_the_prefix_before_every_key() -> None:
    assert flatten({"a": {"b": 1}}, prefix="dask.") == {"dask.a.b": 1}


def test_one_line_prefixes_the_type_and_folds_whitespace() -> None:
    assert one_line(ValueError("bad\n   value\tat  line 3\n")) == "ValueError: bad value at line 3"


def test_one_line_cuts_at_the_limit() -> None:
    text = one_line(OSError("x" * 1000), limit=20)
    assert text == "OSError: " + "x" * 11


def test_one_line_cuts_at_500_characters_by_default() -> None:
    assert len(one_line(RuntimeError("y" * 1000))) == 500


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (2**20, "1.0 MiB"),
        (3 * 2**30, "3.0 GiB"),
        (2**60, "1024.0 PiB"),
    ],
)
def test_format_bytes_uses_binary_units(n: int, expected: str) -> None:
    assert format_bytes(n) == expected


def test_format_bytes_shows_none_as_the_missing_text() -> None:
    assert (format_bytes(None), format_bytes(None, missing="n/a")) == ("-", "n/a")


@pytest.mark.parametrize(("value", "expected"), [(1, "1.0"), (1.1, "1.1"), (0.5, "0.5"), (math.inf, "inf")])
def test_saturation_text_spells_values_as_dask_config_does(value: float, expected: str) -> None:
    assert saturation_text(value) == expected


def test_inf_or_number_keeps_numbers_and_spells_infinity() -> None:
    assert (inf_or_number(1.25), inf_or_number(math.inf)) == (1.25, "inf")


def test_one_line_of_an_error_without_a_message_is_its_type_name() -> None:
    """``OSError()`` reads ``OSError``, not ``OSError: OSError``."""
    assert one_line(OSError()) == "OSError"


def test_format_bytes_moves_up_a_unit_when_rounding_reaches_1024() -> None:
    """Just under a MiB reads ``1.0 MiB``, never ``1024.0 KiB``."""
    assert format_bytes(2**20 - 1) == "1.0 MiB"
