"""Data locations are checked up front; inputs are prepared once, reused, and redone if damaged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from distributed import Client, LocalCluster

from daskbench import inputs
from daskbench.errors import DaskbenchError
from daskbench.inputs import DataLocation, resolve_data_location
from daskbench.workloads import datasets, joins, wordcount
from daskbench.workloads.datasets import MANIFEST

if TYPE_CHECKING:
    from tests.s3server import S3Bucket

pytest_plugins = ["tests.s3server"]  # fixtures: moto_endpoint, s3_credentials, s3_bucket


@pytest.fixture
def local(tmp_path: Path) -> DataLocation:
    return resolve_data_location(str(tmp_path / "data"), None)


# -- local locations ----------------------------------------------------------------------


def test_local_location_is_created_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing relative directory is created and reported as an absolute path."""
    monkeypatch.chdir(tmp_path)
    location = resolve_data_location("results/data/", None)
    assert location == DataLocation(root=str(tmp_path / "results" / "data"), kind="local", storage_options={})
    assert (tmp_path / "results" / "data").is_dir()


def test_local_location_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    """A --data path that is a file gives a one-line error naming it and the fix."""
    path = tmp_path / "data.txt"
    path.write_text("not a directory")
    with pytest.raises(DaskbenchError, match=r"data\.txt is a file, not a directory; pass a directory"):
        resolve_data_location(str(path), None)


def test_local_location_under_a_file_cannot_be_created(tmp_path: Path) -> None:
    """A directory that cannot be created is an error naming the location."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(DaskbenchError, match="cannot be created"):
        resolve_data_location(str(tmp_path / "file" / "data"), None)


def test_unsupported_scheme_is_an_error() -> None:
    """Only local directories and s3:// are accepted."""
    with pytest.raises(DaskbenchError, match="gs:// is not supported"):
        resolve_data_location("gs://bucket/prefix", None)


# -- preparation --------------------------------------------------------------------------


def test_prepare_writes_files_then_manifest_under_a_content_address(local: DataLocation) -> None:
    """The dataset directory is named workload-size-seed-hash and its manifest lists every file."""
    prepared = inputs.prepare(local, "wordcount", "tiny")
    name = datasets.dataset_name("wordcount", "tiny", 0)
    assert prepared.url == f"{local.root}/{name}" and not prepared.reused
    assert name.startswith("wordcount-tiny-0-") and len(name.rsplit("-", 1)[1]) == 10
    manifest = json.loads((Path(prepared.url) / MANIFEST).read_text())
    on_disk = {p.name: p.stat().st_size for p in Path(prepared.url).glob("*.txt")}
    assert manifest["files"] == on_disk == prepared.files
    assert prepared.input_bytes == sum(on_disk.values())


def test_prepare_reuses_a_complete_dataset(local: DataLocation) -> None:
    """A second preparation writes nothing: same files, manifest untouched."""
    first = inputs.prepare(local, "joins", "tiny")
    manifest = Path(first.url) / MANIFEST
    stamp = manifest.stat().st_mtime_ns
    second = inputs.prepare(local, "joins", "tiny")
    assert second.reused and second.files == first.files
    assert manifest.stat().st_mtime_ns == stamp


@pytest.mark.parametrize("damage", ["delete a file", "truncate a file", "delete the manifest", "corrupt the manifest"])
def test_prepare_redoes_a_damaged_dataset(local: DataLocation, damage: str) -> None:
    """A missing or resized file, or a missing or unreadable manifest, means the dataset is rewritten."""
    first = inputs.prepare(local, "wordcount", "tiny")
    root = Path(first.url)
    victim = root / "small-0001.txt"
    if damage == "delete a file":
        victim.unlink()
    elif damage == "truncate a file":
        victim.write_bytes(victim.read_bytes()[:10])
    elif damage == "delete the manifest":
        (root / MANIFEST).unlink()
    else:
        (root / MANIFEST).write_text('{"files": ')
    again = inputs.prepare(local, "wordcount", "tiny")
    assert not again.reused and again.files == first.files
    assert victim.stat().st_size == first.files["small-0001.txt"]


def test_changed_generator_parameters_give_a_new_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing a size table changes the content address, so old data is never reused for it."""
    before = datasets.dataset_name("joins", "tiny", 0)
    monkeypatch.setitem(joins.SIZES, "tiny", replace(joins.SIZES["tiny"], float_columns=3))
    assert datasets.dataset_name("joins", "tiny", 0) != before
    assert datasets.dataset_name("joins", "tiny", 1) != datasets.dataset_name("joins", "tiny", 0)


def test_input_params_name_the_kind_and_bytes_of_the_folders_read(local: DataLocation) -> None:
    """input_bytes counts only the folders a join reads."""
    tables = inputs.prepare(local, "joins", "tiny")
    both = inputs.input_params(local, tables, "left", "right")
    assert both["input"] == "local"
    assert both["input_bytes"] == sum(n for p, n in tables.files.items() if not p.startswith("small/"))
    assert inputs.input_params(local, tables)["input_bytes"] == tables.input_bytes


# -- S3 -----------------------------------------------------------------------------------


def test_s3_location_carries_the_endpoint_and_no_secrets(s3_bucket: S3Bucket) -> None:
    """An existing bucket resolves; storage_options hold the endpoint only."""
    location = resolve_data_location(f"{s3_bucket.url}/some/prefix/", s3_bucket.endpoint)
    assert location == DataLocation(
        root=f"{s3_bucket.url}/some/prefix", kind="s3", storage_options={"endpoint_url": s3_bucket.endpoint}
    )


def test_s3_missing_bucket_is_an_error_naming_it(s3_bucket: S3Bucket) -> None:
    """A bucket that does not exist gives a one-line error with its name and the fix."""
    with pytest.raises(DaskbenchError, match=r"bucket 'no-such-bucket' does not exist.*create it"):
        resolve_data_location("s3://no-such-bucket/prefix", s3_bucket.endpoint)


def test_s3_unreachable_endpoint_is_an_error(s3_credentials: dict[str, str], dead_endpoint: str) -> None:
    """An endpoint nobody listens on gives an error that points at --s3-endpoint."""
    with pytest.raises(DaskbenchError, match=f"cannot reach the S3 endpoint at {dead_endpoint}.*--s3-endpoint"):
        resolve_data_location("s3://bucket/prefix", dead_endpoint)


def test_s3_missing_credentials_is_an_error(s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """No credentials anywhere gives an error that says how to provide them."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(DaskbenchError, match="no AWS credentials found; set AWS_ACCESS_KEY_ID"):
        resolve_data_location(f"{s3_bucket.url}/prefix", s3_bucket.endpoint)


def test_s3_inputs_are_prepared_once_and_read_by_workers(s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs written to S3 are reused, and workers read them with the endpoint from storage_options."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    location = resolve_data_location(f"{s3_bucket.url}/inputs", s3_bucket.endpoint)
    corpus = inputs.prepare(location, "wordcount", "tiny")
    tables = inputs.prepare(location, "joins", "tiny")
    assert corpus.url.startswith(f"{s3_bucket.url}/inputs/wordcount-tiny-0-")
    assert inputs.prepare(location, "wordcount", "tiny").reused
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        counted = client.compute(wordcount.count_words_for("tiny", corpus.url, corpus.storage_options)).result()
        joined = client.compute(joins.join_big(tables.url, "p2p", tables.storage_options)).result()
    assert counted == wordcount.expected("tiny", seed=0)
    assert int(joined["rows"]) == joins.expected("tiny", "big")["rows"]
    assert int(joined["checksum"]) == joins.expected("tiny", "big")["checksum"]
