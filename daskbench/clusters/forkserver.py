"""Worker processes forked from a server that has already imported the heavy libraries.

A measurement restarts its workers (clean memory, independent rounds). With Dask's default
``distributed.worker.multiprocessing-method: spawn`` every restarted worker is a new interpreter
that imports distributed, dask, numpy, pandas... again: 1-3 s a restart on this project's 2-core
machine, and as long again to import the workload's libraries (the warm-up), for a compute of
tenths of a second. With ``forkserver`` (Dask's own setting) a worker is forked from a server
process started once, which imported those modules at its start (`set_forkserver_preload`): a
restart takes about a tenth of that, and the warm-up finds the modules there.

What a spawned worker gets, a forked one gets too: the server is started by the first nanny of the
process after it set ``distributed.nanny.pre-spawn-environ`` (OMP_NUM_THREADS=1 and the rest), so
the preloaded numpy reads them as a spawned worker's would; each worker is a new process, its
memory fresh. A release of distributed without `distributed.utils.get_mp_context` (before 2023.4)
reads the method once at import, so it keeps spawning; so does a user's explicit
``--config distributed.worker.multiprocessing-method=...`` (or a method other than spawn in their Dask
config) and ``DASKBENCH_WORKER_START=spawn``. The method used is recorded on every measurement
(``extra["worker_start"]``). A spawned worker inherits the environment of the moment it starts, a forked one
that of the server's start: the variables set or changed since (`environ_changes`) are handed to each
worker by its nanny (clusters/local.py), as Dask hands on ``distributed.nanny.environ``; a variable
removed since is still there in a forked worker.

`import_all` is what a measurement's warm-up runs on the workers: it lives here, in a module that imports
nothing heavy and that the server preloads, so the warm-up itself costs a restarted worker no import.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable

#: The Dask config key that chooses how a nanny starts its worker process.
METHOD_KEY = "distributed.worker.multiprocessing-method"
#: ``spawn`` keeps Dask's default (every restarted worker a new interpreter).
ENV = "DASKBENCH_WORKER_START"
#: What the server imports besides what distributed preloads itself, when the client has them.
LIBRARIES = (
    "dask",
    "dask.array",
    "dask.dataframe",
    "dask.bag",
    "numpy",
    "pandas",
    "pyarrow",
    "xarray",
    "scipy",
    "s3fs",
    "psutil",
    "pytest",  # every benchmark module imports it, and the warm-up imports the benchmark's module
)
#: This process's environment when the server was set up (the server starts with it), or None before.
_ENVIRON_AT_START: dict[str, str] | None = None
#: Packages whose functions run on the workers (collectors, workloads, this module's `import_all`): their
#: modules the client has loaded are preloaded.
ON_WORKERS = ("daskbench.metrics", "daskbench.workloads", "daskbench.clusters.forkserver")


def wanted() -> bool:
    """Whether workers should be forked: unless ``DASKBENCH_WORKER_START=spawn`` or the Dask config names a
    method other than its default (a user's choice, kept)."""
    import dask

    if os.environ.get(ENV, "").strip().lower() == "spawn":
        return False
    return dask.config.get(METHOD_KEY, "spawn") in ("spawn", "forkserver")


def method() -> str:
    """The method the nannies of this process start their workers with now."""
    import dask

    return str(dask.config.get(METHOD_KEY, "spawn"))


def preload(loaded: Iterable[str]) -> list[str]:
    """The modules the server imports: `LIBRARIES` the client has, and the workload modules it has."""
    names = [name for name in LIBRARIES if name in loaded]
    names += sorted(name for name in loaded if name.startswith(ON_WORKERS))
    return ["distributed", *dict.fromkeys(names)]


def use_forkserver(loaded: Iterable[str]) -> str:
    """Make the nannies this process starts fork their workers from a preloading server, where this
    distributed can; returns the method the workers will be started with (``forkserver`` or ``spawn``)."""
    import multiprocessing

    import dask

    utils = importlib.import_module("distributed.utils")
    possible = hasattr(utils, "get_mp_context") and "forkserver" in multiprocessing.get_all_start_methods()
    if not wanted() or not possible:
        return method()
    dask.config.set({METHOD_KEY: "forkserver"})  # read by every nanny at every worker start
    # ours is the server's preload: what this process has loaded by now, so everything the warm-up will ask a
    # fresh worker to import is already in the forked process. distributed would set its own once, first
    # importing every optional package it knows into this process (pandas, pyarrow, lz4...) only to see which
    # exist: about a second of CPU of every session, here and again in the server, for a suite that uses
    # neither; its flag (where it has one) says that is done.
    names = preload([*loaded, *sys.modules])
    if hasattr(utils, "_forkserver_preload_set"):
        setattr(utils, "_forkserver_preload_set", True)  # noqa: B010 (a private name of distributed, where it has it)
    context = utils.get_mp_context()
    context.set_forkserver_preload(names)
    global _ENVIRON_AT_START
    if _ENVIRON_AT_START is None:  # the server, once started, lives as long as this process
        _ENVIRON_AT_START = dict(os.environ)
    return "forkserver"


def environ_changes() -> dict[str, str]:
    """The variables this process set or changed since the server was set up (none before, or when spawning)."""
    if _ENVIRON_AT_START is None:
        return {}
    return {name: value for name, value in os.environ.items() if _ENVIRON_AT_START.get(name) != value}


#: What `import_all` says of a module that is not there at all (not on the worker's path, not installed).
ABSENT = "absent"


def import_all(modules: tuple[str, ...]) -> dict[str, str]:
    """Import what can be imported (on a worker); returns, for each module that could not be, `ABSENT` when it is
    not there at all (a library this worker lacks, a benchmark file a remote worker does not have), else the
    exception's line (``ImportError: ...``): the module is there but its code fails on this worker."""
    failed = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:
            failed[name] = ABSENT if error.name == name else _line(error)
        except Exception as error:
            failed[name] = _line(error)
    return failed


def _line(error: BaseException) -> str:
    """``TypeName: message`` on one line, at most 300 characters (`daskbench.text.one_line`, not imported here)."""
    return " ".join(f"{type(error).__name__}: {error}".split())[:300]
