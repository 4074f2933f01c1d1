"""The ``--config`` sweep: Dask config keys and their values, checked against Dask's own defaults and
config schema before any cluster starts, and masked where a key looks like a credential."""

from __future__ import annotations

import difflib
import functools
import json
import math
from typing import Any

from daskbench.config.values import Shortened, comma_list
from daskbench.redact import masked_choices, redact_value
from daskbench.text import first_few

#: Dask config keys that have their own option (``--config`` would fight it).
_OWN_OPTION = {"distributed.scheduler.worker-saturation": "--saturation"}
#: Separator of several ``--config`` sweeps in one text (env var, pyproject list joined).
CONFIG_SEPARATOR = ";"

ConfigSweep = tuple[tuple[str, tuple[str, ...]], ...]


def parse_config_sweep(text: str) -> ConfigSweep:
    """``"distributed.worker.memory.target=0.6,0.8;array.chunk-size=64MiB"`` -> ((key, values), ...).

    Each key must exist in Dask's config (dask's and distributed's defaults), checked now,
    before any cluster starts; values are kept as text and read as YAML when applied.
    """
    sweeps: dict[str, tuple[str, ...]] = {}
    for item in (part.strip() for part in text.split(CONFIG_SEPARATOR)):
        if not item:
            continue
        key, equals, values = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE[,VALUE...]")
        _check_config_key(key)
        if key in sweeps:
            raise ValueError(f"{key} is given twice; give its values once: {key}=V1,V2")
        sweeps[key] = tuple(dict.fromkeys(comma_list(values)))
        _check_config_values(key, sweeps[key])
    return tuple(sweeps.items())


def _check_config_values(key: str, values: tuple[str, ...]) -> None:
    """Each value, read as YAML as it will be applied, is one Dask's config schema allows for ``key``
    (type, enum, bounds): a wrong one would only fail when the workers start."""
    import yaml

    schema = _schema_of(key)
    for text in values if schema else ():
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        if not _fits(schema, value):
            shown = redact_value(text, key)
            raise Shortened(
                f"{shown!r} is not a value {key} takes (its default: {redact_value(_default_text(key), key)})"
            )


def _default_text(key: str) -> str:
    import dask

    return json.dumps(dask.config.get(key), default=str)


@functools.cache
def _config_schema() -> dict[str, Any]:
    """The JSON schemas dask and distributed ship for their config, as one."""
    import importlib.resources

    import yaml

    found: dict[str, Any] = {}
    for package, name in (("dask", "dask-schema.yaml"), ("distributed", "distributed-schema.yaml")):
        found.update(yaml.safe_load(importlib.resources.files(package).joinpath(name).read_text())["properties"])
    return {"properties": found}


def _schema_of(key: str) -> dict[str, Any]:
    """The schema of ``key`` (``{}`` where dask and distributed declare none)."""
    node = _config_schema()
    for part in key.split("."):
        children = node.get("properties", {})
        node = children.get(part) or children.get(part.replace("_", "-")) or {}
    return node


def _fits(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` passes the parts of a JSON schema Dask's use: oneOf/anyOf, enum, type, bounds."""
    branches = schema.get("oneOf") or schema.get("anyOf")
    if branches:
        return any(_fits(branch, value) for branch in branches)
    if "enum" in schema and not any(_same(value, item) for item in schema["enum"]):
        return False
    types = schema.get("type", [])
    if types and not any(_is_type(value, name) for name in ([types] if isinstance(types, str) else types)):
        return False
    return not isinstance(value, int | float) or isinstance(value, bool) or _in_bounds(schema, value)


def _same(value: Any, item: Any) -> bool:
    return bool(value == item) and isinstance(value, bool) == isinstance(item, bool)


def _is_type(value: Any, name: str) -> bool:
    """A JSON schema type test; a number passes for ``string`` too (Dask reads a timeout of 30 as 30 s)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    kinds = {
        "number": number,
        "integer": number and float(value).is_integer(),
        "boolean": isinstance(value, bool),
        "string": isinstance(value, str) or number,
        "null": value is None,
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }
    return kinds.get(name, True)


def _in_bounds(schema: dict[str, Any], value: float) -> bool:
    low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    above, below = schema.get("exclusiveMinimum", -math.inf), schema.get("exclusiveMaximum", math.inf)
    return bool(low <= value <= high and above < value < below)


def _check_config_key(key: str) -> None:
    """A key Dask knows (its defaults, after importing distributed); else a one-line error."""
    if key in _OWN_OPTION:
        raise ValueError(f"{key} has its own option; use {_OWN_OPTION[key]}")
    import dask
    import distributed  # noqa: F401  (loads distributed's defaults into dask.config)

    missing = object()
    if dask.config.get(key, default=missing) is missing:
        parent = key.rsplit(".", 1)[0]
        near = dask.config.get(parent, default=None)
        raise Shortened(*_unknown_key_forms(key, parent, sorted(near) if isinstance(near, dict) else []))


def _unknown_key_forms(key: str, parent: str, siblings: list[str]) -> list[str]:
    """What to say of an unknown config key: the key meant (a near spelling), else the first few
    keys of its section and how many more, and the command that lists them all."""
    head, where = f"{key} is not a Dask config key", f"(dask config get {parent})" if siblings else "(dask config list)"
    meant = difflib.get_close_matches(key.rsplit(".", 1)[-1], siblings, n=1)
    forms = [f"{head}; did you mean {parent}.{meant[0]}?", f"{head}; did you mean {meant[0]}?"] if meant else []
    forms += [f"{head}; {parent} has {first_few(siblings, shown)} {where}" for shown in (3, 2, 1) if siblings]
    return [*forms, f"{head} {where}", head]


def masked_sweep(sweep: ConfigSweep | None) -> ConfigSweep:
    """The ``--config`` sweep as it may be shown, stored and put in test ids: a credential-looking
    key's values as ``***`` or ``***1``, ``***2``... (`redact.masked_choices`)."""
    return tuple((key, masked_choices(key, values)) for key, values in sweep or ())


def unmasked(sweep: ConfigSweep | None, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """A spec's ``(key, value)`` pairs as masked by `masked_sweep`, with each masked value replaced by
    the value it stands for: what the cluster is started with, never stored or shown."""
    real = {
        (key, shown): value
        for key, values in sweep or ()
        for shown, value in zip(masked_choices(key, values), values, strict=True)
    }
    return tuple((key, real.get((key, shown), shown)) for key, shown in pairs)
