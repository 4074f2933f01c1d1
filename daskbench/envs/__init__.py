"""Environments from the record: a virtualenv holding the package versions a run recorded, built once.

`specs`: an `EnvSpec` (exact pins plus this daskbench) from a run's record or from any version set;
`builds`: the virtualenv built once per spec under a lock, its versions checked (or an overlay over this
interpreter); `index`: where the installer looks and which versions it offers; `git`: the commits of a
checkout as source trees an `EnvSpec` installs; `trees`: what a tree is (a package, or a folder of benchmarks
whose requirements alone are installed) and what ``pr`` and ``init``'s workflows install for it; `deps`: the
dependencies a source tree declares, and how two trees' differ; `known`: the libraries an old release gets (its era, known incompatibilities,
``--pin``) and the releases daskbench cannot measure; `output`: a failed step's one line. The names the
rest of daskbench uses are importable from here (``envs.build``, ``envs.spec_from_run``, ...).
"""

from daskbench.envs.builds import (
    CACHE_ENV,
    INSTALLERS,
    MARKER,
    OVERLAY_PTH,
    STEP_TIMEOUT_S,
    Installer,
    InstallFailed,
    Say,
    build,
    cache_root,
    check_versions,
    choose_installer,
    failure_line,
    installed_versions,
    interpreter,
    is_built,
    mismatches,
    missing_pin,
    offline,
    overlay_of,
    overlay_source,
    same_version,
)
from daskbench.envs.deps import changed_dependencies, declared
from daskbench.envs.git import (
    commit_subject,
    commit_subjects,
    commits_between,
    exported,
    git_checkout,
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
    "NOT_PINNED",
    "OVERLAY_PTH",
    "STEP_TIMEOUT_S",
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
    "commit_subject",
    "commit_subjects",
    "commits_between",
    "daskbench_requirement",
    "declared",
    "default_pins",
    "exported",
    "failure_line",
    "find_uv",
    "first_error",
    "folder_versions",
    "git_checkout",
    "index_versions",
    "install_lines",
    "install_record",
    "installed_versions",
    "interpreter",
    "interpreter_tag",
    "is_built",
    "is_package",
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
