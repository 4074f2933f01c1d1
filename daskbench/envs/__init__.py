"""Environments from the record: a virtualenv holding the package versions a run recorded, built once.

`specs`: an `EnvSpec` (exact pins plus this daskbench) from a run's record or from any version set;
`builds`: the virtualenv built once per spec under a lock as a `BuildOptions` says (or an overlay over this
interpreter); `installers`: uv or pip, and their steps; `installed`: the versions a built environment holds,
checked against its spec; `failures`: why an installer step failed, in one line; `index`: where the installer
looks and which versions it offers; `git`: the commits of a checkout as source trees an `EnvSpec` installs;
`trees`: what a tree is (a package, or a folder of benchmarks whose requirements alone are installed) and what
``pr`` and ``init``'s workflows install for it; `deps`: the dependencies a source tree declares, and how two
trees' differ; `known`: the libraries an old release gets (its era, known incompatibilities, ``--pin``) and
the releases daskbench cannot measure; `output`: what a failed outside step printed, read back. The names the rest of
daskbench uses are imported from here (``envs.build``, ``envs.spec_from_run``, ...: the package's face), never
from its modules."""

from daskbench.envs.builds import (
    CACHE_ENV,
    MARKER,
    OVERLAY_PTH,
    STEP_TIMEOUT_S,
    BuildOptions,
    Say,
    build,
    cache_root,
    is_built,
    offline,
    overlay_of,
    overlay_source,
)
from daskbench.envs.deps import changed_dependencies, declared, exact_pins, project_name
from daskbench.envs.failures import InstallFailed, failure_line, missing_pin
from daskbench.envs.git import (
    MIRRORS_ENV,
    commit_date,
    commit_dates,
    commit_subject,
    commit_subjects,
    commits_between,
    exported,
    followed_tag,
    git_checkout,
    has_commit,
    has_file,
    last_commit_at,
    mirror,
    mirrors_root,
    release_commit,
    resolve_commit,
    uncommitted,
)
from daskbench.envs.index import (
    Index,
    available_versions,
    find_uv,
    folder_versions,
    index_versions,
    pip_versions,
    simple_versions,
)
from daskbench.envs.installed import check_versions, installed_versions, mismatches, same_version
from daskbench.envs.installers import INSTALLERS, Installer, choose_installer, interpreter
from daskbench.envs.known import Pin, check_measurable, default_pins, parse_user_pin
from daskbench.envs.output import first_error
from daskbench.envs.specs import (
    NOT_PINNED,
    EnvSpec,
    daskbench_requirement,
    install_record,
    interpreter_tag,
    normalized,
    parse_names,
    parse_pins,
    requirement_from_record,
    spec_from_pins,
    spec_from_run,
)
from daskbench.envs.trees import Shape, ci_warnings, install_lines, is_package, requirement_lines, side_sources
from daskbench.envs.trees import shape as tree_shape

__all__ = [
    "CACHE_ENV",
    "INSTALLERS",
    "MARKER",
    "MIRRORS_ENV",
    "NOT_PINNED",
    "OVERLAY_PTH",
    "STEP_TIMEOUT_S",
    "BuildOptions",
    "EnvSpec",
    "Index",
    "InstallFailed",
    "Installer",
    "Pin",
    "Say",
    "Shape",
    "available_versions",
    "build",
    "cache_root",
    "changed_dependencies",
    "check_measurable",
    "check_versions",
    "choose_installer",
    "ci_warnings",
    "commit_date",
    "commit_dates",
    "commit_subject",
    "commit_subjects",
    "commits_between",
    "daskbench_requirement",
    "declared",
    "default_pins",
    "exact_pins",
    "exported",
    "failure_line",
    "find_uv",
    "first_error",
    "folder_versions",
    "followed_tag",
    "git_checkout",
    "has_commit",
    "has_file",
    "index_versions",
    "install_lines",
    "install_record",
    "installed_versions",
    "interpreter",
    "interpreter_tag",
    "is_built",
    "is_package",
    "last_commit_at",
    "mirror",
    "mirrors_root",
    "mismatches",
    "missing_pin",
    "normalized",
    "offline",
    "overlay_of",
    "overlay_source",
    "parse_names",
    "parse_pins",
    "parse_user_pin",
    "pip_versions",
    "project_name",
    "release_commit",
    "requirement_from_record",
    "requirement_lines",
    "resolve_commit",
    "same_version",
    "side_sources",
    "simple_versions",
    "spec_from_pins",
    "spec_from_run",
    "tree_shape",
    "uncommitted",
]
