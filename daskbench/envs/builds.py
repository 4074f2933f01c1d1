"""Building an environment once: a virtualenv under the cache folder, checked, then marked built.

`build` makes the environment under the cache folder (`cache_root`), in a folder named by the spec's
`EnvSpec.key` (a stable hash of its sorted pins, this daskbench's requirement and the interpreter),
with ``uv`` when it is on PATH or importable, else ``python -m venv`` and pip. A builder holds a lock
file beside the folder (``<key>.lock``, ``flock``), so two builders of one environment take turns and
the second finds it built; the folder counts as built only once its marker (`MARKER`) is written,
which happens last, after the versions inside it were checked against the spec (`check_versions`,
``importlib.metadata`` run by the environment's own interpreter). A failed or interrupted build
leaves no marker and is removed; the installer's output stays in ``<key>.log``.

``build(spec, options, inherit=True)`` makes an *overlay* instead (part of the key): a virtualenv whose
site-packages holds only the pins (installed without their dependencies) and a ``.pth`` that adds this
interpreter's site-packages after its own (`overlay_of`), so everything else, daskbench included, is
this interpreter's: seconds to build, what ``daskbench bisect --inherit`` uses. Source trees (`EnvSpec.sources`)
are built in isolation; uv tries its cache alone first, so a build backend fetched once needs no network again.
"""

from __future__ import annotations

import errno
import fcntl
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from daskbench.envs import known
from daskbench.envs.index import Index, find_uv
from daskbench.envs.output import first_error, reason
from daskbench.envs.specs import EnvSpec, normalized
from daskbench.errors import DaskbenchError, check_writable
from daskbench.model import now_iso
from daskbench.text import plural, say

#: Environment variable naming the cache folder (default ``~/.cache/daskbench/envs``).
CACHE_ENV = "DASKBENCH_ENV_CACHE"
#: The file a finished environment holds; written last, so its presence means "built and checked".
MARKER = "daskbench-env.json"
INSTALLERS = ("auto", "uv", "pip")
#: Seconds one installer step (create, install) may take before it is stopped and said: a build from
#: source on a slow machine takes minutes, an index that stopped answering would take forever.
STEP_TIMEOUT_S = 1800
_VERSIONS_SCRIPT = (
    "import json, sys\nfrom importlib import metadata\nfound = {}\nfor name in sys.argv[1:]:\n"
    "    try:\n        found[name] = metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n        found[name] = None\nprint(json.dumps(found))"
)

Say = Callable[[str], None]


# -- where environments live ------------------------------------------------------------------


def cache_root(explicit: str | Path | None = None) -> Path:
    """The cache folder: ``explicit``, else ``$DASKBENCH_ENV_CACHE``, else ``$XDG_CACHE_HOME/daskbench/envs``
    (``~/.cache/daskbench/envs``)."""
    chosen = explicit or os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base, "daskbench", "envs").absolute()


def cache_flag(explicit: str | Path | None = None) -> str:
    """What chose the cache folder, as an error line names it: ``--cache-dir``, ``DASKBENCH_ENV_CACHE`` (the
    flag the user never gave is never named as theirs), or the default and the two ways to move it."""
    if explicit:
        return "--cache-dir"
    if os.environ.get(CACHE_ENV):
        return CACHE_ENV
    return f"the default environment cache (move it with --cache-dir or {CACHE_ENV})"


def interpreter(folder: Path) -> Path:
    """The python of the environment in ``folder``."""
    return folder / "bin" / "python"


def is_built(folder: Path) -> bool:
    """Whether ``folder`` holds a finished environment (its marker is written last)."""
    return (folder / MARKER).is_file()


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
            return [
                *self.command,
                "pip",
                "install",
                "--python",
                python,
                "--compile-bytecode",
                *_no_deps(spec),
                *index.args(),
                *spec.requirements(),
            ]
        pip = [*self.command, "--python", python] if self.command else [python, "-m", "pip"]
        return [*pip, "install", "--disable-pip-version-check", *_no_deps(spec), *index.args(), *spec.requirements()]


def _no_deps(spec: EnvSpec) -> list[str]:
    """An overlay gets the pinned packages alone: everything else comes from the site-packages it sees."""
    return ["--no-deps"] if spec.overlay else []


def choose_installer(asked: str = "auto") -> Installer:
    """``uv`` when asked or (auto) when on PATH or importable; pip otherwise; one line when unavailable."""
    if asked not in INSTALLERS:
        raise DaskbenchError(f"--installer {asked!r}: choose one of {', '.join(INSTALLERS)}")
    uv = find_uv()
    if asked == "uv" and uv is None:
        raise DaskbenchError("--installer uv: uv is neither on PATH nor importable here; pip install uv")
    if uv is not None and asked != "pip":
        return Installer("uv", uv)
    if importlib.util.find_spec("pip") is not None:
        return Installer("pip", (sys.executable, "-m", "pip"))
    return Installer("pip", ())  # no pip here: the environment's own (python -m venv installs it)


# -- building ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildOptions:
    """How environments are built, whatever they hold: where they live (``cache``: the folder `cache_root` is
    given, None for the default), where the installer looks (``index``), which installer (one of `INSTALLERS`)
    and the requirements every environment built gets (``extra_pins``: ``--pin``). A command makes it once from
    its build flags; it checks itself when made, so a missing folder of wheels or an installer not here is one
    line before anything is built."""

    cache: str | Path | None = None
    index: Index = field(default_factory=Index)
    installer: str = "auto"
    extra_pins: tuple[known.Pin, ...] = ()

    def __post_init__(self) -> None:
        self.index.check()
        choose_installer(self.installer)


def build(
    spec: EnvSpec,
    options: BuildOptions,
    *,
    say: Say = say,
    inherit: bool = False,
    era_from: Mapping[str, str] | None = None,
) -> Path:
    """The interpreter of ``spec``'s environment, built as ``options`` say: reused when built already (its
    versions checked again), else built under a lock. One `DaskbenchError` line for what could not be had.
    With ``inherit``, an overlay (`overlay_of`): only the pins installed, over this interpreter's packages.

    A full environment gets `known`'s default pins (the era of ``era_from``, default the spec's own release,
    and the known incompatibilities) and the options' ``extra_pins`` (``--pin``); an overlay only those. When it
    does not install with the era of ``era_from`` (a bisection's good end), it is built with its own."""
    chosen_spec = replace(spec, overlay=overlay_source()) if inherit else spec
    choices = _choices(chosen_spec, options.extra_pins, era_from)
    if spec.daskbench or inherit:  # daskbench's measuring side runs in it
        known.check_measurable(dict(spec.pins))
    root = cache_root(options.cache)
    broken: set[Path] = set()
    for chosen in choices:
        folder = root / chosen.key()
        if is_built(folder):
            if not _reused(folder, chosen, say):
                return interpreter(folder)
            broken.add(folder)  # its interpreter gone or not starting: rebuilt below
    tool = choose_installer(options.installer)
    check_writable(root, cache_flag(options.cache), folder=True)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for attempt, chosen in enumerate(choices, 1):
            try:
                folder = root / chosen.key()
                return _built(folder, chosen, options.index, tool, say, folder in broken)
            except DaskbenchError as error:
                if attempt == len(choices):
                    raise
                say(f"env: {chosen.source} does not install beside the libraries of the good end's release ({error}); "
                    "building it with those of its own release")  # fmt: skip
    except OSError as exc:  # the cache's disk full or gone mid-build: the half-built folder is removed
        fix = cache_fix(exc, options.cache)
        raise DaskbenchError(f"cannot build in {root} ({exc.strerror or exc}); {fix}") from None
    raise AssertionError("no environment to build")  # choices is never empty


def _choices(spec: EnvSpec, extra_pins: Sequence[known.Pin], era_from: Mapping[str, str] | None) -> list[EnvSpec]:
    """The specs to try, in order: with the defaults of ``era_from``'s era, then (if another) the spec's own."""
    defaults = spec.overlay is None
    first = known.pinned(spec, extra_pins, era_from, defaults=defaults)
    own = known.pinned(spec, extra_pins, None, defaults=defaults)
    return [first] if own == first else [first, own]


def _built(folder: Path, spec: EnvSpec, index: Index, tool: Installer, say: Say, broken: bool = False) -> Path:
    """Build ``spec`` into ``folder`` under its lock (another builder may have finished it meanwhile; a
    ``broken`` one is removed first)."""
    with _locked(folder.with_name(f"{folder.name}.lock"), say):
        if broken:
            shutil.rmtree(folder, ignore_errors=True)  # under the lock: no other builder is at it
        if is_built(folder):
            say(f"env: another process built {folder}; reusing it")
        else:
            _build_into(folder, spec, index, tool, say)
    return interpreter(folder)


def cache_fix(exc: OSError, explicit: str | Path | None = None) -> str:
    """How to get past ``exc``, met writing the cache: free space (a full disk), or move the cache."""
    room = "free space there or " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    return f"{room}move the cache ({cache_flag(explicit)})"


def _reused(folder: Path, spec: EnvSpec, say: Say) -> bool:
    """Check a built environment before reuse: False when it is usable as it is (its versions checked), True
    when it must be rebuilt because its interpreter is gone or cannot run (said in one line)."""
    try:
        check_versions(folder, spec, rebuilt=False)
    except BrokenEnvironment as exc:
        say(f"env: {exc}; rebuilding it")
        return True
    say(f"env: reusing {folder} ({spec.source})")
    return False


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


@dataclass(frozen=True)
class Build:
    """One environment being built: what it holds, where the installer looks, the installer, and the
    log file its steps write to."""

    spec: EnvSpec
    index: Index
    tool: Installer
    log: Path


def _build_into(folder: Path, spec: EnvSpec, index: Index, tool: Installer, say: Say) -> None:
    """Create, install, check, mark; on any failure remove the half-built folder."""
    _note_python(spec, say)
    shutil.rmtree(folder, ignore_errors=True)  # a build that died before its marker
    log = folder.with_name(folder.name + ".log")
    job = Build(spec, index, tool, log)
    started = time.monotonic()
    say(f"env: building {folder} for {spec.source} with {tool.name}: {spec.describe()} (its log: {log})")
    if spec.extra:
        say(f"env: also pinned: {', '.join(spec.extra)} (defaults for the release's era and known "
            "incompatibilities, and --pin; --pin NAME[SPEC] changes one)")  # fmt: skip
    try:
        _run(job, tool.create(folder), "w", "create the environment")
        if spec.overlay:
            overlay_of(folder, spec.overlay)
        count = plural(len(spec.pins) + len(spec.sources) + bool(spec.daskbench), "package")
        deps = f", over {spec.overlay}" if spec.overlay else " and their dependencies"
        say(f"env: installing {count}{deps}")
        _install(folder, job)
        check_versions(folder, spec, rebuilt=True)
        _mark(folder, spec, tool, time.monotonic() - started)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    checked = f"; checked {plural(len(spec.pins), 'version')} against {spec.source}" if spec.pins else ""
    say(f"env: built in {time.monotonic() - started:.0f} s{checked}")


def _install(folder: Path, job: Build) -> None:
    """Install the spec. Source trees are built in isolation, their build backend (setuptools, hatchling)
    fetched from the index; uv first tries its cache alone (``--offline``: no index asked, and it works
    without a network once the backend was fetched), then asks the index."""
    command = job.tool.install(folder, job.spec, job.index)
    if job.spec.sources and job.tool.name == "uv" and _succeeds(offline(command), job.log):
        return
    _run(job, command, "a", "install")


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
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=STEP_TIMEOUT_S,
            preexec_fn=_ends_with_builder(),
        )
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        output = f"{_text(expired.stdout)}{_text(expired.stderr)}\n(stopped after {STEP_TIMEOUT_S} s)\n"
    with log.open(mode) as out:
        out.write(f"$ {' '.join(command)}\n{output}")
    return done


def _ends_with_builder() -> Callable[[], None] | None:
    """What makes an installer step die with the process building (Linux's ``PR_SET_PDEATHSIG``): a builder killed
    outright (``kill -9``, the OOM killer) frees the environment's lock, and an orphaned installer would go on
    writing into the folder the next builder makes anew. None elsewhere."""
    if sys.platform != "linux":
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _note_python(spec: EnvSpec, say: Say) -> None:
    """Say so when the record's python (major.minor) is not the one the environment gets."""
    here = platform.python_version()
    if spec.recorded_python and spec.recorded_python.split(".")[:2] != here.split(".")[:2]:
        say(f"env: note: {spec.source} recorded python {spec.recorded_python}; this environment gets {here}")


def _run(job: Build, command: list[str], mode: str, what: str) -> None:
    """Run one installer step of ``job`` with its output written to its log (``mode`` ``w`` or ``a``);
    one line saying ``what`` failed or hung."""
    done = _logged(command, job.log, mode)
    if done is None:
        raise DaskbenchError(
            f"{job.tool.name} did not {what} for {job.spec.source} within {STEP_TIMEOUT_S} s; "
            f"stopped (is the index answering? its output: {job.log})"
        )
    if done.returncode != 0:
        disk = disk_fault(done.stdout + done.stderr)
        if disk is not None:  # the machine's fault, said as the cache's (`build`), never the request's
            raise OSError(disk, os.strerror(disk))
        raise InstallFailed(failure_line(done.stdout + done.stderr, job, what))


#: The errors an installer meets writing the environment that are the disk's, not the request's.
_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def disk_fault(output: str) -> int | None:
    """The errno of a full or read-only disk the installer's output names (uv's ``(os error 28)``, pip's
    ``[Errno 28]``, or the words), else None: such a step failed for the cache's disk, whatever it installed."""
    for code in _DISK_ERRORS:
        if re.search(rf"os error {code}\)|\[Errno {code}\]|{re.escape(os.strerror(code))}", output):
            return code
    return None


def failure_line(output: str, job: Build, what: str) -> str:
    """One line for a failed step: the pin the index does not have, named with the index asked; else the
    requirements the installer's reason names (``--pin`` ones too) and that reason (uv's ``Because ...``,
    else its first error line), with the log of its whole output."""
    spec, tool = job.spec, job.tool.name
    missing = missing_pin(output, spec)
    if missing is not None:
        asked = job.index.describe(tool)
        return f"{missing} ({spec.source}) cannot be had: not on the index (asked {asked}); nothing was built"
    why = re.sub(r"(?i)^error:\s*", "", reason(output))  # the line is said after "error: " already
    named = ", ".join(involved(why, spec))
    return f"{tool} could not {what}{f' {named}' if named else ''} for {spec.source}: {why} ({where_logged(job)})"


#: The longest log path a failure line names; a longer one (a word the line cannot wrap within 120 columns) is
#: "the log named above", by the ``env: building`` line.
LOG_ROOM = 110


def where_logged(job: Build) -> str:
    """Where the installer's whole output is: its log's path (home as ``~``), or the log named above."""
    home, path = str(Path.home()), str(job.log)
    if home not in ("", "/") and path.startswith(home + "/"):
        path = "~" + path[len(home) :]
    return f"{job.tool.name}'s output: {path if len(path) <= LOG_ROOM else 'the log named above'}"


def involved(said: str, spec: EnvSpec) -> list[str]:
    """The spec's requirements (exact pins, then the extra ones: defaults and ``--pin``) whose package ``said``
    names (``pandas==1.3.5``, ``numpy<2``), in the spec's order."""
    words = {normalized(word) for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", said)}
    pins = [f"{name}=={version}" for name, version in spec.pins]
    return [text for text in [*pins, *spec.extra] if normalized(re.split(r"[<>=!~;\[ ]", text, maxsplit=1)[0]) in words]


def missing_pin(output: str, spec: EnvSpec) -> str | None:
    """``name==version`` of the first pin the installer said it could not find (pip's and uv's words)."""
    for name, version in spec.pins:
        spelled = "[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))
        said = rf"(?:requirement|no versions? of)\s+{spelled}\s*==\s*{re.escape(version)}(?![\w.])"
        if re.search(said, output, flags=re.IGNORECASE):
            return f"{name}=={version}"
    return None


def _mark(folder: Path, spec: EnvSpec, tool: Installer, seconds: float) -> None:
    """Write the marker, atomically: the environment is built from this moment."""
    record = {
        "lines": spec.lines(),
        "source": spec.source,
        "installer": tool.name,
        "built_at": now_iso(),
        "seconds": round(seconds, 1),
    }
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


# -- the check --------------------------------------------------------------------------------


class InstallFailed(DaskbenchError):
    """The installer refused what was asked (a version the index lacks, a source tree that does not build):
    the request's fault, not the machine's (a full disk, a cache that cannot be written are not this). Its line
    quotes the installer's reason and names its log: wrapped between words at 120 columns."""

    wrap = True


class BrokenEnvironment(DaskbenchError):
    """A built environment whose interpreter is gone or cannot run (deleted, its base python removed)."""


def installed_versions(python: Path, names: Collection[str]) -> dict[str, str | None]:
    """Each name's version as the environment's own interpreter reads it (None: not installed); a
    `BrokenEnvironment` when that interpreter cannot be run or cannot say."""
    try:
        done = subprocess.run(
            [str(python), "-c", _VERSIONS_SCRIPT, *names], capture_output=True, text=True, timeout=120
        )
    except OSError as exc:
        raise BrokenEnvironment(f"the interpreter {python} cannot run ({exc.strerror or exc})") from None
    try:
        found: dict[str, str | None] = json.loads(done.stdout) if done.returncode == 0 else {}
    except ValueError:
        found = {}
    if done.returncode != 0 or not isinstance(found, dict):
        raise BrokenEnvironment(f"the interpreter {python} could not report its versions: {first_error(done.stderr)}")
    return found


def mismatches(spec: EnvSpec, found: Mapping[str, str | None]) -> list[str]:
    """``standin 1.1 (wanted 1.0)`` for each pin the environment does not hold as pinned, and
    ``pandas 2.2.3 (wanted <2)`` for an installed package outside its extra requirement."""
    from packaging.requirements import Requirement

    wrong = []
    for name, version in spec.pins:
        have = found.get(name)
        if have is None or not same_version(have, version):
            wrong.append(f"{name} {have or 'missing'} (wanted {version})")
    for text in spec.extra:
        wanted = Requirement(text)
        have = found.get(normalized(wanted.name))
        if have is not None and not wanted.specifier.contains(have, prereleases=True):
            wrong.append(f"{normalized(wanted.name)} {have} (wanted {wanted.specifier})")
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
    from packaging.requirements import Requirement

    names = [name for name, _ in spec.pins] + [normalized(Requirement(text).name) for text in spec.extra]
    wrong = mismatches(spec, installed_versions(interpreter(folder), names))
    if not wrong:
        return
    fix = "the installer did not install what was pinned" if rebuilt else f"remove {folder} to rebuild it"
    raise DaskbenchError(f"the environment {folder} does not hold {spec.source}'s versions: {'; '.join(wrong)}; {fix}")
