"""Turning what a user hands to `cclab.run` (a path, or a scenario as a dict) and keyword
overrides into the JSON the Rust core validates. Python never re-declares the schema: every key
is checked by the core."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cclab.data import shipped_scenario

#: What `cclab.run` and `cclab.validate` accept as a scenario.
ScenarioSource = str | os.PathLike[str] | Mapping[str, Any]

#: Keyword overrides spell a dot in a key path as a double underscore: link__rate="24Mbps".
KEYWORD_DOT = "__"


def _to_json_value(value: Any) -> Any:
    """json's fallback for values it does not know: paths and numpy scalars."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    raise TypeError(f"{value!r} ({type(value).__name__}) cannot be written into a scenario")


def to_json(table: Mapping[str, Any]) -> str:
    return json.dumps(dict(table), default=_to_json_value, allow_nan=False)


def resolve(source: ScenarioSource) -> ScenarioSource:
    """A path that names no file but the name of a shipped scenario (`pantheon-1flow`,
    `repro/copa-fairness.toml`) becomes that scenario's path, so an installed wheel's
    scenarios run without a checkout; anything else is returned as given."""
    if isinstance(source, str | os.PathLike) and not Path(source).exists():
        shipped = shipped_scenario(os.fspath(source))
        if shipped is not None:
            return shipped
    return source


def core_source(source: ScenarioSource) -> tuple[str, bool]:
    """(text, is_path) for the core: a file path, or the JSON text of an inline scenario."""
    if isinstance(source, Mapping):
        return to_json(source), False
    if isinstance(source, str | os.PathLike):
        return os.fspath(resolve(source)), True
    raise TypeError(f"a scenario is a file path or a dict, not {type(source).__name__}")


def describe(source: ScenarioSource) -> str:
    """How a source is named in metadata and messages."""
    if isinstance(source, Mapping):
        return "<scenario dict>"
    return str(Path(source))


def overrides_json(overrides: Mapping[str, Any], seed: int | None = None) -> str:
    """Keyword overrides (`link__rate=...` or `"link.rate"` keys) and the seed, as a JSON object
    of dotted keys."""
    table = {key.replace(KEYWORD_DOT, "."): value for key, value in overrides.items()}
    if seed is not None:
        table["seed"] = seed
    return to_json(table)
