"""Building an environment once: a virtualenv under the cache folder, checked, then marked built.

`build` makes the environment under the cache folder (`cache_root`), in a folder named by the spec's
`EnvSpec.key` (a stable hash of its sorted pins, this daskbench's requirement and the interpreter),
with the installer `daskbench.envs.installers` chooses (``uv`` when it is on PATH or importable, else
``python -m venv`` and pip), as its `BuildOptions` say. A builder holds a lock
file beside the folder (``<key>.lock``, ``flock``), so two builders of one environment take turns and
the second finds it built; the folder counts as built only once its marker (`MARKER`) is written,
which happens last, after the versions inside it were checked against the spec
(`daskbench.envs.installed`). A failed or interrupted build leaves no marker and is removed; the installer's
output stays in ``<key>.log``, a failed step is one line (`daskbench.envs.failures`).

``build(spec, options, inherit=True)`` makes an *overlay* instead (part of the key): a virtualenv whose
site-packages holds only the pins (installed without their dependencies) and a ``.pth`` that adds this
interpreter's site-packages after its own (`overlay_of`), so everything else, daskbench included, is
this interpreter's: seconds to build, what ``daskbench bisect --inherit`` uses. Source trees (`EnvSpec.sources`)
are built in isolation; uv tries its cache alone first, so a build backend fetched once needs no network again.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from daskbench.envs import known
from daskbench.envs.failures import InstallFailed, disk_fault, failure_line
from daskbench.envs.index import Index
from daskbench.envs.installed import BrokenEnvironment, check_versions
from daskbench.envs.installers import Build, Installer, choose_installer, compile_command, interpreter
from daskbench.envs.specs import EnvSpec
from daskbench.errors import DaskbenchError, check_writable
from daskbench.model import now_iso
from daskbench.text import plural, say

#: Environment variable naming the cache folder (default ``~/.cache/daskbench/envs``).
CACHE_ENV = "DASKBENCH_ENV_CACHE"
#: The file a finished environment holds; written last, so its presence means "built and checked".
MARKER = "daskbench-env.json"
#: Seconds one installer step (create, install) may take before it is stopped and said: a build from
#: source on a slow machine takes minutes, an index that stopped answering would take forever.
STEP_TIMEOUT_S = 1800

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


def is_built(folder: Path) -> bool:
    """Whether ``folder`` holds a finished environment (its marker is written last)."""
    return (folder / MARKER).is_file()


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
    choices = _choices(replace(spec, overlay=overlay_source()) if inherit else spec, options.extra_pins, era_from)
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
    return _first_built(root, choices, options, say, broken)


def _first_built(root: Path, choices: list[EnvSpec], options: BuildOptions, say: Say, broken: set[Path]) -> Path:
    """The interpreter of the first of ``choices`` that installs, built under ``root`` (a ``broken`` folder anew);
    a disk that fills or goes away meanwhile is one line naming the cache."""
    tool = choose_installer(options.installer)
    check_writable(root, cache_flag(options.cache), folder=True)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for attempt, chosen in enumerate(choices, 1):
            folder = root / chosen.key()
            try:
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
    if not (job.spec.sources and job.tool.name == "uv" and _succeeds(offline(command), job.log)):
        _run(job, command, "a", "install")
    _compile(folder, job)


def _compile(folder: Path, job: Build) -> None:
    """Byte-compile what was installed (`compile_command`). A module that does not compile (a library's file
    for another Python) stays as it is, as pip leaves it: the environment works without its bytecode; a full
    disk is said as such."""
    done = _logged(compile_command(folder), job.log, "a")
    if done is not None and done.returncode != 0:
        _raise_disk_fault(done.stdout + done.stderr)


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
        _raise_disk_fault(done.stdout + done.stderr)
        raise InstallFailed(failure_line(done.stdout + done.stderr, job, what))


def _raise_disk_fault(output: str) -> None:
    """A failed step's output that names a full or read-only disk, raised as that `OSError`: the machine's fault,
    said as the cache's (`build`), never the request's."""
    disk = disk_fault(output)
    if disk is not None:
        raise OSError(disk, os.strerror(disk))


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
