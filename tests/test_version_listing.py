"""The versions an index offers (`daskbench.envs.index`), listed with whatever installer is here.

pip is this venv's own (23.2.1 where ``ci/setup`` built it: no ``pip index versions --json``, which arrived
in pip 25.1), run for real against a local PEP 503 folder index of stand-in wheels; the simple API is read
from that folder and from a loopback HTTP index that answers PEP 691 JSON or HTML as asked, refuses a
project it does not have (404), fails (500) or wants a password.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path

import pytest
from packaging.version import Version

from daskbench import envs
from daskbench.envs import index as listing
from daskbench.errors import DaskbenchError
from testing.standin import standin_wheel
from tests.helpers import free_port

VERSIONS = ["1.0", "1.1", "1.2"]
YANKED = "1.3"  # on the loopback index, yanked: listed by neither pip nor the simple API reader
OLD_PIP = Version(metadata.version("pip")) < Version(listing.PIP_JSON)


@pytest.fixture(scope="module")
def folder_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PEP 503 index as a folder: ``simple/standin/index.html`` linking the wheels (and a 2.0rc1)."""
    root = tmp_path_factory.mktemp("index")
    (root / "files").mkdir()
    wheels = [standin_wheel(root / "files", version, 0.0) for version in [*VERSIONS, "2.0rc1"]]
    page = root / "simple" / "standin"
    page.mkdir(parents=True)
    anchors = "".join(f'<a href="../../files/{w.name}#sha256=00">{w.name}</a><br>\n' for w in wheels)
    (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{anchors}</body></html>\n")
    return root / "simple"


class _Index(BaseHTTPRequestHandler):
    """``/simple/standin/`` as JSON (PEP 691, with PEP 700 versions) or HTML, as the Accept header prefers,
    1.3 yanked;
    ``/private/...`` the same behind user ``reader``, password ``s3cret``; ``/broken/...`` a 500."""

    def do_GET(self) -> None:
        if self.path.startswith("/broken/"):
            self._send(500, "text/plain", b"boom")
            return
        if self.path.startswith("/private/"):
            expected = "Basic " + base64.b64encode(b"reader:s3cret").decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, "text/plain", b"who are you")
                return
        if not self.path.rstrip("/").endswith("/simple/standin"):
            self._send(404, "text/plain", b"no such project")
            return
        names = [(f"standin-{version}-py3-none-any.whl", version == YANKED) for version in [*VERSIONS, YANKED]]
        if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "").split(",")[0]:
            files = [{"filename": name, "url": f"/files/{name}", "hashes": {}, "yanked": gone} for name, gone in names]
            page = {"meta": {"api-version": "1.1"}, "name": "standin", "files": files, "versions": [*VERSIONS, YANKED]}
            self._send(200, "application/vnd.pypi.simple.v1+json", json.dumps(page).encode())
        else:
            gone = ' data-yanked="broken"'
            anchors = "".join(f'<a href="/files/{name}"{gone if y else ""}>{name}</a>' for name, y in names)
            self._send(200, "text/html", f"<html><body>{anchors}</body></html>".encode())

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A loopback index; its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


# -- pip, for real --------------------------------------------------------------------------------


def test_this_pip_lists_a_local_folder_index(folder_index: Path) -> None:
    """``pip index versions`` of this venv's pip (the plain "Available versions:" line on pip before 25.1,
    --json from it), through a file:// index: the releases, no pre-release."""
    found = envs.pip_versions("standin", envs.Index(index_url=str(folder_index)))
    assert found == set(VERSIONS)


@pytest.mark.skipif(not OLD_PIP, reason="this pip has pip index versions --json")
def test_an_old_pip_asked_for_json_is_not_blamed_on_the_index(folder_index: Path) -> None:
    """pip 23.2.1 says "no such option: --json": that is this pip's missing option, so the listing falls back
    to the simple API, and the versions still come; no error names the index."""
    index = envs.Index(index_url=str(folder_index))
    assert envs.pip_versions("standin", index, as_json=True) is None
    assert envs.available_versions("standin", index, installer="pip") == VERSIONS


def test_pip_lists_a_loopback_index_it_reads_as_json(server: str) -> None:
    assert envs.pip_versions("standin", envs.Index(index_url=f"{server}/simple")) == set(VERSIONS)
    assert envs.pip_versions("nosuch", envs.Index(index_url=f"{server}/simple")) == set()


# -- the simple API, read directly ------------------------------------------------------------------


def test_a_folder_index_is_read_without_any_installer(folder_index: Path, tmp_path: Path) -> None:
    """``NAME/index.html`` of a file:// index, or (without one) the file names in ``NAME/``."""
    assert envs.simple_versions("standin", envs.Index(index_url=str(folder_index))) == set(VERSIONS)
    bare = tmp_path / "simple" / "standin"
    bare.mkdir(parents=True)
    standin_wheel(bare, "3.0", 0.0)
    assert envs.simple_versions("standin", envs.Index(index_url=(tmp_path / "simple").as_uri())) == {"3.0"}


def test_an_index_is_read_as_pep_691_json_when_it_speaks_it_and_as_html_otherwise(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = envs.Index(index_url=f"{server}/simple")
    assert envs.simple_versions("standin", index) == set(VERSIONS)
    monkeypatch.setattr(listing, "_ACCEPT", "text/html")  # an index that answers HTML only
    assert envs.simple_versions("standin", index) == set(VERSIONS)


def test_with_uv_the_versions_come_from_the_index_uv_would_ask(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv lists nothing itself: without --index-url, $UV_DEFAULT_INDEX names the index it installs from."""
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"{server}/simple")
    assert envs.available_versions("standin", envs.Index(), installer="uv") == VERSIONS


def test_a_project_the_index_does_not_have_has_no_versions(server: str) -> None:
    assert envs.simple_versions("nosuch", envs.Index(index_url=f"{server}/simple")) == set()


def test_a_password_in_the_index_url_is_sent_and_never_shown(server: str) -> None:
    host = server.removeprefix("http://")
    assert envs.simple_versions("standin", envs.Index(index_url=f"http://reader:s3cret@{host}/private/simple")) == set(
        VERSIONS
    )
    with pytest.raises(DaskbenchError) as said:
        envs.simple_versions("standin", envs.Index(index_url=f"http://reader:wrong@{host}/private/simple"))
    assert str(said.value) == (
        f"could not list the versions of standin on http://reader:***@{host}/private/simple/standin/: "
        "HTTP 401 Unauthorized"
    )


def test_an_index_that_fails_or_does_not_answer_is_one_line_naming_it(server: str) -> None:
    with pytest.raises(DaskbenchError) as failed:
        envs.simple_versions("standin", envs.Index(index_url=f"{server}/broken/simple"))
    assert str(failed.value) == (
        f"could not list the versions of standin on {server}/broken/simple/standin/: HTTP 500 Internal Server Error"
    )
    closed = f"http://127.0.0.1:{free_port()}/simple"
    with pytest.raises(DaskbenchError) as unreachable:
        envs.simple_versions("standin", envs.Index(index_url=closed))
    assert str(unreachable.value).startswith(f"could not list the versions of standin on {closed}/standin/: ")
    assert "refused" in str(unreachable.value).lower()
