"""`daskbench data prepare` writes inputs once, reports each dataset, and refuses bad locations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from daskbench.cli import EXIT_ERROR, EXIT_OK, main
from daskbench.workloads.datasets import MANIFEST, dataset_name

if TYPE_CHECKING:
    from tests.s3server import S3Bucket

pytest_plugins = ["tests.s3server"]  # fixtures: moto_endpoint, s3_credentials, s3_bucket


def test_data_prepare_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    """--help works and names the options."""
    with pytest.raises(SystemExit) as exited:
        main(["data", "prepare", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--data", "--s3-endpoint", "--size", "--workload"))


def test_data_prepare_writes_then_reuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first run writes each dataset with its manifest; the second reuses them."""
    args = ["data", "prepare", "--size", "tiny", "--data", str(tmp_path)]
    assert main(args) == EXIT_OK
    first = capsys.readouterr().out
    for workload in ("joins", "wordcount"):
        name = dataset_name(workload, "tiny", 0)
        manifest = json.loads((tmp_path / name / MANIFEST).read_text())
        assert manifest["workload"] == workload and manifest["files"]
        assert f"wrote  {name}: " in first
    assert str(tmp_path) in first.splitlines()[0]
    assert main(args) == EXIT_OK
    second = capsys.readouterr().out
    assert second.count("reused ") == 2 and "wrote" not in second


def test_data_prepare_one_workload_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--workload limits the datasets; DASKBENCH_DATA and DASKBENCH_SIZE are honoured."""
    monkeypatch.setenv("DASKBENCH_DATA", str(tmp_path))
    monkeypatch.setenv("DASKBENCH_SIZE", "tiny")
    assert main(["data", "prepare", "--workload", "wordcount"]) == EXIT_OK
    assert [p.name for p in tmp_path.iterdir()] == [dataset_name("wordcount", "tiny", 0)]
    assert "wordcount-tiny-0-" in capsys.readouterr().out


def test_data_prepare_into_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --data that is a file is a one-line error and exit code 2."""
    path = tmp_path / "file"
    path.write_text("x")
    assert main(["data", "prepare", "--size", "tiny", "--data", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --data ") and "is a file" in err and "\n" not in err


def test_data_prepare_to_s3(s3_bucket: S3Bucket, capsys: pytest.CaptureFixture[str]) -> None:
    """Inputs go to s3://bucket/prefix through --s3-endpoint, manifest last."""
    data = f"{s3_bucket.url}/prefix"
    args = ["data", "prepare", "--size", "tiny", "--workload", "joins", "--data", data]
    assert main([*args, "--s3-endpoint", s3_bucket.endpoint]) == EXIT_OK
    name = dataset_name("joins", "tiny", 0)
    assert s3_bucket.filesystem().exists(f"{s3_bucket.name}/prefix/{name}/{MANIFEST}")
    assert f"in {data}" in capsys.readouterr().out
