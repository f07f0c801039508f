"""The config file: where it is, how it is read, how it is changed without losing anything.

Rules:
- A file that is not valid JSON (comments and trailing commas are allowed: JSONC), gives a
  key twice in one object (a second ``"permissions"`` would silently replace the first), or
  nests deeper than ``MAX_DEPTH`` is refused with the line and the reason, and is never
  written over.
- Every change holds the file's inter-process lock (``_util.files.locked``: a lock on the file
  itself, no file beside it), re-reads the file under it, changes the parsed document, and
  writes back the old text with only what changed spliced in (``_splice``): other servers,
  keys this module does not know, whitespace, key order, comments and the numbers as the user
  wrote them stay byte for byte. The file is replaced atomically: a temp file in the same
  folder, flushed and fsynced, then renamed over the old one. Twenty processes adding a
  server at once leave twenty servers; a change that fails leaves the file as it was.
- A server's entry written again (``put_server``) keeps the user's spelling of every value
  that still means the same (``"type": "streamable-http"``, ``"tools": ["a"]``, ``30``).
- A symlinked file is written through to its target (the link stays), keeping the target's
  owner; the file is ``0600`` at most (it can hold tokens in headers).
- One unusable server entry does not make the others unusable: it is reported in
  ``McpConfig.problems`` and the rest load.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcpdeck._util.files import atomic_write, locked
from mcpdeck._util.paths import config_path
from mcpdeck.config._json import load_json, strip_jsonc
from mcpdeck.config._models import ServerConfig, parse_server_config, validate_server_name
from mcpdeck.config._splice import rewrite, same_json
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
    # Comments and trailing commas become spaces first, so the lines of an error stay true.
    data: object = load_json(strip_jsonc(text), path) if text.strip() else {}
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
        self.written: list[Callable[[], None]] = []
        """Called after each change this store writes (in the writing thread): ``serve`` tells its other
        replicas there (``mcpdeck.store``'s config notices on PostgreSQL)."""

    def read_raw(self) -> dict[str, Any]:
        """The whole document as JSON data; an absent file reads as empty.

        Raises:
            ConfigError: The file exists but is not a usable config document.
        """
        return _load_json(self._read_text() or "", str(self.path))

    def _read_text(self) -> str | None:
        """The file's text as it is, line breaks included (``\\r\\n`` stays); None when there is no file."""
        try:
            with open(self.path, encoding="utf-8", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ConfigError(f"cannot read the file: {error.strerror}", path=str(self.path)) from None

    def read(self) -> McpConfig:
        """Load the file."""
        return parse_config_document(self.read_raw(), self.path)

    def edit(self, change: Callable[[dict[str, Any]], None]) -> McpConfig:
        """Apply ``change`` to a fresh copy of the document and save what it changed atomically.

        The whole read-change-write holds the file's inter-process lock, so a change made by
        another process meanwhile is never lost. ``change`` may raise ConfigError to abandon
        the edit; the file is then untouched. Only what ``change`` changed is written into the
        file's text (``_splice.rewrite``); the rest of it stays byte for byte.

        Raises:
            ConfigError: The file cannot be read, ``change`` refused, or another process kept
                the lock for ``LOCK_TIMEOUT`` seconds.
        """
        try:
            with locked(self.path):
                text = self._read_text()
                raw = _load_json(text or "", str(self.path))
                updated = copy.deepcopy(raw)
                change(updated)
                self._write(rewrite(text, raw, updated))
        except TimeoutError as error:
            raise ConfigError(str(error), path=str(self.path)) from None
        for told in self.written:
            told()
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
            servers[name] = _as_written(name, servers.get(name), config.to_json())

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

    def _write(self, text: str) -> None:
        # A new folder is the owner's alone; the file is 0600 whatever it was: headers can hold tokens.
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, text, mode=0o600)


def _as_written(name: str, old: object, new: dict[str, Any]) -> dict[str, Any]:
    """A server's new entry (``to_json``), keeping the old entry's own spelling of what still means the same.

    A value the user wrote otherwise than ``to_json`` would (``"type": "streamable-http"``,
    ``"tools": ["a"]``, ``"transport"``, a default written out such as ``"args": []``) stays as
    written while the new config gives it the same meaning; what changed is written anew, what
    the new config drops goes, and so do the keys some hosts write at run time.
    """
    if not isinstance(old, dict):
        return new
    written = cast(dict[str, Any], old)
    try:
        model = parse_server_config(name, written)
    except ConfigError:
        return new
    before = model.to_json()
    spelled = {field.alias or key for key, field in type(model).model_fields.items()}  # as to_json writes them
    missing = object()
    entry: dict[str, Any] = {}
    for key, value in written.items():
        if key in new:
            entry[key] = value if same_json(before.get(key, missing), new[key]) else new[key]
        elif key == "transport":
            if "type" in new and same_json(before.get("type"), new["type"]):
                entry[key] = value  # another host's spelling of "type"
        elif key in spelled and key not in before:
            entry[key] = value  # a default written out, still the default
    for key, value in new.items():
        if key not in entry and not (key == "type" and "transport" in entry):
            entry[key] = value
    try:
        same = same_json(parse_server_config(name, entry).to_json(), new)
    except ConfigError:
        same = False
    return entry if same else new
