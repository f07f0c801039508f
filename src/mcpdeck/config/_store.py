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
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from mcpdeck._util.files import atomic_write, locked
from mcpdeck._util.paths import config_path
from mcpdeck.config._document import (
    ConfigDocument,
    McpConfig,
    load_document_json,
    parse_config_document,
    parse_document,
)
from mcpdeck.config._models import ServerConfig, parse_server_config, validate_server_name
from mcpdeck.config._profiles import ProfileConfig, parse_profile, validate_profile_name
from mcpdeck.config._splice import rewrite, same_json
from mcpdeck.errors import ConfigError

__all__ = [
    "ConfigDocument",
    "ConfigStore",
    "McpConfig",
    "default_config_path",
    "parse_config_document",
    "put_profile",
    "remove_profile",
    "resolve_config_path",
]

_Stamp = tuple[int, int, int] | None
"""A file's (size, mtime_ns, inode); None: no file."""


def _stamp(path: Path) -> _Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


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


class ConfigStore:
    """Reads and changes one ``mcpServers`` JSON file.

    It keeps the file's ``ConfigDocument``: ``document()`` parses the file again only when its size, mtime or
    inode moved and its text changed, so every reader of one store shares one parse per change; a change it
    writes (``edit``) is kept as the new document at once.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.written: list[Callable[[], None]] = []
        """Called after each change this store writes (in the writing thread): ``serve`` tells its other
        replicas there (``mcpdeck.store``'s config notices on PostgreSQL)."""
        self.problem: ConfigError | None = None
        """Why the file as it is now cannot be read, while ``document()`` hands out the last good document."""
        self.reads = 0
        """How many times ``document()`` read the file's text (its size, mtime or inode had moved)."""
        self.parses = 0
        """How many documents were made from the file's text (``document()``, ``edit``): one per change."""
        self._lock = threading.Lock()
        self._document: ConfigDocument | None = None
        self._text: str | None = None
        self._stamp: _Stamp = None

    @property
    def cached(self) -> ConfigDocument | None:
        """The document as last read or written, without looking at the file (None before the first read).

        For a reader on a hot path whose process has something else calling ``document()`` when the file changes
        (``serve``'s config follower, the gateway's own look at the file)."""
        return self._document

    def document(self) -> ConfigDocument:
        """The whole document, parsed again only when the file changed (a ``stat`` when it did not).

        A file that became unusable (not JSON, a key twice ...) leaves the last good document in use and says why
        in ``problem`` until it is fixed; an absent file reads as an empty document.

        Raises:
            ConfigError: The file is unusable and there is no earlier document to keep.
        """
        with self._lock:
            stamp = _stamp(self.path)
            if self._document is not None and stamp == self._stamp:
                return self._document
            self.reads += 1
            try:
                text = self._read_text()
                if self._document is not None and text == self._text:  # touched, or written back as it was
                    self._stamp, self.problem = stamp, None
                    return self._document
                raw = load_document_json(text or "", str(self.path))
            except ConfigError as error:
                if self._document is None:
                    raise
                self._stamp, self.problem = stamp, error
                return self._document
            return self._keep(raw, text, stamp)

    def _keep(self, raw: dict[str, Any], text: str | None, stamp: _Stamp) -> ConfigDocument:
        self.parses += 1
        self._document = parse_document(raw, self.path, previous=self._document)
        self._text, self._stamp, self.problem = text, stamp, None
        return self._document

    def _read_text(self) -> str | None:
        """The file's text as it is, line breaks included (``\\r\\n`` stays); None when there is no file."""
        try:
            with open(self.path, encoding="utf-8", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as error:
            raise ConfigError(
                f"the file is not UTF-8 text (byte {error.start}); save it as UTF-8", path=str(self.path)
            ) from None
        except OSError as error:
            raise ConfigError(f"cannot read the file: {error.strerror}", path=str(self.path)) from None

    def read(self) -> McpConfig:
        """The file's servers now.

        Raises:
            ConfigError: The file is unusable (even when an earlier reading is kept for others).
        """
        document = self.document()
        if self.problem is not None:
            raise self.problem
        return document.config

    def edit(self, change: Callable[[dict[str, Any]], None]) -> McpConfig:
        """Apply ``change`` to a fresh copy of the document and save what it changed atomically.

        The whole read-change-write holds the file's inter-process lock, so a change made by
        another process meanwhile is never lost. ``change`` may raise ConfigError to abandon
        the edit; the file is then untouched. Only what ``change`` changed is written into the
        file's text (``_splice.rewrite``); the rest of it stays byte for byte. The changed document
        becomes this store's ``document()``.

        Raises:
            ConfigError: The file cannot be read, ``change`` refused, or another process kept
                the lock for ``LOCK_TIMEOUT`` seconds.
        """
        try:
            with locked(self.path):
                text = self._read_text()
                raw = load_document_json(text or "", str(self.path))
                updated = copy.deepcopy(raw)
                change(updated)
                written = rewrite(text, raw, updated)
                self._write(written)
                with self._lock:
                    document = self._keep(updated, written, _stamp(self.path))
        except TimeoutError as error:
            raise ConfigError(str(error), path=str(self.path)) from None
        for told in self.written:
            told()
        return document.config

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


def put_profile(store: ConfigStore, name: str, profile: ProfileConfig | Mapping[str, Any]) -> ProfileConfig:
    """Add or replace one profile in the config file (other keys untouched); returns it as saved."""
    parsed = profile if isinstance(profile, ProfileConfig) else parse_profile(name, dict(profile))
    validate_profile_name(name)

    def change(doc: dict[str, Any]) -> None:
        section: object = doc.setdefault("profiles", {})
        if not isinstance(section, dict):
            raise ConfigError('"profiles" must be an object', path=str(store.path))
        cast(dict[str, Any], section)[name] = parsed.to_json()

    store.edit(change)
    return parsed


def remove_profile(store: ConfigStore, name: str) -> None:
    """Delete one profile from the config file.

    Raises:
        ConfigError: There is no such profile.
    """

    def change(doc: dict[str, Any]) -> None:
        section: object = doc.get("profiles")
        if not isinstance(section, dict) or name not in section:
            raise ConfigError(f"no profile named {name!r} in the config", path=str(store.path))
        del cast(dict[str, Any], section)[name]

    store.edit(change)


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
