"""daskbench.text: the shared small helpers, each checked against answers worked out by hand."""

from __future__ import annotations

import math

import pytest

from daskbench.text import (
    WIDTH,
    ZERO_WIDTH_SPACE,
    first_few,
    fit_items,
    flatten,
    format_bytes,
    format_usd,
    inf_or_number,
    json_safe,
    markdown_code,
    markdown_text,
    one_line,
    plural,
    saturation_text,
    slots_count,
    terminal_safe,
    unlinked,
    wrap_items,
    wrap_line,
)


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


@pytest.mark.parametrize(
    ("count", "noun", "many", "expected"),
    [(1, "slot", None, "1 slot"), (2, "slot", None, "2 slots"), (0, "regression", None, "0 regressions"),
     (1, "entry", "entries", "1 entry"), (3, "entry", "entries", "3 entries")],
)  # fmt: skip
def test_plural_puts_the_noun_in_the_plural_unless_the_count_is_one(
    count: int, noun: str, many: str | None, expected: str
) -> None:
    assert plural(count, noun, many) == expected


def test_slots_count_reads_one_slot_and_unlimited_slots() -> None:
    assert (slots_count(1), slots_count(3), slots_count(None)) == ("1 slot", "3 slots", "unlimited slots")


def test_first_few_names_three_items_and_counts_the_rest() -> None:
    assert first_few(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"
    assert first_few(["a", "b", "c"]) == "a, b, c"
    assert first_few(["a", "b", "c", "d"], shown=1) == "a and 3 more"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.17e-05, "$0.000012"), (0.00116, "$0.0012"), (0.01234, "$0.012"), (0.5, "$0.50"), (0.0999, "$0.10"),
     (1.0, "$1.00"), (1234.5, "$1,234.50"), (0.0, "$0")],
)  # fmt: skip
def test_format_usd_gives_two_significant_digits_and_never_an_exponent(value: float, expected: str) -> None:
    assert format_usd(value) == expected


def test_wrap_line_keeps_every_word_whole_and_each_line_within_the_width() -> None:
    """A 150-column line of 11-character figures wraps between figures, later lines indented."""
    words = [f"{n:06d}.5GiB" for n in range(14)]
    lines = wrap_line(" ".join(words), indent="  ")
    assert len(lines) == 2 and all(len(line) <= WIDTH for line in lines)
    assert lines[1].startswith("  ") and " ".join(lines).split() == words


def test_wrap_line_leaves_a_word_longer_than_the_width_whole_on_its_own_line() -> None:
    long = "x" * (WIDTH + 10)
    assert wrap_line(f"a {long} b") == ["a", f"    {long}", "    b"]


def test_fit_items_drops_whole_items_and_says_so_never_cutting_a_figure() -> None:
    items = ["daskbench:", "shuffle[size=small]", "local", "2w/1t", "11.8GiB", "sat=1.1"]
    assert fit_items(items, 50) == "daskbench: shuffle[size=small] local 2w/1t ..."
    assert fit_items(items, 200) == " ".join(items)
    assert len(fit_items(items, 50)) <= 50


def test_wrap_items_breaks_between_items_and_never_inside_one() -> None:
    """Items with spaces inside ("peak/worker 1.1 GiB") stay on one line; each line fits."""
    items = ["daskbench: wordcount", "input=" + "p" * 80, "sat=1.1", "r0", "passed", "1.23s", "peak/worker 1.1 GiB"]
    lines = wrap_items(items)
    assert lines == ["daskbench: wordcount " + items[1] + " sat=1.1 r0", "    passed 1.23s peak/worker 1.1 GiB"]
    assert all(len(line) <= WIDTH for line in lines)


# -- rendering users' text inert: terminal, Markdown, GitHub plain text ---------------------------

#: ESC colour, BEL, an OSC window title, a carriage return, a bidi override, and ordinary unicode.
PLANTED = "a\x1b[31mb\x07\x1b]0;t\x07\rc\u202ed é 日本"


def test_terminal_safe_shows_control_characters_as_escapes_and_keeps_unicode() -> None:
    assert terminal_safe(PLANTED) == "a\\x1b[31mb\\x07\\x1b]0;t\\x07\\rc\\u202ed é 日本"


def test_terminal_safe_escapes_newlines_unless_kept_and_is_idempotent() -> None:
    assert terminal_safe("a\nb\tc") == "a\\nb\\tc" and terminal_safe("a\nb\tc", keep="\n\t") == "a\nb\tc"
    assert terminal_safe(terminal_safe(PLANTED)) == terminal_safe(PLANTED)


def test_unlinked_breaks_mentions_and_issue_references_with_a_zero_width_space() -> None:
    z = ZERO_WIDTH_SPACE
    assert (
        unlinked("@octocat fixed #12 in org/repo#3, mail a@b\x07")
        == f"@{z}octocat fixed #{z}12 in org/repo#{z}3, mail a@{z}b\\x07"
    )


def test_markdown_text_escapes_html_markup_and_mentions() -> None:
    z = ZERO_WIDTH_SPACE
    shown = markdown_text("<img src=x> & *b* [l](u) `c` @team #4 \x1b")
    assert shown == f"&lt;img src=x&gt; &amp; \\*b\\* \\[l\\](u) \\`c\\` @{z}team \\#{z}4 \\\\x1b"


def test_markdown_code_fences_past_the_backticks_it_holds() -> None:
    assert markdown_code("a<b>c") == "`a<b>c`"
    assert markdown_code("x``y") == "```x``y```"
    assert markdown_code("`x") == "`` `x ``"
    assert markdown_code("@me\x07") == f"`@{ZERO_WIDTH_SPACE}me\\x07`"
