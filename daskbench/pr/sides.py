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

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daskbench import envs
from daskbench.errors import DaskbenchError
from daskbench.text import first_few, plural

Say = Callable[[str], None]


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


def exported(repo: Path, revision: Revision, cache: str | Path | None) -> Revision:
    """A commit's side with its source tree exported (once) into the cache; a folder as it is."""
    if revision.commit is None:
        return revision
    tree = envs.exported(repo, revision.commit, cache)
    return Revision(revision.given, revision.commit, tree, revision.subject)


def side_python(revision: Revision, name: str, say: Say, full: bool = False, **options: Any) -> str:
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
    return str(envs.build(spec, say=say, inherit=not full, **options))


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
