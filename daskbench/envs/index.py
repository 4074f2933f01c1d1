"""Where the installer looks (`Index`: an index URL, folders of wheels) and the versions it offers there.

`available_versions` reads a local folder's file names, and asks an index the way the installer that
builds would see it: with pip, ``pip index versions`` (pip's own configuration honoured; ``--json`` from
pip 25.1, the plain "Available versions:" line before it); with uv (which lists nothing itself), or a pip
without ``pip index`` (before 21.2), the index's simple API read directly (`simple_versions`: PEP 691 JSON
from an index that speaks it, the PEP 503 HTML form else, ``file://`` folders too). A failure is one line
naming the index; an installer's missing option is never blamed on the index.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from daskbench.envs.output import first_error
from daskbench.envs.specs import normalized
from daskbench.errors import DaskbenchError
from daskbench.redact import redact_url


@dataclass(frozen=True)
class Index:
    """Where the installer looks: ``index_url`` replaces its default index, ``find_links`` adds folders
    (or pages) of wheels, ``no_index`` leaves only those."""

    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def check(self) -> None:
        """One line for a local folder that does not exist, before anything is built."""
        for flag, where in (("--index-url", self.index_url), *(("--find-links", link) for link in self.find_links)):
            if where and "://" not in where and not Path(where).expanduser().exists():
                raise DaskbenchError(f"{flag} {where}: no such folder; give a folder of wheels or a URL")
        if self.no_index and not self.find_links:
            raise DaskbenchError("--no-index leaves no place to install from; add --find-links FOLDER")

    def args(self) -> list[str]:
        """The same flags for uv and pip."""
        found = ["--index-url", _as_url(self.index_url)] if self.index_url else []
        for link in self.find_links:
            found += ["--find-links", link if "://" in link else str(Path(link).expanduser().absolute())]
        return found + (["--no-index"] if self.no_index else [])

    def describe(self, tool: str) -> str:
        """Which index was asked, for an error line."""
        places = (
            [] if self.no_index else [self.index_url or f"{tool}'s configured index (default https://pypi.org/simple)"]
        )
        return ", ".join([*places, *(f"--find-links {link}" for link in self.find_links)])


def _as_url(where: str) -> str:
    """An index given as a local folder becomes a ``file://`` URL."""
    return where if "://" in where else Path(where).expanduser().absolute().as_uri()


# -- the versions an index has ----------------------------------------------------------------

#: Where uv and pip look when no --index-url is given (their own environment variables, then PyPI).
DEFAULT_INDEX = "https://pypi.org/simple"
_INDEX_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
#: PEP 691: JSON when the index speaks it, the HTML form otherwise.
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
#: The first pip with ``pip index versions --json``; ``pip index`` itself arrived in 21.2.
PIP_JSON = "25.1"
PIP_INDEX = "21.2"


def available_versions(name: str, index: Index, installer: str = "auto") -> list[str]:
    """Every release of ``name`` that ``index`` offers, oldest first (`packaging.version` order): read
    off the file names in local ``--find-links`` folders, and asked of an index as ``installer`` sees it
    (a file name no version can be read from, as old uploads have, is left out)."""
    from packaging.version import InvalidVersion, Version

    found: set[str] = set()
    for link in index.find_links:
        if "://" not in link:
            found |= folder_versions(Path(link).expanduser(), name)
    if not index.no_index or any("://" in link for link in index.find_links):
        found |= index_versions(name, index, installer)
    valid = []
    for version in found:
        try:
            valid.append((Version(version), version))
        except InvalidVersion:
            continue
    return [version for _, version in sorted(valid)]


def folder_versions(folder: Path, name: str) -> set[str]:
    """The versions of ``name`` among the wheels and source archives in ``folder``."""
    return {version for version in (_file_version(path.name, name) for path in _files(folder)) if version}


def _files(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() else []


def _file_version(filename: str, name: str) -> str | None:
    """The version of a wheel or source archive of ``name`` named ``filename``, else None."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        parsed = parse_wheel_filename(filename) if filename.endswith(".whl") else parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None
    return str(parsed[1]) if normalized(parsed[0]) == normalized(name) else None


def index_versions(name: str, index: Index, installer: str = "auto") -> set[str]:
    """The releases of ``name`` an index offers (empty: none): through pip when pip builds here and has
    ``pip index``, else read off the index's simple API."""
    if _lister(installer) == "pip":
        found = pip_versions(name, index)
        if found is not None:
            return found
    return simple_versions(name, index)


def _lister(installer: str) -> str:
    """``pip`` when the environments are built with pip (asked, or no uv here), else ``simple``."""
    if installer in ("pip", "uv"):
        return "pip" if installer == "pip" else "simple"
    return "simple" if find_uv() is not None else "pip"


def find_uv() -> tuple[str, ...] | None:
    """The command that runs uv: the one on PATH, else ``python -m uv``."""
    found = shutil.which("uv")
    if found:
        return (found,)
    return (sys.executable, "-m", "uv") if importlib.util.find_spec("uv") is not None else None


def _pip_version() -> str | None:
    """This interpreter's pip version (the pip `pip_versions` runs), or None without one."""
    from importlib import metadata

    if importlib.util.find_spec("pip") is None:
        return None
    try:
        return metadata.version("pip")
    except metadata.PackageNotFoundError:
        return None


def pip_versions(name: str, index: Index, *, as_json: bool | None = None) -> set[str] | None:
    """``pip index versions`` of ``name`` (its ``--json`` when this pip has it, or ``as_json``); None when
    this pip cannot list (none, older than 21.2, or an option it lacks): then the simple API is read."""
    from packaging.version import Version

    version = _pip_version()
    if version is None or Version(version) < Version(PIP_INDEX):
        return None
    as_json = Version(version) >= Version(PIP_JSON) if as_json is None else as_json
    command = [sys.executable, "-m", "pip", "index", "versions", "--disable-pip-version-check", *index.args(), name]
    done = subprocess.run(
        [*command, *(["--json"] if as_json else [])],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    said = done.stderr.lower()
    if done.returncode != 0:
        if "no such option" in said or "unknown command" in said:
            return None  # this pip's missing option, not the index's fault
        if "no matching distribution" in said:
            return set()
        raise DaskbenchError(
            f"pip could not list the versions of {name} on {index.describe('pip')}: {first_error(done.stderr)}"
        )
    return _pip_json(done.stdout) if as_json else _pip_plain(done.stdout)


def _pip_json(output: str) -> set[str]:
    return {str(version) for version in json.loads(output).get("versions", [])}


def _pip_plain(output: str) -> set[str]:
    """The versions of pip's plain output: ``NAME (LATEST)`` then ``Available versions: A, B, ...``."""
    for line in output.splitlines():
        if line.strip().lower().startswith("available versions:"):
            return {part.strip() for part in line.split(":", 1)[1].split(",") if part.strip()}
    return set()


# -- the simple API, read directly ----------------------------------------------------------------


def index_urls(index: Index) -> list[str]:
    """The indexes uv (and pip) would ask: ``--index-url``, else their environment's, else PyPI; and the
    ``--find-links`` pages given as URLs. None of the first kind with ``--no-index``."""
    chosen = index.index_url or next((os.environ[v] for v in _INDEX_VARIABLES if os.environ.get(v)), DEFAULT_INDEX)
    indexes = [] if index.no_index else [_as_url(chosen)]
    return indexes + [link for link in index.find_links if "://" in link]


def simple_versions(name: str, index: Index) -> set[str]:
    """The releases of ``name`` on every index of `index_urls`, read off their simple API pages (PEP 691
    JSON, or PEP 503 HTML anchors; a ``file://`` index is a folder: ``NAME/index.html``, else the files in
    ``NAME/``); as pip lists them: no pre-release, no version whose files are all yanked."""
    from packaging.version import InvalidVersion, Version

    found: set[str] = set()
    for url in index_urls(index):
        is_page = url in index.find_links
        found |= _page_versions(url if is_page else f"{url.rstrip('/')}/{normalized(name)}/", name, url)
    releases = set()
    for version in found:
        try:
            if not Version(version).is_prerelease:
                releases.add(version)
        except InvalidVersion:
            continue
    return releases


def _page_versions(url: str, name: str, index: str) -> set[str]:
    """The versions of ``name`` one simple page (or a find-links page) offers; empty when the index has no
    such project; one line naming ``index`` when it cannot be read."""
    if url.startswith("file:"):
        return _folder_page(Path(unquote(urlsplit(url).path)), name)
    request, shown = _request(url)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            kind = answer.headers.get_content_type()
            body = answer.read().decode(answer.headers.get_content_charset() or "utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return set()
        raise DaskbenchError(
            f"could not list the versions of {name} on {shown}: HTTP {error.code} {error.reason}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise DaskbenchError(f"could not list the versions of {name} on {shown}: {reason}") from None
    if kind == "application/vnd.pypi.simple.v1+json":
        return _json_versions(body, name, shown)
    return _linked_versions(body, name)


def _request(url: str) -> tuple[urllib.request.Request, str]:
    """A GET of ``url`` asking for JSON first, credentials in the URL sent as basic auth; the URL as shown."""
    parts = urlsplit(url)
    headers = {"Accept": _ACCEPT, "User-Agent": "daskbench"}
    if parts.username is not None:
        token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        host = parts.hostname or ""
        parts = parts._replace(netloc=host + (f":{parts.port}" if parts.port else ""))
    return urllib.request.Request(urlunsplit(parts), headers=headers), redact_url(url)


def _json_versions(body: str, name: str, shown: str) -> set[str]:
    """The versions in the names of the page's files that are not yanked (as pip lists them)."""
    try:
        page = json.loads(body)
    except ValueError:
        raise DaskbenchError(f"could not list the versions of {name} on {shown}: its answer is not JSON") from None
    entries = [entry for entry in page.get("files", []) if isinstance(entry, dict) and not entry.get("yanked")]
    return {v for v in (_file_version(str(entry.get("filename", "")), name) for entry in entries) if v}


def _linked_versions(html: str, name: str) -> set[str]:
    """The versions of the files an HTML page links that are not yanked (no ``data-yanked``)."""
    return {v for v in (_file_version(_filename(href), name) for href in _anchors(html)) if v}


def _folder_page(folder: Path, name: str) -> set[str]:
    """A ``file://`` index or find-links folder: ``NAME/index.html`` (PEP 503), else the files listed."""
    for page_folder in (folder / normalized(name), folder):
        page = page_folder / "index.html"
        if page.is_file():
            return _linked_versions(page.read_text(errors="replace"), name)
    return folder_versions(folder / normalized(name), name) | folder_versions(folder, name)


def _filename(href: str) -> str:
    """The file name a link points to (its path's last part, without a ``#sha256=`` fragment)."""
    return unquote(urlsplit(urljoin("https://index/", href)).path.rsplit("/", 1)[-1])


class _Anchors(HTMLParser):
    """The ``href`` of every ``<a>`` of a page that is not yanked (PEP 592's ``data-yanked``)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href") and "data-yanked" not in found:
            self.found.append(str(found["href"]))


def _anchors(html: str) -> list[str]:
    parser = _Anchors()
    parser.feed(html)
    return parser.found
