"""The two sides of a pull request: each resolved in the user's git checkout, each with its own interpreter.

A side is given as a branch, tag or commit of the checkout (`resolve`), exported once into the environment
cache as a checkout at that commit (`exported`), or as a folder (installed editable: its current files
count). `side_python` builds one overlay environment per side holding that side's project (cached by
commit); when the sides declare different dependencies (`dependency_changes`, from
`daskbench.envs.changed_dependencies`) each side's environment is built from its own requirements instead,
and the comment lists the differences. `uncommitted_note` says when the checkout holds edits a commit
does not measure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from daskbench import envs
from daskbench.errors import DaskbenchError
from daskbench.text import first_few, plural

Say = Callable[[str], None]
#: What the pull request's code (its build backend, its benchmarks, their workers) never gets in its environment:
#: the tokens, and the files through which a step of GitHub Actions sets the job's outputs, its later steps'
#: environment and PATH, its state and its summary. Every ``ACTIONS_*`` variable is withheld too (the runtime's
#: and the OIDC token's, with their URLs).
WITHHELD = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_OUTPUT",
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
    }
)


def withheld(name: str) -> bool:
    """Whether the environment variable ``name`` is kept from the pull request's code (`WITHHELD`)."""
    return name in WITHHELD or name.startswith("ACTIONS_")


@contextmanager
def withholding() -> Iterator[None]:
    """This process's environment without the `withheld` variables meanwhile, so no process started inside
    (an installer, the build backend of a side's project, which is the pull request's code) inherits them; put
    back after (the comment and the job summary are written with them)."""
    kept = {name: value for name, value in os.environ.items() if withheld(name)}
    for name in kept:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(kept)


@dataclass(frozen=True)
class Revision:
    """One side of a pull request: as given (user text), its commit (None: a folder) and source tree."""

    given: str
    commit: str | None
    tree: Path
    subject: str = ""  # the commit's first line (user text)

    @property
    def short(self) -> str:
        return self.commit[:10] if self.commit else "working tree"


def resolve(repo: Path, given: str, flag: str) -> Revision:
    """``given`` as a branch, tag or commit of ``repo``, else as a folder; one line when it is neither."""
    try:
        commit = envs.resolve_commit(repo, given, flag)
    except DaskbenchError:
        folder = Path(given).expanduser()
        if given and folder.is_dir():
            return Revision(given, None, folder.absolute())
        raise DaskbenchError(
            f"{flag} {given!r}: {repo} has no such branch, tag or commit, and it is no folder "
            "(git log shows the commits)"
        ) from None
    return Revision(given, commit, repo, envs.commit_subject(repo, commit))


def uncommitted_note(repo: Path, base: Revision, head: Revision) -> str:
    """What to say when the checkout holds edits no commit has and a side is a commit: they are not measured
    (a commit is measured as committed, so the comment and the status name exactly what was measured; the
    working tree is measured when given as a folder). "" otherwise."""
    if base.commit is None and head.commit is None:
        return ""
    edited = envs.uncommitted(repo)
    if not edited:
        return ""
    return (
        f"{repo} has uncommitted edits ({plural(len(edited), 'file')}: {first_few(edited, 2)}); they are not "
        "measured: a commit is measured as committed (commit them, or give the checkout's folder as HEAD to "
        "measure its working tree)"
    )


def exported(repo: Path, revision: Revision, cache: str | Path | None, say: Say) -> Revision:
    """A commit's side with its source tree exported (once) into the cache, again when found changed (a former
    comparison's code can write there); a folder as it is."""
    if revision.commit is None:
        return revision
    tree = envs.exported(repo, revision.commit, cache, say)
    return Revision(revision.given, revision.commit, tree, revision.subject)


def side_python(revision: Revision, name: str, options: envs.BuildOptions, say: Say, full: bool = False) -> str:
    """The interpreter of an overlay holding the side's project (its dependencies: this interpreter's), or with
    ``full`` (the sides declare different dependencies) of an environment built from the side's own
    requirements, plus this daskbench; a commit's is built once per commit, a folder is installed editable
    (its current files count). A folder of benchmarks (no build system) is not installed: this interpreter,
    or with ``full`` an environment of its requirements (`envs.side_sources`)."""
    sources = envs.side_sources(revision.tree, editable=revision.commit is None, full=full)
    if not sources and not full:  # a folder of benchmarks: nothing of it to install (`envs.trees`)
        say(f"pr: {name} {revision.short} is {envs.tree_shape(revision.tree).describe()}: its files run as they are")
        return sys.executable
    spec = envs.spec_from_pins({}, with_daskbench=full, source=f"{name} {revision.short}", sources=sources)
    with withholding():  # the installer runs the side's build backend: the pull request's code
        return str(envs.build(spec, options, say=say, inherit=not full))


def dependency_changes(base: Revision, head: Revision, say: Say) -> tuple[str, ...]:
    """How head's declared dependencies differ from base's (`envs.changed_dependencies`), said in one line;
    empty when they do not (each side is then an overlay over this interpreter's packages) or are not known."""
    found = envs.changed_dependencies(base.tree, head.tree)
    if found is None:
        say("pr: a side declares its dependencies outside pyproject.toml: both run over this environment's packages")
        return ()
    if found:
        say(f"pr: head's declared dependencies differ ({'; '.join(found)}): each side is built from its own")
    return tuple(found)
