"""The workloads compute the right answers at size tiny, checked against numpy and pandas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dask
import fsspec
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from daskbench.workloads import arrays, joins, ocean, registry, wordcount

SYNC = {"scheduler": "sync"}


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A real two-process cluster of one thread each (p2p needs distributed)."""
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    wordcount.write_corpus(fsspec.filesystem("file"), str(root), "tiny", seed=0)
    return root


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    joins.write_tables(fsspec.filesystem("file"), str(root), "tiny", seed=0)
    return root


# -- ocean --------------------------------------------------------------------------------


def _numpy_anomalies(values: np.ndarray, groups: int) -> np.ndarray:
    day = np.arange(len(values)) % groups
    climatology = np.stack([values[day == g].mean(axis=0) for g in range(groups)])
    return values - climatology[day]


def test_ocean_groups_are_interleaved_along_time() -> None:
    """Consecutive time steps belong to different groups, cycling through all of them."""
    day = ocean.field("tiny")["day"].values
    groups = ocean.SIZES["tiny"].groups
    assert list(day[: 2 * groups]) == list(range(groups)) * 2


def test_ocean_anomalies_and_their_mean_equal_numpy() -> None:
    """Anomalies equal numpy's field minus group means, and their time mean is zero."""
    with dask.config.set(SYNC):
        values = ocean.field("tiny", seed=3).values
        anomalies = ocean.anomalies(ocean.field("tiny", seed=3)).values
        result = ocean.anomaly("tiny", seed=3).values
    expected = _numpy_anomalies(values, ocean.SIZES["tiny"].groups)
    np.testing.assert_allclose(anomalies, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result, expected.mean(axis=0), atol=1e-12)
    assert result.shape == ocean.SIZES["tiny"].shape[1:]


def test_ocean_anomaly_is_lazy_and_chunked_along_time() -> None:
    """The workload returns a dask-backed result whose input has one time step per chunk."""
    assert dask.is_dask_collection(ocean.anomaly("tiny"))
    assert set(ocean.field("tiny").chunks[0]) == {ocean.SIZES["tiny"].time_chunk}


# -- arrays -------------------------------------------------------------------------------


def test_transpose_mean_equals_numpy() -> None:
    """(x + x.T).mean(axis=0) equals numpy on the same random matrix."""
    with dask.config.set(SYNC):
        x = arrays.random_array(arrays.TRANSPOSE_SIZES["tiny"], seed=5).compute()
        result = arrays.transpose_mean("tiny", seed=5).compute()
    np.testing.assert_allclose(result, (x + x.T).mean(axis=0), rtol=1e-12)


def test_tree_sum_std_equals_numpy_with_a_tree_of_reductions() -> None:
    """Sum and std equal numpy's, and the graph reduces in several levels (split_every)."""
    lazy = arrays.tree_sum_std("tiny", seed=5)
    with dask.config.set(SYNC):
        x = arrays.random_array(arrays.TREE_SIZES["tiny"], seed=5).compute()
        total, std = lazy.compute()
    assert total == pytest.approx(x.sum(), rel=1e-12)
    assert std == pytest.approx(x.std(), rel=1e-12)
    layers = [name for name in lazy.__dask_graph__().layers if "sum" in name]
    assert len(layers) >= 2, layers


# -- word count ---------------------------------------------------------------------------


def test_wordcount_equals_the_generators_known_counts(corpus: Path) -> None:
    """Totals, distinct words and top-10 words overall and per file equal the generator's."""
    with dask.config.set(SYNC):
        result = wordcount.count_words_for("tiny", str(corpus)).compute()
    expected = wordcount.expected("tiny", seed=0)
    assert result == expected
    assert result["words"] > 50_000
    assert len(result["per_file"]) == len(list(corpus.glob("*.txt")))


def test_wordcount_files_are_uneven(corpus: Path) -> None:
    """A few large files and many small ones of varying size."""
    nbytes = sorted(path.stat().st_size for path in corpus.glob("*.txt"))
    spec = wordcount.SIZES["tiny"]
    assert len(nbytes) == spec.large_files + spec.small_files
    assert nbytes[-1] > 5 * nbytes[len(nbytes) // 2]
    assert nbytes[-1] > spec.blocksize > 2 * nbytes[0]  # some files split into blocks, others read whole
    assert len(set(nbytes)) > len(nbytes) // 2


def test_wordcount_text_needs_normalising(corpus: Path) -> None:
    """The text holds capitals and punctuation that normalisation removes."""
    text = (corpus / "large-000.txt").read_text()
    assert any(c in text for c in ",.“”()") and any(c.isupper() for c in text)
    assert wordcount.normalise("“Hello”, (world). --") == ["hello", "world"]


def test_wordcount_corpus_is_deterministic_from_seed(corpus: Path, tmp_path: Path) -> None:
    """The same seed writes byte-identical files; another seed writes different text."""
    fs = fsspec.filesystem("file")
    wordcount.write_corpus(fs, str(tmp_path / "same"), "tiny", seed=0)
    wordcount.write_corpus(fs, str(tmp_path / "other"), "tiny", seed=1)
    name = "small-0003.txt"
    assert (tmp_path / "same" / name).read_bytes() == (corpus / name).read_bytes()
    assert (tmp_path / "other" / name).read_bytes() != (corpus / name).read_bytes()


def test_vocabulary_is_distinct_and_zipf_weights_fall() -> None:
    """The invented words are distinct and the most frequent are the shortest."""
    words = wordcount.vocabulary(500, seed=2)
    p = wordcount.zipf_probabilities(500)
    assert len(set(words)) == 500 and all(w.isalpha() and w.islower() for w in words)
    assert len(words[0]) <= len(words[-1])
    assert np.all(np.diff(p) < 0) and p.sum() == pytest.approx(1.0)


# -- joins --------------------------------------------------------------------------------


def _pandas_summary(left: pd.DataFrame, right: pd.DataFrame) -> pd.Series:
    return joins.summarise_frame(left.merge(right, on="key", how="inner")).iloc[0]


@pytest.mark.parametrize("shuffle", joins.SHUFFLE_METHODS)
def test_join_big_equals_pandas(client: Client, tables: Path, shuffle: str) -> None:
    """The shuffled join's rows and checksums equal pandas on the same Parquet files."""
    lazy = joins.join_big(str(tables), shuffle)
    result = client.compute(lazy).result()
    expected = _pandas_summary(pd.read_parquet(tables / "left"), pd.read_parquet(tables / "right"))
    assert int(result["rows"]) == expected["rows"] == joins.expected("tiny", "big")["rows"]
    assert int(result["checksum"]) == expected["checksum"] == joins.expected("tiny", "big")["checksum"]
    assert result["float_total"] == pytest.approx(expected["float_total"], rel=1e-12)


def test_join_big_uses_the_requested_shuffle_method(tables: Path) -> None:
    """p2p puts p2p shuffle tasks in the graph; tasks does not."""
    keys = {method: str(list(joins.join_big(str(tables), method).__dask_graph__())) for method in ("tasks", "p2p")}
    assert "p2p" in keys["p2p"] and "p2p" not in keys["tasks"]


def test_join_big_small_equals_pandas(client: Client, tables: Path) -> None:
    """The join with the one-partition small side equals pandas and the generator."""
    result = client.compute(joins.join_big_small(str(tables))).result()
    expected = _pandas_summary(pd.read_parquet(tables / "left"), pd.read_parquet(tables / "small"))
    assert int(result["rows"]) == expected["rows"] == joins.expected("tiny", "big_small")["rows"]
    assert int(result["checksum"]) == expected["checksum"]
    assert result["float_total"] == pytest.approx(expected["float_total"], rel=1e-12)


def test_join_keys_are_unique_and_scattered(tables: Path) -> None:
    """Keys never repeat, and every left file spans the whole key range (a join must shuffle)."""
    left = pd.read_parquet(tables / "left")
    assert left["key"].is_unique
    first = pd.read_parquet(next((tables / "left").glob("*.parquet")))
    assert first["key"].max() - first["key"].min() > 0.9 * (left["key"].max() - left["key"].min())


def test_unknown_shuffle_method_is_refused(tables: Path) -> None:
    """A shuffle method other than tasks or p2p is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="tasks, p2p"):
        joins.join_big(str(tables), "disk")  # type: ignore[arg-type]


# -- sizes --------------------------------------------------------------------------------


def test_sizes_grow_from_tiny_to_large() -> None:
    """Each workload's input grows with its size."""
    by_workload: dict[str, list[int]] = {}
    for row in registry.describe_all():
        by_workload.setdefault(row["workload"], []).append(row["input_bytes"])
    assert all(values == sorted(values) and len(set(values)) == 4 for values in by_workload.values())


def test_unknown_size_is_refused() -> None:
    """An unknown size is a ValueError listing the four sizes."""
    with pytest.raises(ValueError, match="tiny, small, medium, large"):
        ocean.anomaly("huge")
