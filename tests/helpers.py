"""Plain helpers the harness's own tests share: constants and functions, no fixtures, no tests.

Fixtures live in tests/conftest.py, where pytest finds them. Test modules import shared
helpers from this module and never from one another or from conftest.py
(tests/test_test_layout.py checks that). What lives here:

- records: ``HOST``, ``make_run``, ``make_case``, ``make_measurement`` (records, not yet
  stored) and ``add_run``, ``add_results`` (runs with readable ids and their repeats,
  written into a store), ``add_lockstep_group`` (a lockstep A/B group's parts, as its sessions store them;
  ``lockstep_test`` the test it names); ``advise_config`` and ``ADVISE_RUN`` (one measured configuration
  for ``daskbench advise``);
- processes: ``run_pytest`` (pytest with the daskbench plugin in a fresh process),
  ``daskbench_cli`` (the CLI in a fresh process, or in this one given ``capsys``),
  ``BENCH_FILE`` (a two-benchmark suite for them to run), ``scheduler_and_worker`` (a real
  ``dask scheduler`` and ``dask worker`` on loopback), ``free_port``, ``wait_for`` (poll for
  an event with a generous deadline, never a fixed sleep), and ``pg_bin``, ``as_postgres``,
  ``POSTGRES_PASSWORD`` for the PostgreSQL server fixture;
- browser: ``CHROMIUM``, ``needs_chromium``, ``Visit``, ``open_offline``,
  ``metric_switch`` and ``RENDERED`` for the reports opened in headless Chromium;
- the machine: ``machine_lock`` (behind the ``quiet_machine`` fixture); its faults: ``mount`` and
  ``unmount`` (behind the ``tmpfs`` and ``read_only_mount`` fixtures), ``fill_disk``, ``obeying_file_modes``
  (root that obeys file modes);
- the stand-in package (its module, wheel, project and suite: testing/standin.py, shared with measure/):
  ``standin_commit`` (one version of it committed), ``standin_checkout`` (a checkout of versions, one slower)
  and ``git``.

Larger stand-ins have modules of their own: report_data.py (the report's story store),
s3server.py (moto's S3) and import_graph.py; testing/github_server.py (GitHub's issues API) and
testing/wheel.py (``write_wheel``) serve ci/nightly --quick too, and testing/standin.py measure/bisect-under-load;
they live in testing/, which never imports tests/.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from daskbench.model import Case, ClusterSpec, Measurement, Run, TaskMemory, now_iso
from daskbench.store import Store
from testing.standin import standin_project

if TYPE_CHECKING:  # imported where used: conftest.py imports this module in every session
    from daskbench.advise import Config

MIB, GIB = 2**20, 2**30

# -- records ---------------------------------------------------------------------------------

#: The one host every invented run ran on.
HOST = {"cpu_model": "Test CPU @ 3GHz", "cores": 8, "memory_bytes": 16 * GIB, "platform": "Linux-test"}
#: When ``add_run(store, 0)`` started; run ``index`` starts ``index`` hours later.
START = datetime(2026, 1, 1, tzinfo=UTC)
#: ``add_results``' repeats: runtime and memory times (1 + each of these).
NOISE = (-0.01, 0.0, 0.01)


def make_run(**overrides: Any) -> Run:
    """A finished run with a random id, versions, ``HOST`` and a dask config; ``overrides`` replace fields."""
    values: dict[str, Any] = {
        "run_id": str(uuid.uuid4()),
        "label": "test",
        "started_at": now_iso(),
        "ended_at": now_iso(),  # a finished run: compare's defaults use finished runs only
        "versions": {"dask": "2026.8.0", "python": "3.11.7"},
        "host": HOST,
        "dask_config": {"distributed.scheduler.worker-saturation": 1.1},
    }
    return Run(**{**values, **overrides})


def make_case(workload: str = "ocean_anomaly", n_workers: int = 2, saturation: float = 1.1, **params: Any) -> Case:
    """A case on a local cluster of ``n_workers`` 1-thread 4 GiB workers; ``params`` default to size tiny."""
    spec = ClusterSpec("local", n_workers, 1, 4 * GIB, saturation)
    return Case(workload, params or {"size": "tiny"}, spec)


def make_measurement(run: Run, case: Case, repeat: int = 0, **overrides: Any) -> Measurement:
    """A passed measurement of ``case`` in ``run`` with every metric set; ``overrides`` replace fields."""
    values: dict[str, Any] = {
        "run_id": run.run_id,
        "fingerprint": case.fingerprint,
        "repeat": repeat,
        "outcome": "passed",
        "runtime_s": 1.0,
        "peak_memory_bytes": 2 * GIB,
        "peak_worker_memory_bytes": GIB,
        "cost_usd": 0.001,
        "timeline": ((0.0, 100), (0.5, 200)),
    }
    return Measurement.of(**{**values, **overrides})


def add_run(
    store: Store, index: int, *, label: str = "nightly", host: dict[str, Any] | None = None, **extra: Any
) -> Run:
    """Store and return the finished run ``run{index:03d}-{label}``, started ``index`` hours after ``START``."""
    run = Run(
        run_id=f"run{index:03d}-{label}",
        label=label,
        started_at=(START + timedelta(hours=index)).isoformat(),
        host=host or HOST,
        **{"ended_at": (START + timedelta(hours=index, minutes=30)).isoformat(), **extra},  # a finished run
    )
    store.add_run(run)
    return run


def add_results(
    store: Store, run: Run, case: Case, runtime: float, *, noise: tuple[float, ...] = NOISE, outcome: str = "passed"
) -> None:
    """One measurement per repeat: runtime * (1 + noise[i]), memory 1 GiB * the same factor."""
    store.add_case(case)
    for repeat, wiggle in enumerate(noise):
        ok = outcome == "passed"
        store.add_measurement(
            Measurement.of(
                run_id=run.run_id,
                fingerprint=case.fingerprint,
                repeat=repeat,
                outcome=outcome,  # type: ignore[arg-type]
                message="" if ok else "KilledWorker: worker exceeded 95% memory budget",
                runtime_s=runtime * (1 + wiggle) if ok else None,
                peak_memory_bytes=int(GIB * (1 + wiggle)) if ok else None,
            )
        )


def add_lockstep_group(
    store: Store,
    group: str,
    ratios: list[tuple[Case, list[list[float]]]],
    *,
    first: int = 0,
    tags: dict[str, str] | None = None,
    suite: bool = True,
    others: float | None = None,
    calls: tuple[int, ...] = (),
) -> list[Run]:
    """A lockstep A/B group as its sessions store it: part ``p`` is runs ``GROUP-A{p+1}``/``GROUP-B{p+1}`` (run
    indexes from ``first``), round ``r`` of case ``c`` in it a repeat of 1 s on side A and ``parts[p][r]`` s on
    side B (``ratios``: pairs of ``c`` and its ``parts``) (its memory the same on both sides). ``suite``: measured with false alarms counted per suite (tag
    ``ab_suite_alpha``), as ``ab``, ``pr`` and ``confirm`` measure; each measurement names its test
    (`lockstep_test`) and its phases (0.5 s restart, its compute), and ``others``, when given, the cores other work
    used during it (``extra["others_cores"]``); ``calls``: the calls each of the first part's rounds made
    (``extra["loops"]``; one when not given). Returns the runs, A before B in each part."""
    parts = max(len(per_part) for _, per_part in ratios)
    shared = {"ab_group": group, "ab_mode": "lockstep", "ab_max_rounds": "30", "ab_repeat_within": "1.2",
              **({"ab_suite_alpha": "0.1", "ab_family": "1"} if suite else {}), **(tags or {})}  # fmt: skip
    runs = []
    for number in range(parts):
        for offset, side in enumerate("AB"):
            run_tags = {**shared, "ab_side": side, "ab_round": str(number)}
            run = add_run(store, first + 2 * number + offset, label=f"{group}-{side}{number + 1}", tags=run_tags)
            runs.append(run)
            for case, per_part in ratios:
                store.add_case(case)
                for repeat, ratio in enumerate(per_part[number] if number < len(per_part) else []):
                    runtime = 1.0 if side == "A" else ratio
                    phases = {"restart": 0.5, "compute": runtime}
                    test = {"test": lockstep_test(case), **({"others_cores": others} if others is not None else {})}
                    if number == 0 and repeat < len(calls):
                        test["loops"] = calls[repeat]
                    store.add_measurement(make_measurement(run, case, repeat, runtime_s=runtime, cost_usd=runtime / 1000,
                                                           phases=phases, extra=test))  # fmt: skip
    return runs


def lockstep_test(case: Case) -> str:
    """The pytest node id `add_lockstep_group` records for a case: ``benchmarks/bench.py::test_<workload>``."""
    return f"benchmarks/bench.py::test_{case.workload}"


#: The sweep ``advise_config``'s measurements belong to.
ADVISE_RUN = Run(run_id="abcdef12-0000-4000-8000-000000000000", label="sweep", started_at="2026-11-01T00:00:00+00:00")


def advise_config(threads: int, memory: int, runtime: float, cost: float, *, peak: int = 600 * MIB,
                  outcome: str = "passed", target: str | None = None) -> Config:  # fmt: skip
    """One wordcount configuration of ``ADVISE_RUN`` (1 worker), its task prefixes peaking at ``peak``."""
    from daskbench.advise import Config

    spec = ClusterSpec("local", 1, threads, memory, 1.1,
                       scheduler_config=(("distributed.worker.memory.target", target),) if target else ())  # fmt: skip
    case = Case("wordcount", {"size": "small"}, spec)
    tasks = (TaskMemory("read-block", 63, peak, peak // 2, 1000, threads), TaskMemory("tally", 63, 5 * MIB, 4 * MIB))
    ok = outcome == "passed"
    m = Measurement.of(run_id=ADVISE_RUN.run_id, fingerprint=case.fingerprint, repeat=0, outcome=outcome,
                       runtime_s=runtime if ok else None, cost_usd=cost if ok else None,
                       peak_worker_memory_bytes=900 * MIB, tasks=tasks if ok else ())  # fmt: skip
    return Config(case, (m,), ADVISE_RUN.run_id)


# -- processes -------------------------------------------------------------------------------

#: A benchmark suite of two small sums; the second prepares its input with ``measure.prepare``.
BENCH_FILE = """
import time
import dask
import numpy as np
import pytest

pytestmark = pytest.mark.benchmark


def _total(n):
    return int(np.arange(n).sum())


def test_small_sum(measure):
    assert measure(lambda: dask.delayed(_total)(1000), name="small_sum", params={"n": 1000}) == 499500


def test_other_sum(measure):
    n = measure.prepare(lambda: (time.sleep(0.2), 10)[1])
    assert measure(dask.delayed(_total)(n), name="other_sum", params={"n": n}) == 45
"""


def run_pytest(
    folder: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """Run pytest with the daskbench plugin in ``folder`` as a user would, in a fresh process."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]  # daskbench loads by entry point
    return subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def daskbench_cli(
    *args: str,
    capsys: pytest.CaptureFixture[str] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 120,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``daskbench ARGS``; its exit code, stdout and stderr.

    By default in a fresh ``python -m daskbench`` process, as a user runs it: the exit code,
    the output and the logging are the real ones. Given ``capsys``, in this process through
    ``daskbench.cli.main`` (much faster), with the output captured since capsys was last read.
    ``cwd``, ``env`` (added to this environment) and ``timeout`` are for the process only;
    ``check`` raises `subprocess.CalledProcessError` on a non-zero exit.
    """
    if capsys is None:
        return subprocess.run([sys.executable, "-m", "daskbench", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=check, env={**os.environ, **(env or {})})  # fmt: skip
    if cwd is not None or env is not None:
        raise ValueError("daskbench_cli: cwd and env need a process; drop capsys to run one")
    from daskbench.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    done = subprocess.CompletedProcess(["daskbench", *args], code, out, err)
    if check:
        done.check_returncode()
    return done


#: A lockstep `daskbench ab` suite of two cases: ``sleepy`` sleeps 0.3 s x $DASKBENCH_TEST_SLOWDOWN (a slowdown planted on one side)
#: and ``steady`` does not, so one comparison has a changed and an unchanged case.
LOCKSTEP_BENCH = """
import os
import time

import dask
import pytest

pytestmark = pytest.mark.benchmark


def _work(seconds):
    time.sleep(seconds)
    return 1


def test_sleepy(measure):
    seconds = 0.3 * float(os.environ.get("DASKBENCH_TEST_SLOWDOWN", "1"))
    assert measure(dask.delayed(_work)(seconds), name="sleepy", params={}) == 1


def test_steady(measure):
    assert measure(dask.delayed(_work)(0.3), name="steady", params={}) == 1
"""
LOCKSTEP_SESSION = ["--", "--workers", "1", "--saturation", "inf"]


def run_ab(folder: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``daskbench ab --db DB --format json ARGS`` in ``folder``, in a fresh process."""
    command = [sys.executable, "-m", "daskbench", "ab", "--db", db, "--format", "json", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


def runtime_verdicts(stdout: str) -> dict[str, dict[str, object]]:
    """The ``runtime_s`` verdicts of a ``--format json`` comparison, by workload."""
    found = json.loads(stdout)["verdicts"]
    return {str(v["workload"]): v for v in found if v["metric"] == "runtime_s"}


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def scheduler_and_worker(folder: Path, worker_path: str = "") -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real `dask scheduler` and one `dask worker` (with nanny) on loopback: the address and the
    scheduler's process (for the test to kill); both are ended afterwards, whatever became of them.
    ``worker_path``: a folder put first on the worker's ``PYTHONPATH`` (a ``sitecustomize.py`` there runs in it)."""
    from distributed import Client

    port, bin_dir = free_port(), Path(sys.executable).parent
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(folder)}  # the benchmark module is importable where tasks run
    scheduler = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0", "--no-dashboard"], cwd=folder, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    worker_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [worker_path, str(folder)]))}
    worker = subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nthreads", "1", "--memory-limit", "2GiB",
                               "--dashboard-address", ":0", "--no-dashboard"], cwd=folder, env=worker_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address, scheduler
    finally:
        for process in (worker, scheduler):
            process.kill()
            process.wait(timeout=30)


def wait_for(event: Callable[[], object], what: str, *, within: float = 240.0, every: float = 0.05) -> None:
    """Poll ``event()`` until it is true; an AssertionError naming ``what`` after ``within`` seconds.

    How tests wait for something to happen (a task started, a row stored, a process gone) instead of
    sleeping a fixed time: the deadline is generous, as a busy machine is slow, not wrong."""
    deadline = time.monotonic() + within
    while not event():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:g} s")
        time.sleep(every)


#: The password in the test PostgreSQL server's URL: no output may ever show it.
POSTGRES_PASSWORD = "hunter2-not-for-logs"
#: The token the `github` fixture puts in GITHUB_TOKEN: it must never reach output, JSON or a summary.
GITHUB_TEST_TOKEN = "ghs_secret-token-value"
#: The pull request the module-wide loopback GitHub (tests/conftest.py ``pull_github``) has.
PULL_NUMBER = 7


def pg_bin() -> Path:
    """The newest PostgreSQL server's bin folder; skips the test when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("no PostgreSQL server binaries; run ci/setup --test to install Debian's postgresql")
    return Path(found[-1]).parent


def as_postgres(command: list[str]) -> list[str]:
    """initdb refuses to run as root; run the server as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass
class Postgres:
    """A real PostgreSQL server on loopback, its data in ``folder``: `start` (initdb the first time), `stop`
    (``pg_ctl -m MODE stop``: ``immediate`` is a crash), `url` (with `POSTGRES_PASSWORD`); `stop_command` is
    the argv that stops it (`start_command` starts it again), for a benchmark that stops it mid-session."""

    folder: Path
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"postgresql://postgres:{POSTGRES_PASSWORD}@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> list[str]:
        return as_postgres([str(pg_bin() / "pg_ctl"), "-D", str(self.folder / "data"), *args])

    def start(self) -> Postgres:
        if not (self.folder / "data").exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(self.folder, "postgres")
            initdb = [str(pg_bin() / "initdb"), "-D", str(self.folder / "data"), "-U", "postgres", "--auth=trust"]
            subprocess.run(as_postgres(initdb), check=True, capture_output=True)
        subprocess.run(self.start_command(), check=True, capture_output=True)
        return self

    def start_command(self) -> list[str]:
        """The argv that starts the server once its data folder exists."""
        options = f"-p {self.port} -k {self.folder} -h 127.0.0.1"
        return self._ctl("-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop_command(self, mode: str = "immediate") -> list[str]:
        return self._ctl("-m", mode, "-w", "stop")

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(self.stop_command(mode), capture_output=True)


# -- faults of the machine: mounts, a full disk, file modes obeyed -----------------------------


def obeying_file_modes() -> tuple[str, ...]:
    """The command prefix under which this process's user obeys file modes (root without its
    capabilities to override them); skips the test where that cannot be had."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv (util-linux) to drop the capabilities that override file modes")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def mount(*args: str) -> None:
    """``mount ARGS``; skips the test where this process may not mount."""
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip() or 'not permitted'}); this fault needs a real mount")


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill_disk(folder: Path) -> None:
    """Write into ``folder`` until its file system has no byte left."""
    with (folder / "filler").open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


# -- browser ---------------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
#: Skips a test when Debian's chromium is not installed.
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: apt-get install chromium (ci/setup --test)"
)

#: Every chart rendered: each Bokeh root's view has a size, and so does every canvas in the shadow DOM.
RENDERED = """() => {
  if (!window.Bokeh || !Bokeh.documents.length) return null;
  const roots = [...document.querySelectorAll(".chart [data-root-id]")].map(el => {
    const view = el.firstElementChild;
    const box = view ? view.getBoundingClientRect() : {width: 0, height: 0};
    return [box.width, box.height];
  });
  const canvases = [];
  const walk = node => {
    for (const el of node.querySelectorAll("*")) {
      if (el.tagName === "CANVAS") canvases.push([el.width, el.height]);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return {roots, canvases};
}"""
READY = f"""() => {{
  const found = ({RENDERED})();
  return found && found.roots.length > 0 && found.roots.every(([w, h]) => w > 0 && h > 0)
    && found.canvases.length >= found.roots.length ? found : null;
}}"""


@dataclass
class Visit:
    """What the browser saw while it had a report open."""

    page: object
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def open_offline(browser: object, path: Path) -> Iterator[Visit]:
    """Open ``path`` from disk offline; record console errors, requests and dialogs."""
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    visit = Visit(page)
    page.on("console", lambda message: visit.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: visit.errors.append(str(error)))
    page.on("request", lambda request: visit.requests.append(request.url))
    page.on("dialog", lambda dialog: (visit.dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_function(READY, timeout=60_000)
    try:
        yield visit
    finally:
        context.close()


def metric_switch(metric: str) -> str:
    """The visible button of the metric switch (the radio itself is visually hidden)."""
    return f'input[name="metric"][value="{metric}"] + span'


# -- the machine, shared by test processes ----------------------------------------------------


@contextmanager
def machine_lock(path: Path, *, exclusive: bool) -> Iterator[None]:
    """A lock on the machine's CPUs between test processes (pytest-xdist workers): a test that
    loads every core on purpose holds it ``exclusive``; tests whose verdicts depend on measured
    time hold it shared, so the load of one never lands in the other's measurements."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def cpu_load(processes: int, nice: int = 0) -> Iterator[None]:
    """``processes`` busy loops, as another job on a shared CI machine; at ``nice`` 19 they still count as
    runnable but leave a timed test beside them its cores."""
    loop = f"import os; os.nice({nice})\nwhile True: pass"
    burners = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(processes)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


# -- the stand-in package and git -------------------------------------------------------------


def standin_commit(repo: Path, note: int, seconds: float, subject: str) -> str:
    """Write the stand-in at version 1.``note`` sleeping ``seconds`` into the checkout ``repo``, commit it; the
    commit's id."""
    standin_project(repo, f"1.{note}", seconds)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def standin_checkout(
    repo: Path, count: int, slower_from: int, slower: float, subjects: Mapping[int, str] | None = None, broken: int = 0
) -> list[str]:
    """A git checkout of the stand-in at ``repo``: a first commit whose ``work()`` sleeps 0.5 s, then ``count``
    commits (subject ``note N`` unless ``subjects`` names it), ``slower`` times that from commit ``slower_from`` on;
    commit ``broken`` (0: none) with a pyproject.toml that does not parse. The commits' ids, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commits = [standin_commit(repo, 0, 0.5, "standin: work() sleeps 0.5 s")]
    for note in range(1, count + 1):
        seconds = round(0.5 * (slower if note >= slower_from else 1.0), 3)
        commits.append(standin_commit(repo, note, seconds, (subjects or {}).get(note, f"note {note}")))
        if note == broken:
            (repo / "pyproject.toml").write_text("[project\nname = 'standin'\n")
            git(repo, "commit", "-q", "-a", "--amend", "-m", f"note {note}: a pyproject.toml that does not parse")
            commits[-1] = git(repo, "rev-parse", "HEAD")
    return commits


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """``git ARGS`` in ``repo`` as a fixed test author (never signing), in ``env`` (default: this process's); its
    output, stripped. Fails on an error."""
    author = ["-c", "user.name=daskbench tests", "-c", "user.email=tests@daskbench.invalid"]
    command = ["git", "-C", str(repo), *author, "-c", "commit.gpgsign=false", *args]
    ran = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120, env=env)
    return ran.stdout.strip()
