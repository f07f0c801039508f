"""Reading other hosts' config files: JSON with comments (JSONC) and YAML, errors with their line.

Whatever the file holds, the readers give a ``dict`` with string keys (``as_dict``), so a
format's code never has to ask what a value is before reading it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from mcpdeck.config._json import load_json
from mcpdeck.errors import ConfigError

__all__ = ["as_dict", "as_list", "load_json_object", "load_yaml_mapping", "servers_object", "strip_jsonc"]

# A JSON string, to its closing quote or (unterminated) to the end of its line: never backtracks.
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
# Everything up to the next comment (or trailing comma), strings included; greedy, so it never backtracks.
_UP_TO_COMMENT = re.compile(rf"(?:[^\"/]+|{_STRING}|/(?![/*]))*")
_UP_TO_TRAILING_COMMA = re.compile(rf"(?:[^\",]+|{_STRING}|,(?!\s*[}}\]]))*")


def _blank(comment: str) -> str:
    """Spaces as long as ``comment``, keeping its newlines."""
    if "\n" not in comment:
        return " " * len(comment)
    return "\n".join(" " * len(line) for line in comment.split("\n"))


def strip_jsonc(text: str) -> str:
    """JSONC to JSON in linear time: comments, then trailing commas, become spaces.

    Each pass visits every character once: the text between comments (or trailing commas)
    is skipped by one pattern that never backtracks, a block comment's end is found with
    ``str.find``. Newlines inside comments are kept, so the lines and columns of a later
    parse error stay true. An unterminated ``/*`` runs to the end of the text.
    """
    out: list[str] = []
    pos = 0
    while (at := _UP_TO_COMMENT.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        if text.startswith("//", at):
            end = text.find("\n", at)
        else:
            end = text.find("*/", at + 2)
            end = end + 2 if end != -1 else end
        end = len(text) if end == -1 else end
        out += (text[pos:at], _blank(text[at:end]))
        pos = end
    out.append(text[pos:])
    text, out, pos = "".join(out), [], 0
    while (at := _UP_TO_TRAILING_COMMA.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        out += (text[pos:at], " ")
        pos = at + 1
    out.append(text[pos:])
    return "".join(out)


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
