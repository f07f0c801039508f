"""The config file: where it is, how it is read, how it is changed without losing anything.

Rules:
- A file that is not valid JSON, gives a key twice in one object (a second ``"permissions"``
  would silently replace the first), or nests deeper than ``MAX_DEPTH`` is refused with the
  line and the reason, and is never written over.
- Every change holds an inter-process lock on the file (``.<name>.lock`` beside it), re-reads
  the file under it, changes only what it must (other servers and keys this module does not
  know are left as they were) and replaces the file atomically: a temp file in the same
  folder, flushed and fsynced, then renamed over the old one. Twenty processes adding a
  server at once leave twenty servers.
- A symlinked file is written through to its target (the link stays), keeping the target's
  owner; the file is ``0600`` at most (it can hold tokens in headers).
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

from mcpdeck._files import atomic_write, locked
from mcpdeck._paths import config_path
from mcpdeck.config._json import load_json
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


def _load_json(text: str, path: str) -> dict[str, Any]:
    data: object = load_json(text, path) if text.strip() else {}
    if not isinstance(data, dict):
        raise ConfigError('the file must hold a JSON object like {"mcpServers": {...}}', path=path, line=1)
    document = cast(dict[str, Any], data)
    servers: object = document.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError('"mcpServers" must be an object mapping server names to configs', path=path)
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

        The whole read-change-write holds the file's inter-process lock, so a change made by
        another process meanwhile is never lost. ``change`` may raise ConfigError to abandon
        the edit; the file is then untouched.

        Raises:
            ConfigError: The file cannot be read, ``change`` refused, or another process kept
                the lock for ``LOCK_TIMEOUT`` seconds.
        """
        try:
            with locked(self.path):
                raw = self.read_raw()
                updated = copy.deepcopy(raw)
                change(updated)
                self._write(updated)
        except TimeoutError as error:
            raise ConfigError(str(error), path=str(self.path)) from None
        return parse_config_document(updated, self.path)

    def put_server(self, name: str, config: ServerConfig, *, replace: bool = True) -> McpConfig:
        """Add the server, or replace its entry. Other entries stay as they are.

        Raises:
            ConfigError: ``replace`` is False and the file already has a server of that name
                (checked under the lock, so of two racing adds of one name, one fails).
        """
        validate_server_name(name)

        def change(doc: dict[str, Any]) -> None:
            servers = doc.setdefault("mcpServers", {})
            if not replace and name in servers:
                raise ConfigError(f"server {name!r} already exists in {self.path}", server=name)
            servers[name] = config.to_json()

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
        # A new folder is the owner's alone; the file is 0600 whatever it was: headers can hold tokens.
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", mode=0o600)
