"""The config file: where it is, how it is read, how it is changed without losing anything.

Rules:
- A file that is not valid JSON (or has a server defined twice) is refused with the line
  and the reason, and is never written over.
- Every change re-reads the file, changes only what it must (other servers and keys this
  module does not know are left as they were) and replaces the file atomically: a temp
  file in the same folder, flushed and fsynced, then renamed over the old one.
- One unusable server entry does not make the others unusable: it is reported in
  ``McpConfig.problems`` and the rest load.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcpdeck._files import atomic_write
from mcpdeck._paths import config_path
from mcpdeck.config._models import ServerConfig, parse_server_config, validate_server_name
from mcpdeck.errors import ConfigError

__all__ = ["ConfigStore", "McpConfig", "default_config_path", "parse_config_document", "resolve_config_path"]


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file when none is named: ``$MCPDECK_CONFIG``, ``$MCPDECK_HOME/mcp.json`` or the user config dir's."""
    return config_path(environ)


def resolve_config_path(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The config file to use: ``explicit``, else ``$MCPDECK_CONFIG``, else the default (``default_config_path``)."""
    if explicit:
        return Path(explicit).expanduser()
    return config_path(environ)


@dataclass(frozen=True)
class McpConfig:
    """One reading of a config file (or of configs given in code).

    Attributes:
        servers: The usable servers, by name, in file order.
        problems: Servers whose entries cannot be used, with the reason.
        npm_registry: The file-wide ``npmRegistry`` setting.
        enabled: The global switch (``mcpEnabled``); False means connect nothing.
        path: The file this came from, if any.
    """

    servers: dict[str, ServerConfig] = field(default_factory=dict[str, ServerConfig])
    problems: dict[str, ConfigError] = field(default_factory=dict[str, ConfigError])
    npm_registry: str | None = None
    enabled: bool = True
    path: Path | None = None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _load_json(text: str, path: str) -> dict[str, Any]:
    duplicates: list[tuple[int, str]] = []  # (id of the object, key): only mcpServers' own keys matter

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append((id(seen), key))
            seen[key] = value
        return seen

    try:
        data: object = json.loads(text, object_pairs_hook=pairs) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise ConfigError(f"not valid JSON: {error.msg} (column {error.colno})", path=path, line=error.lineno) from None
    if not isinstance(data, dict):
        raise ConfigError('the file must hold a JSON object like {"mcpServers": {...}}', path=path, line=1)
    document = cast(dict[str, Any], data)
    servers: object = document.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError('"mcpServers" must be an object mapping server names to configs', path=path)
    servers_id = id(cast(object, servers))
    for owner, name in duplicates:
        if owner == servers_id:
            # Point at the second definition: the one JSON would silently keep.
            needle = json.dumps(name)
            first = text.find(needle)
            second = text.find(needle, first + 1)
            raise ConfigError(
                f"server {name!r} is defined twice; remove or rename one of them",
                path=path,
                line=_line_of(text, second) if second >= 0 else None,
            )
    return document


def parse_config_document(data: Mapping[str, Any], path: Path | None = None) -> McpConfig:
    """Turn a parsed ``{"mcpServers": ...}`` document into an McpConfig."""
    servers: dict[str, ServerConfig] = {}
    problems: dict[str, ConfigError] = {}
    entries: dict[str, Any] = data.get("mcpServers") or {}
    for name, raw in entries.items():
        try:
            servers[name] = parse_server_config(name, raw)
        except ConfigError as error:
            problems[name] = error
    registry = data.get("npmRegistry")
    enabled = data.get("mcpEnabled", True)
    return McpConfig(
        servers=servers,
        problems=problems,
        npm_registry=registry if isinstance(registry, str) and registry else None,
        enabled=enabled is not False,
        path=path,
    )


class ConfigStore:
    """Reads and changes one ``mcpServers`` JSON file."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def read_raw(self) -> dict[str, Any]:
        """The whole document as JSON data; an absent file reads as empty.

        Raises:
            ConfigError: The file exists but is not a usable config document.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise ConfigError(f"cannot read the file: {error.strerror}", path=str(self.path)) from None
        return _load_json(text, str(self.path))

    def read(self) -> McpConfig:
        """Load the file."""
        return parse_config_document(self.read_raw(), self.path)

    def edit(self, change: Callable[[dict[str, Any]], None]) -> McpConfig:
        """Apply ``change`` to a fresh copy of the document and save it atomically.

        ``change`` may raise ConfigError to abandon the edit; the file is then untouched.
        """
        raw = self.read_raw()
        updated = copy.deepcopy(raw)
        change(updated)
        self._write(updated)
        return parse_config_document(updated, self.path)

    def put_server(self, name: str, config: ServerConfig) -> McpConfig:
        """Add the server, or replace its entry. Other entries stay as they are."""
        validate_server_name(name)

        def change(doc: dict[str, Any]) -> None:
            doc.setdefault("mcpServers", {})[name] = config.to_json()

        return self.edit(change)

    def remove_server(self, name: str) -> McpConfig:
        """Delete the server's entry.

        Raises:
            ConfigError: There is no such server.
        """

        def change(doc: dict[str, Any]) -> None:
            servers: dict[str, Any] = doc.get("mcpServers") or {}
            if name not in servers:
                raise ConfigError(f"no server named {name!r} in the config", path=str(self.path), server=name)
            del servers[name]

        return self.edit(change)

    def set_server_disabled(self, name: str, disabled: bool) -> McpConfig:
        """Set or clear ``disabled`` on one server, touching nothing else in its entry."""

        def change(doc: dict[str, Any]) -> None:
            servers: dict[str, Any] = doc.get("mcpServers") or {}
            found: object = servers.get(name)
            if not isinstance(found, dict):
                raise ConfigError(f"no server named {name!r} in the config", path=str(self.path), server=name)
            entry = cast(dict[str, Any], found)
            if disabled:
                entry["disabled"] = True
            else:
                entry.pop("disabled", None)

        return self.edit(change)

    def set_enabled(self, enabled: bool) -> McpConfig:
        """Set the global switch (``mcpEnabled``)."""

        def change(doc: dict[str, Any]) -> None:
            if enabled:
                doc.pop("mcpEnabled", None)
            else:
                doc["mcpEnabled"] = False

        return self.edit(change)

    def _write(self, doc: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = self.path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o600  # a config can hold headers with tokens: private by default
        atomic_write(self.path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", mode=mode)
