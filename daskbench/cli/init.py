"""``daskbench init [DIR]``: an example benchmark, settings and a nightly workflow for a repository.

Writes ``benchmarks/test_daskbench_example.py`` and ``.github/workflows/daskbench-nightly.yml``
(an existing one is replaced only with ``--force``), appends ``[tool.daskbench]`` and
``[tool.pytest.ini_options]`` to ``pyproject.toml`` (created if missing) where the repository
has no such settings yet, and ``results/`` to ``.gitignore`` unless a line ignores it already.
Settings a repository already has are never touched: what to add by hand is printed instead.
Everything is checked before the first file is written. The workflow installs daskbench from
where this one was installed from (`install_requirement`), unless ``--install`` says otherwise, then the
repository if it is a package, else its benchmarks' requirements (`envs.install_lines`: the rule
``daskbench pr`` follows).
``daskbench init --pr-workflow`` writes only ``.github/workflows/daskbench-pr.yml``: ``daskbench pr`` on pull
requests labelled ``benchmark`` (installed the same way), and warns of what would not work in CI
(`envs.ci_warnings`).
"""

from __future__ import annotations

import argparse
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from daskbench import envs
from daskbench.cli.common_args import add_old_spellings
from daskbench.cli.output import print_wrapped
from daskbench.cli.values import whole_number
from daskbench.config import MAX_SHARDS
from daskbench.errors import DaskbenchError, check_writable
from daskbench.text import say

BENCHMARK = Path("benchmarks", "test_daskbench_example.py")
WORKFLOW = Path(".github", "workflows", "daskbench-nightly.yml")
PR_WORKFLOW = Path(".github", "workflows", "daskbench-pr.yml")
PYPROJECT = "pyproject.toml"
#: Other files pytest reads its settings from, with the section it reads (pytest.ini: even
#: when empty). pytest takes the first it finds, pyproject.toml before tox.ini and setup.cfg,
#: so a pytest table added to pyproject.toml would silently override these.
OTHER_PYTEST_FILES = (("pytest.ini", None), (".pytest.ini", None), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))
GITIGNORE = ".gitignore"
#: .gitignore lines that already keep results/ (the store, the report) out of git.
IGNORES_RESULTS = frozenset({"results", "results/", "/results", "/results/"})
#: The one line printed when daskbench came from a local path (the workflow's comment says it too).
LOCAL_WARNING = (
    "daskbench came from a local path CI cannot reach; rerun with --force --install 'daskbench @ git+https://...'"
)
LOCAL_COMMENT = (
    "# CI cannot reach this local path: put 'daskbench @ git+https://...' or a wheel URL here,",
    "# or run daskbench init --force --install SPEC (this is where daskbench was installed from)",
)
DESCRIPTIONS = {
    BENCHMARK: "an example benchmark (ocean anomaly, its result checked at every size)",
    WORKFLOW: "nightly: pytest -m benchmark judged on its history; what regressed confirmed, alerted, bisected",
    PR_WORKFLOW: "pull requests labelled benchmark: daskbench pr, base and head side by side, one comment",
}


@dataclass
class SettingsPlan:
    """What happens to pyproject.toml: its new text (None: unchanged), and what to add by hand."""

    text: str | None = None
    added: list[str] = field(default_factory=list)
    manual: list[tuple[str, str]] = field(default_factory=list)  # (what to do, snippet)


#: ``init``'s texts (add_parser's keywords).
TEXTS = {
    "help": "add an example benchmark, settings and a nightly workflow to a repository",
    "description": "Write benchmarks/test_daskbench_example.py and .github/workflows/daskbench-nightly.yml, "
    "and add [tool.daskbench] and [tool.pytest.ini_options] to pyproject.toml unless the repository "
    "has such settings already (then what to add is printed). Existing files are never overwritten "
    "without --force. With --pr-workflow, only the pull-request workflow .github/workflows/daskbench-pr.yml "
    "(daskbench pr on pull requests labelled benchmark).",
}
#: The help of ``init``'s options.
HELP = {
    "dir": "the repository's top folder (default: the current one; created if missing)",
    "--force": "replace an existing example benchmark or workflow",
    "--install": "what the workflow pip-installs as daskbench (default: where this daskbench was installed from; "
    "e.g. 'daskbench @ git+https://HOST/ORG/daskbench@v0.1.0' or a wheel URL)",
    "--pr-workflow": "write only .github/workflows/daskbench-pr.yml: base and head of pull requests labelled "
    "benchmark side by side (daskbench pr), one comment kept up to date, a status on the head",
    "--shards": "split the suite over N runners (a GitHub Actions matrix): the nightly's, each runner a pytest -m "
    "benchmark --shard K/N judging its own cases, then one job carries the night to the history; with "
    "--pr-workflow, each a daskbench pr --shard K/N, then one job merges them (daskbench merge); default 1",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("init", **TEXTS)
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help=HELP["dir"])
    parser.add_argument("--force", action="store_true", help=HELP["--force"])
    parser.add_argument("--install", metavar="SPEC", help=HELP["--install"])
    parser.add_argument("--pr-workflow", action="store_true", help=HELP["--pr-workflow"])
    add_old_spellings(parser, "--pr-workflow", "--pr")
    shards = whole_number(1, MAX_SHARDS, "a number of runners", "--shards 4")
    parser.add_argument("--shards", type=shards, default=1, metavar="N", help=HELP["--shards"])
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if args.pr_workflow:
        return _init_pr(args, root)
    if root.exists() and not root.is_dir():
        raise DaskbenchError(f"{root} is not a directory; give the repository's top folder")
    for path in (root, root / BENCHMARK, root / WORKFLOW):  # the folder first: the shorter line
        check_writable(path, "daskbench init", folder=path == root)
    pyproject = _read_pyproject(root)
    install, warning = (args.install, None) if args.install is not None else _installed_requirement()
    workflow = _nightly(root, install, warning, args.shards)
    files = {BENCHMARK: _template("test_daskbench_example.py.tmpl"), WORKFLOW: workflow}
    replaced = _check_overwrite(root, files, force=args.force)
    plan = _plan_settings(root, pyproject)
    ignore = _gitignore_text(root)
    _write(root, files, plan, ignore)
    installs = _installs(root, install)
    _print_summary(root, files, replaced, plan, installs, ignored=ignore is not None, shards=args.shards)
    if warning:
        say(f"warning: {warning}")
    return 0


def _init_pr(args: argparse.Namespace, root: Path) -> int:
    """Only the pull-request workflow, checked like the rest before it is written."""
    if root.exists() and not root.is_dir():
        raise DaskbenchError(f"{root} is not a directory; give the repository's top folder")
    for path in (root, root / PR_WORKFLOW):
        check_writable(path, "daskbench init", folder=path == root)
    install, warning = (args.install, None) if args.install is not None else _installed_requirement()
    _read_pyproject(root)  # a broken one is one line before anything is written
    files = {PR_WORKFLOW: _pr_workflow(root, install, warning, args.shards)}
    replaced = _check_overwrite(root, files, force=args.force)
    _write(root, files, SettingsPlan(), None)
    print(f"daskbench init: in {root.resolve()}")
    what = DESCRIPTIONS[PR_WORKFLOW] + (f"; in {args.shards} shards, merged by one job" if args.shards > 1 else "")
    print_wrapped(f"  {'replaced' if replaced else 'wrote'} {PR_WORKFLOW}: {what}")
    print_wrapped(f"  workflow installs: {_installs(root, install)}")
    for line in [*([warning] if warning else []), *envs.ci_warnings(root)]:
        say(f"warning: {line}")
    print("next: commit it, then label a pull request benchmark (a fork's pull request gets the job summary only)")
    return 0


def _write(root: Path, files: dict[Path, str], plan: SettingsPlan, ignore: str | None) -> None:
    """The files, pyproject.toml's new text and .gitignore's (None: unchanged), once all are checked."""
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    if plan.text is not None:
        (root / PYPROJECT).write_text(plan.text)
    if ignore is not None:
        (root / GITIGNORE).write_text(ignore, encoding="utf-8", errors="surrogateescape")


def install_requirement(record: Mapping[str, Any] | None, version: str) -> tuple[str, str | None]:
    """What a workflow pip-installs to get this daskbench again, from its PEP 610 install record
    (``direct_url.json``; None: installed from an index), and `LOCAL_WARNING` when CI cannot reach it.

    A VCS install is pinned to its recorded commit, an archive is its URL
    (`envs.requirement_from_record`); a local directory, file or clone (``file://``) keeps its line,
    which only works on this machine, hence the warning."""
    (line,) = envs.requirement_from_record(record, version, editable=False)
    local = record is not None and bool(record.get("url")) and urlsplit(str(record["url"])).scheme in ("file", "")
    return line, LOCAL_WARNING if local else None


def _installed_requirement() -> tuple[str, str | None]:
    """`install_requirement` of the daskbench running now."""
    return install_requirement(*envs.install_record("so init cannot tell where CI gets it; give --install SPEC"))


def _installs(root: Path, install: str) -> str:
    """What the workflow installs, said in words: daskbench, then the package or its benchmarks' requirements."""
    found = envs.tree_shape(root)
    if found.package:
        return f"{install.strip()}, then this package ({found.why})"
    wanted = [*found.files, *(["[project] dependencies"] if found.project else [])]
    if not wanted:
        return f"{install.strip()} alone: a folder of benchmarks ({found.why}) with no requirements*.txt"
    return f"{install.strip()}, then {' and '.join(wanted)} (a folder of benchmarks, not a package: {found.why})"


def _template(name: str) -> str:
    return resources.files("daskbench").joinpath("templates", name).read_text()


def _read_pyproject(root: Path) -> dict[str, Any] | None:
    """The parsed pyproject.toml of ``root``; None if there is none."""
    path = root / PYPROJECT
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DaskbenchError(f"{path} is not valid TOML ({exc}); fix it, then run daskbench init again") from None


def _workflow(
    root: Path, install: str, warning: str | None, template: str = "daskbench-nightly.yml.tmpl", tail: str = ""
) -> str:
    """The nightly (or ``template``'s) workflow; after daskbench it installs the repository itself when it is a
    package, else the requirements of its benchmarks (`envs.install_lines`: the rule ``daskbench pr`` follows too).
    An install line CI cannot reach (``warning``) gets a comment saying what to put there instead. A job that
    measures nothing (a sharded workflow's merge or history job) installs daskbench alone. ``tail``: the template
    of the nightly's last steps (and jobs), put at its ``__TAIL__``."""
    if not install.strip() or "\n" in install:
        raise DaskbenchError(f"--install: {install!r} is not a pip requirement (example: --install daskbench==0.1.0)")
    daskbench = _daskbench_install(install, warning)
    text = _template(template).replace("__TAIL__", _template(tail) if tail else "")
    text = text.replace("__INSTALL__", _run_lines([*daskbench, *envs.install_lines(root)]))
    return text.replace("__INSTALL_DASKBENCH__", _run_lines(daskbench))  # a job measuring nothing: daskbench alone


#: What the nightly template's placeholders become: one runner, or a matrix of shards (`_nightly`).
ONE_RUNNER = {"__SHARDS_SAID__": "", "__STRATEGY__": "", "__SHARD_ENV__": "", "__SHARD_ARGS__": "",
              "__GROUP_SUFFIX__": "", "__CANDIDATE__": "", "__RUN_STEP__": ""}  # fmt: skip
#: A shard's own run among the night's (a shared store holds the other shards' too): the newest tagged with it.
RUN_STEP = """      - name: This shard's run
        id: run
        if: always()
        run: |
          daskbench runs --limit 50 --format json | python -c 'import json, os, sys
          runs = json.load(sys.stdin)["runs"]
          print("id=" + next((r["run_id"] for r in runs if r["tags"].get("shard") == os.environ["SHARD_OF"]), ""))
          ' >> "$GITHUB_OUTPUT"
"""


def _nightly(root: Path, install: str, warning: str | None, shards: int) -> str:
    """The nightly workflow: one runner, or a matrix of ``shards`` runners (each ``pytest -m benchmark --shard
    K/N``, judging, confirming, alerting and hunting its own cases on its own machine) and a job carrying the
    night's runs to the history and writing the report (which installs daskbench alone: it measures nothing)."""
    if shards == 1:
        return _filled(_workflow(root, install, warning, tail="daskbench-nightly-tail.yml.tmpl"), ONE_RUNNER)
    matrix = _matrix(shards)
    text = _workflow(root, install, warning, tail="daskbench-nightly-shards-tail.yml.tmpl")
    return _filled(text, {
        "__SHARDS_SAID__": f"\n# In {shards} shards (`daskbench init --shards {shards}`): the suite's cases split by "
        "their time in the history,\n# each shard on a runner of its own; one job then carries the night to the "
        "history and writes the report.",
        "__STRATEGY__": f"\n    strategy:\n      fail-fast: false # a shard that fails does not stop the others"
        f"\n      matrix:\n        shard: [{matrix}]",
        "__SHARD_ENV__": f'\n      SHARD: ${{{{ matrix.shard }}}}\n      SHARD_OF: "${{{{ matrix.shard }}}}/{shards}"',
        "__SHARD_ARGS__": ' --shard "$SHARD_OF"',
        "__GROUP_SUFFIX__": "-$SHARD",
        "__CANDIDATE__": ' --candidate "${{ steps.run.outputs.id }}"',
        "__RUN_STEP__": RUN_STEP,
    })  # fmt: skip


def _matrix(shards: int) -> str:
    """A workflow matrix's shard numbers: ``1, 2, 3``."""
    return ", ".join(map(str, range(1, shards + 1)))


def _filled(text: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def _daskbench_install(install: str, warning: str | None) -> list[str]:
    """The line installing daskbench, after a comment saying what to put there when CI cannot reach it."""
    return [*(LOCAL_COMMENT if warning else ()), f"python -m pip install {shlex.quote(install.strip())}"]


def _run_lines(lines: list[str]) -> str:
    """``lines`` as the body of a workflow step's ``run: |`` block."""
    return "\n".join(" " * 10 + line for line in lines)


def _pr_workflow(root: Path, install: str, warning: str | None, shards: int) -> str:
    """The pull-request workflow: one runner, or a matrix of ``shards`` runners and a job merging them (which
    installs daskbench alone: it measures nothing)."""
    if shards == 1:
        return _workflow(root, install, warning, "daskbench-pr.yml.tmpl")
    text = _workflow(root, install, warning, "daskbench-pr-shards.yml.tmpl")
    return text.replace("__SHARDS__", str(shards)).replace("__MATRIX__", _matrix(shards))


def _check_overwrite(root: Path, files: dict[Path, str], *, force: bool) -> list[Path]:
    """The files that exist already; refuses to go on unless ``force``."""
    existing = [relative for relative in files if (root / relative).exists()]
    if existing and not force:
        names = " and ".join(str(relative) for relative in existing)
        verb = "exists" if len(existing) == 1 else "exist"
        raise DaskbenchError(f"{names} already {verb} in {root}; nothing written (use --force to replace)")
    return existing


def _plan_settings(root: Path, pyproject: dict[str, Any] | None) -> SettingsPlan:
    """Append the tables the repository lacks; for settings it has, say what to add by hand."""
    tools = (pyproject or {}).get("tool", {})
    plan, snippets = SettingsPlan(), []
    daskbench_table = _template("tool-daskbench.toml")
    if "daskbench" in tools:
        plan.manual.append((f"{PYPROJECT} has [tool.daskbench] already; the settings init would add", daskbench_table))
    else:
        snippets.append(daskbench_table)
    other = _other_pytest_file(root)
    if other is not None:
        ini = f"[{other[1]}]\n{_template('tool-pytest.ini')}" if other[1] else _template("tool-pytest.ini")
        plan.manual.append((f"pytest reads its settings from {other[0]}; add there", ini))
    elif "pytest" in tools:
        plan.manual.append((f"{PYPROJECT} has pytest settings already; merge into them", _template("tool-pytest.toml")))
    else:
        snippets.append(_template("tool-pytest.toml"))
    if snippets:
        plan.text = _appended(root / PYPROJECT, snippets)
        plan.added = [snippet.splitlines()[0] for snippet in snippets]
    return plan


def _other_pytest_file(root: Path) -> tuple[str, str | None] | None:
    """The first of pytest.ini, .pytest.ini, tox.ini [pytest], setup.cfg [tool:pytest] in ``root``."""
    for name, section in OTHER_PYTEST_FILES:
        path = root / name
        if path.is_file() and (section is None or f"[{section}]" in path.read_text().splitlines()):
            return name, section
    return None


def _appended(path: Path, snippets: list[str]) -> str:
    old = path.read_text() if path.is_file() else ""
    text = (old.rstrip("\n") + "\n\n" if old.strip() else "") + "\n".join(snippets)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # e.g. a dotted key that already defines tool.daskbench
        raise DaskbenchError(f"{path}: adding the daskbench tables would break it ({exc}); add them by hand") from None
    return text


def _gitignore_text(root: Path) -> str | None:
    """``.gitignore`` with ``results/`` (the store, the report) appended; None when a line ignores it already."""
    path = root / GITIGNORE
    if path.exists() and not path.is_file():
        raise DaskbenchError(f"{path} is not a file; move it away, then run daskbench init again")
    old = path.read_text(encoding="utf-8", errors="surrogateescape") if path.is_file() else ""
    if any(line.strip() in IGNORES_RESULTS for line in old.splitlines()):
        return None
    return old + ("\n" if old and not old.endswith("\n") else "") + "results/\n"


def _print_summary(
    root: Path,
    files: dict[Path, str],
    replaced: list[Path],
    plan: SettingsPlan,
    install: str,
    *,
    ignored: bool,
    shards: int = 1,
) -> None:
    print(f"daskbench init: in {root.resolve()}")
    sharded = (
        f"; in {shards} shards, a runner each, then one job carries the night to the history" if shards > 1 else ""
    )
    for relative in files:
        verb = "replaced" if relative in replaced else "wrote"
        print_wrapped(f"  {verb} {relative}: {DESCRIPTIONS[relative]}{sharded if relative == WORKFLOW else ''}")
    print_wrapped(f"  workflow installs: {install}")
    if plan.added:
        print(f"  added {' and '.join(plan.added)} to {PYPROJECT}")
    if ignored:
        print(f"  added results/ to {GITIGNORE}")
    for note, snippet in plan.manual:
        print(f"  not changed: {note}:")
        print("".join(f"    {line}\n" for line in snippet.splitlines()), end="")
    where = "" if root.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(root))} && "
    print(f"next: {where}pytest -m benchmark --size tiny   (then: daskbench runs)")
