"""A real S3 endpoint on loopback for tests: moto's HTTP server, not an in-process mock.

Use it from a test module with ``pytest_plugins = ["tests.s3server"]``. Fake credentials
are set with monkeypatch only while a test that asks for ``s3_bucket`` runs; worker
processes started inside such a test inherit them, as a real deployment's workers
inherit their own credentials. The endpoint itself must reach readers through
``storage_options``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import s3fs
from moto.server import ThreadedMotoServer

from tests.helpers import free_port

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/daskbench-test-credentials",
    "AWS_CONFIG_FILE": "/nonexistent/daskbench-test-config",
}


@dataclass(frozen=True)
class S3Bucket:
    name: str
    endpoint: str

    @property
    def url(self) -> str:
        return f"s3://{self.name}"

    def filesystem(self) -> s3fs.S3FileSystem:
        return s3fs.S3FileSystem(endpoint_url=self.endpoint, skip_instance_cache=True)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """URL of a moto S3 server on 127.0.0.1, for the whole session."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def dead_endpoint() -> str:
    """An http URL on 127.0.0.1 that nothing listens on."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def s3_credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Fake AWS credentials in the environment of this test only (and nothing from ~/.aws)."""
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return FAKE_CREDENTIALS


@pytest.fixture
def s3_bucket(moto_endpoint: str, s3_credentials: dict[str, str]) -> S3Bucket:
    """A fresh, empty bucket on the moto server."""
    bucket = S3Bucket(name=f"daskbench-{uuid.uuid4().hex[:12]}", endpoint=moto_endpoint)
    bucket.filesystem().mkdir(bucket.name)
    return bucket
