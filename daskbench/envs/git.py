"""The commits of a git checkout as source trees: `git_checkout`, `resolve_commit`, `commits_between`,
`commit_subjects` name them, `uncommitted` lists the edits no commit holds; `exported` makes one a source
tree (a clone at that commit, once) that an `EnvSpec` installs (``sources``), whose build backend reports
the version it would in the checkout. `mirror`: a bare mirror of a package's repository (the one a run
recorded it from), cloned once into a folder kept between nights and fetched only when a commit is missing."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from daskbench.envs.builds import Say, cache_fix, cache_flag, cache_root
from daskbench.envs.output import first_error
from daskbench.errors import DaskbenchError, check_writable
from daskbench.redact import MASK


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


def uncommitted(repo: Path) -> list[str]:
    """The tracked files of ``repo``'s working tree whose edits are not committed (staged or not), as git
    names them; untracked files do not count (a build's output, a results folder)."""
    listed = _git(repo, "status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    return [line[3:] for line in listed if len(line) > 3]


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


def commit_date(repo: Path, commit: str) -> str:
    """When ``commit`` was committed (strict ISO 8601, its committer's offset): the moment another package's
    checkout is matched at (`last_commit_at`)."""
    return _git(repo, "log", "-1", "--format=%cI", commit).stdout.strip()


def commit_dates(repo: Path, commits: Sequence[str]) -> dict[str, str]:
    """When each of ``commits`` was committed (as `commit_date`), by full id, in one ``git log``."""
    if not commits:
        return {}
    listed = _git(repo, "log", "--no-walk=unsorted", "--format=%H %cI", *commits).stdout.splitlines()
    return {commit: date for commit, _, date in (line.partition(" ") for line in listed)}


def last_commit_at(repo: Path, date: str, ref: str = "HEAD") -> str | None:
    """The last commit of ``repo`` on ``ref``'s first-parent line committed at or before ``date``; None when
    every one is later."""
    listed = _git(repo, "rev-list", "-1", "--first-parent", f"--before={date}", ref).stdout.split()
    return listed[0] if listed else None


def followed_tag(repo: Path, commit: str) -> str | None:
    """The newest tag ``commit`` follows (``git describe --tags --abbrev=0``: for dask, the release it comes
    after); None when it follows none."""
    done = _git(repo, "describe", "--tags", "--abbrev=0", commit, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def exported(repo: Path, commit: str, cache: str | Path | None = None, say: Say | None = None) -> Path:
    """The source tree of ``commit``, once, under ``<cache>/checkouts/<name>-<commit>``: a clone of the checkout
    sharing its objects (``git clone --shared``), with its tags, at that commit. So a build backend that asks
    git for the version (setuptools_scm, hatch-vcs, versioneer: ``git describe``) reports the one it would
    report in the checkout, not its fallback, and the checkout's uncommitted changes never count. A tree found
    changed (`changed_tree`: code that ran in the cache, such as a pull request's, can write there) is said
    and exported anew."""
    root = cache_root(cache) / "checkouts"
    target = root / f"{repo.name}-{commit[:16]}"
    if (target / ".git").is_dir():
        changed = changed_tree(target, commit)
        if not changed:
            return target
        (say or print)(f"env: the exported tree {target} was changed since it was exported ({changed}); exporting "
                       f"commit {commit[:12]} again")  # fmt: skip
        aside = root / f".{target.name}.changed.{os.getpid()}"
        os.replace(target, aside)
        shutil.rmtree(aside, ignore_errors=True)
    check_writable(root, cache_flag(cache), folder=True)
    scratch = root / f".{target.name}.{os.getpid()}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
        _clear_abandoned(root, target.name)
        _git(root, "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(scratch))
        _git(scratch, "fetch", "--quiet", "origin", "+refs/tags/*:refs/tags/*")
        _git(scratch, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit)
        os.replace(scratch, target)
    except OSError as exc:
        if not (target / ".git").is_dir():  # another process did not make it first: the cache's disk full or gone
            raise DaskbenchError(
                f"cannot export commit {commit[:12]} into {root} ({exc.strerror or exc}); {cache_fix(exc, cache)}"
            ) from None
    except DaskbenchError as error:  # git's own words; a full or read-only disk said so, with the fix
        if any(words in str(error) for words in ("No space left", "Read-only file system")):
            raise DaskbenchError(
                f"exporting commit {commit[:12]} of {repo} failed: {error}; free space in {root} or move the cache "
                f"({cache_flag(cache)})"
            ) from None
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


#: Files a tree gets from being built or run, not from its commit: Python's bytecode, a setuptools build.
_MADE_HERE = re.compile(r"(^|/)(__pycache__|build|[^/]*\.egg-info|\.eggs)(/|$)")


def changed_tree(tree: Path, commit: str) -> str:
    """How an exported tree differs from ``commit`` ("" when it does not): moved to another commit, a tracked
    file edited or deleted, or a file added (one that building or running it makes, `_MADE_HERE`, aside)."""
    head = _git(tree, "rev-parse", "HEAD", check=False).stdout.strip()
    if head != commit:
        return f"at {head[:12] or 'no commit'}, not {commit[:12]}"
    listed = _git(tree, "status", "--porcelain", "--untracked-files=all", "--no-renames", check=False)
    if listed.returncode != 0:
        return f"git status failed: {first_error(listed.stderr)}"
    changed = [line[3:] for line in listed.stdout.splitlines() if not _MADE_HERE.search(line[3:])]
    return f"{len(changed)} file(s): {', '.join(changed[:3])}" if changed else ""


#: Where the mirrors of packages' repositories live (``daskbench culprit --mirrors``), else under ~/.cache.
MIRRORS_ENV = "DASKBENCH_MIRRORS"
#: The longest a mirror's clone or fetch may take (dask's whole history: about a minute on a hosted runner).
MIRROR_TIMEOUT_S = 1800.0


def mirrors_root(given: str | Path | None = None) -> Path:
    """``given``, else ``$DASKBENCH_MIRRORS``, else ``~/.cache/daskbench/mirrors``."""
    return Path(given or os.environ.get(MIRRORS_ENV) or Path.home() / ".cache" / "daskbench" / "mirrors").expanduser()


def mirror(url: str, root: Path, commits: Sequence[str], say: Say | None = None) -> Path:
    """A bare mirror of the repository at ``url`` (``git clone --mirror``) under ``root``, made once and kept (CI
    caches the folder), fetched again only when it lacks one of ``commits``: the source history of a package a
    run had from git, read offline after. One line when it cannot be cloned or still lacks a commit."""
    if not url or MASK in url:
        raise DaskbenchError(f"no repository to clone: the run recorded {url or 'none'!r}; give a local mirror")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
    target = root / f"{name or 'repo'}-{hashlib.sha256(url.encode()).hexdigest()[:8]}.git"
    if not target.is_dir():
        check_writable(root, f"--mirrors (or ${MIRRORS_ENV})", folder=True)
        root.mkdir(parents=True, exist_ok=True)
        if say:
            say(f"culprit: cloning {url} into {target} (once; kept for the next nights)")
        scratch = root / f".{target.name}.{os.getpid()}.tmp"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            _git(root, "clone", "--quiet", "--mirror", _source(url), str(scratch), timeout=MIRROR_TIMEOUT_S)
            os.replace(scratch, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if any(not has_commit(target, commit) for commit in commits):
        if say:
            say(f"culprit: fetching {url} into {target}")
        _git(target, "fetch", "--quiet", "--prune", "--tags", "origin", timeout=MIRROR_TIMEOUT_S)
    missing = [commit for commit in commits if not has_commit(target, commit)]
    if missing:
        raise DaskbenchError(
            f"{url} has no commit {missing[0][:12]} (fetched into {target}); was it force-pushed away?"
        )
    return target


def _source(url: str) -> str:
    """What to clone ``url`` from: a ``file://`` URL as its folder, so git clones it locally (hard links, no
    repacking: fast, and a mirror kept without its largest blobs still clones), anything else as it is."""
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" and parts.netloc in ("", "localhost") else url


def has_file(repo: Path, commit: str, path: str) -> bool:
    """Whether ``commit``'s tree holds the file ``path``."""
    return _git(repo, "cat-file", "-e", f"{commit}:{path}", check=False).returncode == 0


def has_commit(repo: Path, commit: str) -> bool:
    """Whether ``repo`` holds ``commit``."""
    return _git(repo, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0


def release_commit(repo: Path, version: str) -> str | None:
    """The commit of release ``version``'s tag (``2024.8.0`` or ``v2024.8.0``) in ``repo``; None when neither."""
    for tag in (version, f"v{version}"):
        done = _git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}", check=False)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return None


#: Seconds after which a scratch clone whose process is gone is taken for abandoned (its export killed); a younger
#: one may be another host's, sharing the cache, whose process this host cannot see.
ABANDONED_AFTER_S = 600.0


def _clear_abandoned(root: Path, name: str) -> None:
    """Remove the scratch clones of ``name`` left by exports that were killed (their process gone from this host,
    untouched for `ABANDONED_AFTER_S`): never taken for the tree, they would only fill the cache."""
    for scratch in root.glob(f".{glob.escape(name)}.*.tmp"):
        pid = scratch.name[len(name) + 2 : -len(".tmp")]
        try:
            old = time.time() - scratch.stat().st_mtime > ABANDONED_AFTER_S
        except OSError:
            continue
        if pid.isdigit() and old and not _alive(int(pid)):
            shutil.rmtree(scratch, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _git(repo: Path, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``git -C repo ARGS``; with ``check``, one line naming the command when it fails (or takes ``timeout`` s)."""
    if shutil.which("git") is None:
        raise DaskbenchError("git is not on PATH; install git to work with a checkout")
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise DaskbenchError(
            f"git {' '.join(args)} took more than {timeout:g} s in {repo}; check the network"
        ) from None
    if check and done.returncode != 0:
        raise DaskbenchError(f"git {' '.join(args)} failed in {repo}: {first_error(done.stderr)}")
    return done
