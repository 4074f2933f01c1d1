"""DataFrame joins: large-large with a shuffle, and large-small."""

import pytest

from daskbench import inputs
from daskbench.workloads import joins

pytestmark = pytest.mark.benchmark


def _assert_matches(result, expected):
    assert int(result["rows"]) == expected["rows"]
    assert int(result["checksum"]) == expected["checksum"]


@pytest.mark.parametrize("shuffle", joins.SHUFFLE_METHODS)
def test_join_big(measure, size, data_location, shuffle):
    """An inner join of two large frames on a unique key: row count and checksum are exact."""
    tables = measure.prepare(lambda: inputs.prepare(data_location, "joins", size))
    result = measure(
        lambda: joins.join_big(tables.url, shuffle, tables.storage_options),
        name="join_big",
        params={"size": size, "shuffle": shuffle, **inputs.input_params(data_location, tables, "left", "right")},
    )
    _assert_matches(result, joins.expected(size, "big"))


def test_join_big_small(measure, size, data_location):
    """A large frame joined with a one-partition small frame: row count and checksum are exact."""
    tables = measure.prepare(lambda: inputs.prepare(data_location, "joins", size))
    result = measure(
        lambda: joins.join_big_small(tables.url, tables.storage_options),
        name="join_big_small",
        params={"size": size, **inputs.input_params(data_location, tables, "left", "small")},
    )
    _assert_matches(result, joins.expected(size, "big_small"))
