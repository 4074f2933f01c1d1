"""Word count over text files of uneven sizes (the dask-memusage example)."""

import pytest

from daskbench import inputs
from daskbench.workloads import wordcount

pytestmark = pytest.mark.benchmark


def test_wordcount(measure, size, data_location):
    """Total, distinct and top-10 words (overall and per file) equal the generator's counts."""
    corpus = measure.prepare(lambda: inputs.prepare(data_location, "wordcount", size))
    result = measure(
        lambda: wordcount.count_words_for(size, corpus.url, corpus.storage_options),
        name="wordcount",
        params={"size": size, **inputs.input_params(data_location, corpus)},
    )
    assert result == wordcount.expected(size, seed=0)
