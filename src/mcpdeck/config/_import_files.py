"""Reading other hosts' config files: JSON with comments (JSONC) and YAML, errors with their line.

Whatever the file holds, the readers give a ``dict`` with string keys (``as_dict``), so a
format's code never has to ask what a value is before reading it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from mcpdeck.config._json import load_json, strip_jsonc
from mcpdeck.errors import ConfigError

__all__ = ["as_dict", "as_list", "load_json_object", "load_yaml_mapping", "servers_object"]


def load_json_object(text: str, path: Path) -> dict[str, Any]:
    # Comments and trailing commas (VS Code writes JSONC) become spaces, so lines and columns stay true.
    text = strip_jsonc(text)
    data: Any = load_json(text, str(path)) if text.strip() else {}
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object at the top of the file", path=str(path), line=1)
    return as_dict(data)


def load_yaml_mapping(text: str, path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise ConfigError(
            "nested too deeply to be a config file; check that this is the right file", path=str(path)
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"not valid YAML: {error.problem or error.context}", path=str(path), line=line) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"not valid YAML: {error}", path=str(path)) from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError("expected a YAML mapping at the top of the file", path=str(path), line=1)
    return as_dict(data)


def as_dict(value: Any) -> dict[str, Any]:
    return {str(key): item for key, item in cast("dict[Any, Any]", value).items()} if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return list(cast("list[Any]", value)) if isinstance(value, list) else []


def servers_object(doc: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f'"{key}" must be an object mapping server names to configs', path=str(path))
    return as_dict(servers)
