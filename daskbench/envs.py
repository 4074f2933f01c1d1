"""Environments from the record: a virtualenv holding the package versions a run recorded, built once.

`spec_from_run` turns a run's recorded versions (``Run.versions``: dask, distributed, numpy, ...)
into an `EnvSpec`, the exact ``name==version`` pins plus this daskbench, installed the way it is
installed here (its PEP 610 record: ``-e PATH`` for an editable checkout, a pinned VCS commit, an
archive URL, else ``daskbench==VERSION``). `spec_from_pins` makes one from any version set, and
``overrides`` replace recorded versions (a bisection's "the good run's versions but dask X").

`build` makes the environment under the cache folder (`cache_root`), in a folder named by the spec's
`EnvSpec.key` (a stable hash of its sorted pins, this daskbench's requirement and the interpreter),
with ``uv`` when it is on PATH or importable, else ``python -m venv`` and pip. A builder holds a lock
file beside the folder (``<key>.lock``, ``flock``), so two builders of one environment take turns and
the second finds it built; the folder counts as built only once its marker (`MARKER`) is written,
which happens last, after the versions inside it were checked against the spec (`check_versions`,
``importlib.metadata`` run by the environment's own interpreter). A failed or interrupted build
leaves no marker and is removed; the installer's output stays in ``<key>.log``.

``build(..., inherit=True)`` makes an *overlay* instead (part of the key): a virtualenv whose
site-packages holds only the pins (installed without their dependencies) and a ``.pth`` that adds this
interpreter's site-packages after its own (`overlay_of`), so everything else, daskbench included, is
this interpreter's: seconds to build, what ``daskbench bisect --inherit`` uses. `available_versions`
lists the versions an index offers (a local folder's file names; ``pip index versions`` for an index).

The commits of a git checkout (`git_checkout`, `resolve_commit`, `commits_between`, `commit_subjects`)
become source trees (`exported`: ``git archive``, once) that an `EnvSpec` installs (``sources``), built
in isolation; uv tries its cache alone first, so a build backend fetched once needs no network again.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from daskbench.errors import DaskbenchError, check_writable
from daskbench.model import Run, now_iso
from daskbench.text import plural

#: Environment variable naming the cache folder (default ``~/.cache/daskbench/envs``).
CACHE_ENV = "DASKBENCH_ENV_CACHE"
#: The file a finished environment holds; written last, so its presence means "built and checked".
MARKER = "daskbench-env.json"
#: Recorded names that are not pins: the interpreter, and daskbench (this one is installed instead).
NOT_PINNED = frozenset({"python", "daskbench"})
INSTALLERS = ("auto", "uv", "pip")
#: Seconds one installer step (create, install) may take before it is stopped and said: a build from
#: source on a slow machine takes minutes, an index that stopped answering would take forever.
STEP_TIMEOUT_S = 1800
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")
_VERSIONS_SCRIPT = (
    "import json, sys\nfrom importlib import metadata\nfound = {}\nfor name in sys.argv[1:]:\n"
    "    try:\n        found[name] = metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n        found[name] = None\nprint(json.dumps(found))"
)

Say = Callable[[str], None]


def say_stderr(line: str) -> None:
    """Progress goes to stderr, so that stdout holds only the interpreter's path."""
    print(line, file=sys.stderr, flush=True)


def normalized(name: str) -> str:
    """A package name as the index compares it (PEP 503): ``Dask_ML`` -> ``dask-ml``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def interpreter_tag() -> str:
    """The interpreter environments are built on (this one): implementation, version, machine."""
    return f"{sys.implementation.name}-{platform.python_version()}-{platform.machine()}"


@dataclass(frozen=True)
class EnvSpec:
    """What an environment holds: exact pins, this daskbench's install arguments (empty: without it),
    the interpreter it is built on; ``source`` says where the pins came from (for messages only), and
    ``recorded_python`` the interpreter version the record names (a note when it differs)."""

    pins: tuple[tuple[str, str], ...]
    daskbench: tuple[str, ...] = ()
    source: str = "the version set"
    recorded_python: str | None = None
    python: str = field(default_factory=interpreter_tag)
    overlay: str | None = None  # an overlay over this site-packages folder (`build(inherit=True)`)
    sources: tuple[str, ...] = ()  # source trees installed too: `exported` commits of a git checkout

    def lines(self) -> list[str]:
        """The identity of the environment, one fact a line: the sorted pins, the source trees, daskbench,
        the interpreter (and, for an overlay, the site-packages it sees)."""
        pins = sorted(f"{normalized(name)}=={version}" for name, version in self.pins)
        sources = [f"source: {tree}" for tree in self.sources]
        overlay = [f"overlay of: {self.overlay}"] if self.overlay else []
        daskbench = f"daskbench: {' '.join(self.daskbench) or 'not installed'}"
        return [*pins, *sources, daskbench, f"python: {self.python}", *overlay]

    def key(self) -> str:
        """A stable hash of `lines`: the name of the environment's folder."""
        return hashlib.sha256("\n".join(self.lines()).encode()).hexdigest()[:16]

    def requirements(self) -> list[str]:
        """The installer's arguments: one ``name==version`` per pin, the source trees, then daskbench's."""
        return [*(f"{name}=={version}" for name, version in self.pins), *self.sources, *self.daskbench]

    def describe(self) -> str:
        """``dask 2026.7.0, distributed 2026.7.0, ...`` (every pin), then each source tree's folder name."""
        return ", ".join([*(f"{name} {version}" for name, version in self.pins), *(Path(t).name for t in self.sources)])


def parse_pins(text: str, flag: str) -> dict[str, str]:
    """``dask==2026.7.0,distributed==2026.7.0`` -> ``{"dask": "2026.7.0", ...}``; one line per bad item."""
    pins: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        found = _PIN.match(item)
        if found is None:
            raise DaskbenchError(f"{flag} {item!r}: expected NAME==VERSION, e.g. {flag} dask==2026.7.0")
        pins[normalized(found.group(1))] = found.group(2)
    if not pins:
        raise DaskbenchError(f"{flag} {text!r} names no package; e.g. {flag} dask==2026.7.0,distributed==2026.7.0")
    return pins


def parse_names(text: str, flag: str) -> list[str]:
    """``standin,dask`` -> normalized names; one line when it names none."""
    names = [normalized(part.strip()) for part in text.split(",") if part.strip()]
    if not names:
        raise DaskbenchError(f"{flag} {text!r} names no package; e.g. {flag} dask,distributed")
    return names


def spec_from_run(
    run: Run,
    *,
    overrides: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
    with_daskbench: bool = True,
) -> EnvSpec:
    """The environment of ``run``'s recorded versions (``only`` those names, if given), with
    ``overrides`` replacing or adding versions, plus this daskbench unless ``with_daskbench`` is False."""
    recorded = {normalized(name): version for name, version in run.versions.items()}
    pins = {name: version for name, version in recorded.items() if name not in NOT_PINNED}
    source = f"run {run.run_id[:8]}"
    if only is not None:
        pins = _narrowed(pins, [normalized(name) for name in only], source)
    pins.update({normalized(name): version for name, version in (overrides or {}).items()})
    if not pins:
        raise DaskbenchError(f"{source} recorded no package versions to rebuild; choose another run (daskbench runs)")
    daskbench = daskbench_requirement() if with_daskbench else ()
    return EnvSpec(tuple(sorted(pins.items())), daskbench, source, recorded.get("python"))


def _narrowed(pins: Mapping[str, str], names: list[str], source: str) -> dict[str, str]:
    """``pins`` of ``names`` only; one line naming a name the record does not have."""
    for name in names:
        if name not in pins:
            raise DaskbenchError(f"{source} recorded no version of {name}; it recorded {', '.join(sorted(pins))}")
    return {name: pins[name] for name in names}


def spec_from_pins(
    pins: Mapping[str, str],
    *,
    with_daskbench: bool = True,
    source: str = "the version set",
    sources: tuple[str, ...] = (),
) -> EnvSpec:
    """The environment of an arbitrary version set (e.g. `parse_pins` of ``dask==X,distributed==X``),
    plus ``sources``: source trees to install (`exported` commits); pins may be empty when there are some."""
    if not pins and not sources:
        raise DaskbenchError("an environment needs at least one NAME==VERSION")
    cleaned = sorted((normalized(name), version) for name, version in pins.items() if normalized(name) != "daskbench")
    daskbench = daskbench_requirement() if with_daskbench else ()
    return EnvSpec(tuple(cleaned), daskbench, source, sources=sources)


def daskbench_requirement() -> tuple[str, ...]:
    """The installer arguments that install this daskbench again, the way it is installed here."""
    record, version = install_record("so an environment cannot get it; install it (pip install -e .) "
                                     "or build without it (--without-daskbench)")  # fmt: skip
    return requirement_from_record(record, version)


def install_record(fix: str) -> tuple[Mapping[str, object] | None, str]:
    """This daskbench's PEP 610 install record (``direct_url.json``; None: from an index) and version;
    ``fix`` ends the one line said when daskbench is not installed as a package."""
    try:
        dist = metadata.distribution("daskbench")
    except metadata.PackageNotFoundError:
        raise DaskbenchError(f"daskbench is not installed as a package here, {fix}") from None
    try:
        record = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        record = None
    return (record if isinstance(record, Mapping) else None), dist.version


def requirement_from_record(
    record: Mapping[str, object] | None, version: str, *, editable: bool = True
) -> tuple[str, ...]:
    """Install arguments from a PEP 610 record (``direct_url.json``; None: from an index): ``-e PATH``
    for an editable local checkout (unless ``editable`` is False), ``daskbench @ vcs+URL@commit``,
    ``daskbench @ URL``, or the version."""
    if record is None or not record.get("url"):
        return (f"daskbench=={version}",)
    url = str(record["url"])
    dir_info = record.get("dir_info")
    if editable and isinstance(dir_info, Mapping) and dir_info.get("editable") and urlsplit(url).scheme == "file":
        return ("-e", unquote(urlsplit(url).path))
    vcs = record.get("vcs_info")
    if isinstance(vcs, Mapping):
        revision = vcs.get("commit_id") or vcs.get("requested_revision")
        url = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
    if record.get("subdirectory"):
        url += f"#subdirectory={record['subdirectory']}"
    return (f"daskbench @ {url}",)


# -- where environments live ------------------------------------------------------------------


def cache_root(explicit: str | Path | None = None) -> Path:
    """The cache folder: ``explicit``, else ``$DASKBENCH_ENV_CACHE``, else ``$XDG_CACHE_HOME/daskbench/envs``
    (``~/.cache/daskbench/envs``)."""
    chosen = explicit or os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base, "daskbench", "envs").absolute()


def interpreter(folder: Path) -> Path:
    """The python of the environment in ``folder``."""
    return folder / "bin" / "python"


def is_built(folder: Path) -> bool:
    """Whether ``folder`` holds a finished environment (its marker is written last)."""
    return (folder / MARKER).is_file()


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


# -- installers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installer:
    """How environments are made: ``uv`` (``uv venv``, ``uv pip install --python``) or pip
    (``python -m venv``, then ``pip --python ENV install`` from this interpreter's pip; with an empty
    ``command``, the environment's own pip)."""

    name: str
    command: tuple[str, ...]

    def create(self, folder: Path) -> list[str]:
        if self.name == "uv":
            return [*self.command, "venv", "--quiet", "--python", sys.executable, str(folder)]
        if self.command:  # this interpreter's pip installs, so the environment needs none
            return [sys.executable, "-m", "venv", "--without-pip", str(folder)]
        return [sys.executable, "-m", "venv", str(folder)]

    def install(self, folder: Path, spec: EnvSpec, index: Index) -> list[str]:
        python = str(interpreter(folder))
        if self.name == "uv":  # compiled as pip does: else every restarted worker compiles dask again
            return [*self.command, "pip", "install", "--python", python, "--compile-bytecode", *_no_deps(spec),
                    *index.args(), *spec.requirements()]  # fmt: skip
        pip = [*self.command, "--python", python] if self.command else [python, "-m", "pip"]
        return [*pip, "install", "--disable-pip-version-check", *_no_deps(spec), *index.args(), *spec.requirements()]


def _no_deps(spec: EnvSpec) -> list[str]:
    """An overlay gets the pinned packages alone: everything else comes from the site-packages it sees."""
    return ["--no-deps"] if spec.overlay else []


def choose_installer(asked: str = "auto") -> Installer:
    """``uv`` when asked or (auto) when on PATH or importable; pip otherwise; one line when unavailable."""
    if asked not in INSTALLERS:
        raise DaskbenchError(f"--installer {asked!r}: choose one of {', '.join(INSTALLERS)}")
    uv = _find_uv()
    if asked == "uv" and uv is None:
        raise DaskbenchError("--installer uv: uv is neither on PATH nor importable here; pip install uv")
    if uv is not None and asked != "pip":
        return Installer("uv", uv)
    if importlib.util.find_spec("pip") is not None:
        return Installer("pip", (sys.executable, "-m", "pip"))
    return Installer("pip", ())  # no pip here: the environment's own (python -m venv installs it)


def _find_uv() -> tuple[str, ...] | None:
    """The command that runs uv: the one on PATH, else ``python -m uv``."""
    found = shutil.which("uv")
    if found:
        return (found,)
    return (sys.executable, "-m", "uv") if importlib.util.find_spec("uv") is not None else None


# -- building ---------------------------------------------------------------------------------


def build(
    spec: EnvSpec,
    *,
    cache: str | Path | None = None,
    index: Index | None = None,
    installer: str = "auto",
    say: Say = say_stderr,
    inherit: bool = False,
) -> Path:
    """The interpreter of ``spec``'s environment: reused when built already (its versions checked
    again), else built under a lock. One `DaskbenchError` line for what could not be had. With
    ``inherit``, an overlay (`overlay_of`): only the pins installed, over this interpreter's packages."""
    index = index or Index()
    spec = replace(spec, overlay=overlay_source()) if inherit else spec
    root = cache_root(cache)
    folder = root / spec.key()
    if is_built(folder):
        say(f"env: reusing {folder} ({spec.source})")
        check_versions(folder, spec, rebuilt=False)
        return interpreter(folder)
    index.check()
    tool = choose_installer(installer)
    check_writable(root, "--cache-dir", folder=True)
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{spec.key()}.lock", say):
        if is_built(folder):
            say(f"env: another process built {folder}; reusing it")
        else:
            _build_into(folder, spec, index, tool, say)
    return interpreter(folder)


@contextmanager
def _locked(path: Path, say: Say) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (waiting, and saying so, while another builder has it)."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"env: another process is building this environment; waiting for it ({path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_into(folder: Path, spec: EnvSpec, index: Index, tool: Installer, say: Say) -> None:
    """Create, install, check, mark; on any failure remove the half-built folder."""
    _note_python(spec, say)
    shutil.rmtree(folder, ignore_errors=True)  # a build that died before its marker
    log = folder.with_name(folder.name + ".log")
    started = time.monotonic()
    say(f"env: building {folder} for {spec.source} with {tool.name}: {spec.describe()}")
    try:
        _run(tool.create(folder), log, "w", what="create the environment", spec=spec, index=index, tool=tool)
        if spec.overlay:
            overlay_of(folder, spec.overlay)
        count = plural(len(spec.pins) + len(spec.sources) + bool(spec.daskbench), "package")
        deps = f", over {spec.overlay}" if spec.overlay else " and their dependencies"
        say(f"env: installing {count}{deps} (the installer's output: {log})")
        _install(folder, spec, index, tool, log)
        check_versions(folder, spec, rebuilt=True)
        _mark(folder, spec, tool, time.monotonic() - started)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    checked = f"; checked {plural(len(spec.pins), 'version')} against {spec.source}" if spec.pins else ""
    say(f"env: built in {time.monotonic() - started:.0f} s{checked}")


def _install(folder: Path, spec: EnvSpec, index: Index, tool: Installer, log: Path) -> None:
    """Install the spec. Source trees are built in isolation, their build backend (setuptools, hatchling)
    fetched from the index; uv first tries its cache alone (``--offline``: no index asked, and it works
    without a network once the backend was fetched), then asks the index."""
    command = tool.install(folder, spec, index)
    if spec.sources and tool.name == "uv" and _succeeds(offline(command), log):
        return
    _run(command, log, "a", what="install", spec=spec, index=index, tool=tool)


def offline(command: list[str]) -> list[str]:
    """A ``uv pip install`` command that uses uv's cache alone."""
    at = command.index("install") + 1
    return [*command[:at], "--offline", *command[at:]]


def _succeeds(command: list[str], log: Path) -> bool:
    """Run ``command`` with its output appended to ``log``; whether it succeeded in time."""
    done = _logged(command, log, "a")
    return done is not None and done.returncode == 0


def _logged(command: list[str], log: Path, mode: str) -> subprocess.CompletedProcess[str] | None:
    """Run one installer step, its output written to ``log``; None when it outran ``STEP_TIMEOUT_S``."""
    done: subprocess.CompletedProcess[str] | None = None
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=STEP_TIMEOUT_S)  # fmt: skip
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        output = f"{_text(expired.stdout)}{_text(expired.stderr)}\n(stopped after {STEP_TIMEOUT_S} s)\n"
    with log.open(mode) as out:
        out.write(f"$ {' '.join(command)}\n{output}")
    return done


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _note_python(spec: EnvSpec, say: Say) -> None:
    """Say so when the record's python (major.minor) is not the one the environment gets."""
    here = platform.python_version()
    if spec.recorded_python and spec.recorded_python.split(".")[:2] != here.split(".")[:2]:
        say(f"env: note: {spec.source} recorded python {spec.recorded_python}; this environment gets {here}")


def _run(command: list[str], log: Path, mode: str, *, what: str, spec: EnvSpec, index: Index, tool: Installer) -> None:
    """Run one installer step with its output appended to ``log``; one line when it fails or hangs."""
    done = _logged(command, log, mode)
    if done is None:
        raise DaskbenchError(f"{tool.name} did not {what} for {spec.source} within {STEP_TIMEOUT_S} s; stopped "
                             f"(is the index answering? its output: {log})")  # fmt: skip
    if done.returncode != 0:
        raise DaskbenchError(failure_line(done.stdout + done.stderr, spec, index, tool.name, what, log))


def failure_line(output: str, spec: EnvSpec, index: Index, tool: str, what: str, log: Path) -> str:
    """One line for a failed step: the pin the index does not have, named with the index asked;
    else the installer's first error line."""
    missing = missing_pin(output, spec)
    if missing is not None:
        return f"{missing} ({spec.source}) cannot be had: not on the index (asked {index.describe(tool)}); nothing was built"
    return f"{tool} could not {what} for {spec.source}: {first_error(output)} (its output: {log})"


def missing_pin(output: str, spec: EnvSpec) -> str | None:
    """``name==version`` of the first pin the installer said it could not find (pip's and uv's words)."""
    for name, version in spec.pins:
        spelled = "[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))
        said = rf"(?:requirement|no versions? of)\s+{spelled}\s*==\s*{re.escape(version)}(?![\w.])"
        if re.search(said, output, flags=re.IGNORECASE):
            return f"{name}=={version}"
    return None


def first_error(output: str, limit: int = 300) -> str:
    """The installer's first error line (pip's ``ERROR:``, uv's ``error:`` or ``Because``), else its last."""
    lines = [line.strip(" ╰─▶│×") for line in output.splitlines() if line.strip()]
    chosen = next((line for line in lines if re.match(r"(?i)(error\b|because\b)", line)), lines[-1] if lines else "")
    return chosen[:limit] or "no output"


def _mark(folder: Path, spec: EnvSpec, tool: Installer, seconds: float) -> None:
    """Write the marker, atomically: the environment is built from this moment."""
    record = {"lines": spec.lines(), "source": spec.source, "installer": tool.name,
              "built_at": now_iso(), "seconds": round(seconds, 1)}  # fmt: skip
    scratch = folder / f".{MARKER}.tmp"
    scratch.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(scratch, folder / MARKER)


# -- overlays ---------------------------------------------------------------------------------

#: The file that makes an overlay see the site-packages under it.
OVERLAY_PTH = "zz-daskbench-overlay.pth"


def overlay_source() -> str:
    """The site-packages an overlay built here sees: this interpreter's purelib."""
    return str(Path(sysconfig.get_paths()["purelib"]).absolute())


def overlay_of(folder: Path, site_packages: str) -> None:
    """Make the environment in ``folder`` see ``site_packages`` after its own: a ``.pth`` whose line
    runs `site.addsitedir`, so that folder's own ``.pth`` files (an editable daskbench) count too."""
    own = sorted((folder / "lib").glob("python3*/site-packages"))
    if not own:
        raise DaskbenchError(f"the new environment {folder} has no lib/python3*/site-packages folder to overlay")
    (own[0] / OVERLAY_PTH).write_text(f"import site; site.addsitedir({site_packages!r})\n")


# -- the versions an index has ----------------------------------------------------------------


def available_versions(name: str, index: Index) -> list[str]:
    """Every version of ``name`` that ``index`` offers, oldest first (`packaging.version` order): read
    off the file names in local ``--find-links`` folders, and asked of an index with ``pip index versions``."""
    from packaging.version import Version

    found: set[str] = set()
    for link in index.find_links:
        if "://" not in link:
            found |= folder_versions(Path(link).expanduser(), name)
    if not index.no_index or any("://" in link for link in index.find_links):
        found |= index_versions(name, index)
    return sorted(found, key=Version)


def folder_versions(folder: Path, name: str) -> set[str]:
    """The versions of ``name`` among the wheels and source archives in ``folder``."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    found: set[str] = set()
    for path in folder.iterdir() if folder.is_dir() else ():
        try:
            parsed = parse_wheel_filename(path.name) if path.suffix == ".whl" else parse_sdist_filename(path.name)
        except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
            continue
        if normalized(parsed[0]) == normalized(name):
            found.add(str(parsed[1]))
    return found


def index_versions(name: str, index: Index) -> set[str]:
    """The versions of ``name`` an index offers, by ``pip index versions --json`` (empty: none)."""
    if importlib.util.find_spec("pip") is None:
        raise DaskbenchError(f"listing the versions of {name} on an index needs pip here: pip install pip")
    command = [sys.executable, "-m", "pip", "index", "versions", "--json", "--disable-pip-version-check",
               *index.args(), name]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    if done.returncode != 0:
        if "no matching distribution" in done.stderr.lower():
            return set()
        raise DaskbenchError(f"pip could not list the versions of {name} ({index.describe('pip')}): "
                             f"{first_error(done.stderr)}")  # fmt: skip
    return {str(version) for version in json.loads(done.stdout).get("versions", [])}


# -- the check --------------------------------------------------------------------------------


def installed_versions(python: Path, names: Collection[str]) -> dict[str, str | None]:
    """Each name's version as the environment's own interpreter reads it (None: not installed)."""
    done = subprocess.run([str(python), "-c", _VERSIONS_SCRIPT, *names], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise DaskbenchError(f"{python} could not report its versions: {first_error(done.stderr)}")
    found: dict[str, str | None] = json.loads(done.stdout)
    return found


def mismatches(spec: EnvSpec, found: Mapping[str, str | None]) -> list[str]:
    """``standin 1.1 (recorded 1.0)`` for each pin the environment does not hold as pinned."""
    wrong = []
    for name, version in spec.pins:
        have = found.get(name)
        if have is None or not same_version(have, version):
            wrong.append(f"{name} {have or 'missing'} (wanted {version})")
    return wrong


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality (``2026.07.0`` is ``2026.7.0``), else the same text."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def check_versions(folder: Path, spec: EnvSpec, *, rebuilt: bool) -> None:
    """One line when the environment's versions are not the spec's."""
    wrong = mismatches(spec, installed_versions(interpreter(folder), [name for name, _ in spec.pins]))
    if not wrong:
        return
    fix = "the installer did not install what was pinned" if rebuilt else f"remove {folder} to rebuild it"
    raise DaskbenchError(f"the environment {folder} does not hold {spec.source}'s versions: {'; '.join(wrong)}; {fix}")


# -- commits of a git checkout, as source trees -----------------------------------------------


def git_checkout(path: str | Path, flag: str) -> Path:
    """The top folder of the git checkout at ``path``; one line when it is not one."""
    folder = Path(path).expanduser().absolute()
    if not folder.is_dir():
        raise DaskbenchError(f"{flag} {path}: no such folder; give the path of a git checkout")
    done = _git(folder, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise DaskbenchError(f"{flag} {path}: not a git checkout (git rev-parse found no repository there)")
    return Path(done.stdout.strip())


def resolve_commit(repo: Path, ref: str, flag: str) -> str:
    """The full commit id ``ref`` (a branch, tag or commit) names in ``repo``; one line when none."""
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise DaskbenchError(f"{flag} {ref!r}: {repo} has no such branch, tag or commit (git log shows its commits)")
    return done.stdout.strip()


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad``, oldest first (``bad`` last), on the first-parent line;
    one line when ``good`` is not an ancestor of ``bad``."""
    if _git(repo, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise DaskbenchError(f"commit {good[:12]} is not an ancestor of {bad[:12]} in {repo}; give --good before --bad")
    listed = _git(repo, "rev-list", "--reverse", "--first-parent", f"{good}..{bad}").stdout.split()
    return listed


def commit_subject(repo: Path, commit: str) -> str:
    """The first line of ``commit``'s message (text from users: escape it before showing it)."""
    return _git(repo, "log", "-1", "--format=%s", commit).stdout.strip()


def commit_subjects(repo: Path, good: str, bad: str) -> dict[str, str]:
    """The first line of each commit's message after ``good`` up to ``bad``, by full id, in one ``git log``
    (text from users: escape it before showing it)."""
    listed = _git(repo, "log", "--first-parent", "--format=%H %s", f"{good}..{bad}").stdout.splitlines()
    return {commit: subject for commit, _, subject in (line.partition(" ") for line in listed)}


def exported(repo: Path, commit: str, cache: str | Path | None = None) -> Path:
    """The source tree of ``commit`` (``git archive``), once, under ``<cache>/sources/<name>-<commit>``:
    installable like any project folder, whatever the checkout's working tree holds now."""
    root = cache_root(cache) / "sources"
    target = root / f"{repo.name}-{commit[:16]}"
    if target.is_dir():
        return target
    check_writable(root, "--cache-dir", folder=True)
    root.mkdir(parents=True, exist_ok=True)
    scratch = root / f".{target.name}.{os.getpid()}.tmp"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                                 check=True, stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive.stdout, check=True, capture_output=True,
                       timeout=300)  # fmt: skip
        os.replace(scratch, target)
    except OSError:
        if not target.is_dir():  # another process did not export it first
            raise
    except subprocess.CalledProcessError as error:
        said = first_error(error.stderr.decode(errors="replace"))
        raise DaskbenchError(f"exporting commit {commit[:12]} of {repo} failed: {said}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -C repo ARGS``; with ``check``, one line naming the command when it fails."""
    if shutil.which("git") is None:
        raise DaskbenchError("git is not on PATH; install git to work with a checkout")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300)  # fmt: skip
    if check and done.returncode != 0:
        raise DaskbenchError(f"git {' '.join(args)} failed in {repo}: {first_error(done.stderr)}")
    return done
