"""Importers: read other MCP hosts' config files and turn their servers into mcpdeck configs.

Readers are pure functions of the file (plus the home and working folders some formats
refer to). One unusable entry never stops the others: it lands in ``ImportResult.skipped``
with the reason, and whatever the import changed on the way is told in ``notes``.

The file is read by ``_import_files`` (JSONC, YAML) and its entries converted by
``_import_hosts`` (each host's format); here the servers are parsed, named (a name mcpdeck
cannot take is renamed, and the rename noted) and gathered into the result.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcpdeck.config._import_files import load_json_object, load_yaml_mapping
from mcpdeck.config._import_hosts import Convert, Skip, goose_entries, mcp_servers_entries, vscode_entries
from mcpdeck.config._models import MAX_SERVER_NAME, ServerConfig, parse_server_config, validate_server_name
from mcpdeck.errors import ConfigError

__all__ = ["IMPORT_SOURCES", "ImportResult", "ImportSource", "default_import_path", "import_servers"]

ImportSource = Literal["claude-desktop", "claude-code", "cursor", "vscode", "goose"]
IMPORT_SOURCES: tuple[ImportSource, ...] = ("claude-desktop", "claude-code", "cursor", "vscode", "goose")

_LABELS: dict[ImportSource, str] = dict(
    zip(IMPORT_SOURCES, ("Claude Desktop", "Claude Code", "Cursor", "VS Code", "Goose"), strict=True)
)


@dataclass(frozen=True)
class ImportResult:
    """What one import found.

    Attributes:
        source: The host the file belongs to.
        path: The file that was read.
        servers: The importable servers, by (valid, possibly renamed) mcpdeck name, in file order.
        skipped: Entries that could not be imported: original name -> why.
        notes: What the import changed or what the user must do (renames, variables to set).
    """

    source: ImportSource
    path: Path
    servers: dict[str, ServerConfig]
    skipped: dict[str, str]
    notes: list[str]


def default_import_path(
    source: ImportSource, *, home: Path | None = None, platform: str | None = None, cwd: Path | None = None
) -> Path:
    """Where ``source`` keeps its MCP config by default.

    Args:
        source: The host.
        home: The user's home folder. When given, ``%APPDATA%`` and ``$XDG_CONFIG_HOME`` are
            taken to be their defaults under it; when omitted, the real home and environment are used.
        platform: A ``sys.platform`` value (``darwin``, ``win32``, ``linux``); default: this one.
        cwd: The project folder for project-level files; default: the working directory.

    Returns:
        The per-user file (Claude Desktop, Cursor, Goose) or the project file under ``cwd`` (Claude Code, VS Code).
    """
    user = home if home is not None else Path.home()
    system = platform or sys.platform
    if source == "claude-code":
        return (cwd if cwd is not None else Path.cwd()) / ".mcp.json"
    if source == "vscode":
        return (cwd if cwd is not None else Path.cwd()) / ".vscode" / "mcp.json"
    if source == "cursor":
        return user / ".cursor" / "mcp.json"
    env: Mapping[str, str] = os.environ if home is None else {}
    windows = system.startswith("win")
    appdata = Path(env["APPDATA"]) if env.get("APPDATA") else user / "AppData" / "Roaming"
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else user / ".config"
    if source == "goose":
        return (appdata / "Block" / "goose" / "config" if windows else xdg / "goose") / "config.yaml"
    folder = appdata if windows else user / "Library" / "Application Support" if system == "darwin" else xdg
    return folder / "Claude" / "claude_desktop_config.json"


def import_servers(source: ImportSource, path: Path | None = None) -> ImportResult:
    """Read ``source``'s config file and convert its servers.

    Args:
        source: The host whose format the file is in.
        path: The file; default: :func:`default_import_path` for ``source``.

    Returns:
        The servers ready to save, the entries skipped with reasons, and notes.

    Raises:
        ConfigError: The file is missing, unreadable, or not valid JSON/YAML (with the line).
    """
    path = path if path is not None else default_import_path(source)
    label = _LABELS[source]
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            f"no {label} config file here; if yours is elsewhere, give its path: `mcpdeck import {source} PATH`",
            path=str(path),
        ) from None
    except OSError as error:
        raise ConfigError(f"cannot read the {label} config: {error.strerror}", path=str(path)) from None
    found = _Found()
    if source == "goose":
        entries = goose_entries(load_yaml_mapping(text, path), path)
    elif source == "vscode":
        entries = vscode_entries(load_json_object(text, path), path)
    else:
        entries = mcp_servers_entries(source, load_json_object(text, path), path, found.notes)
    for name, raw, convert in entries:
        found.add(name, raw, convert)
    return found.result(source, path)


@dataclass
class _Found:
    entries: dict[str, tuple[dict[str, Any], list[str]]] = field(default_factory=dict[str, Any])
    skipped: dict[str, str] = field(default_factory=dict[str, str])
    notes: list[str] = field(default_factory=list[str])

    def add(self, name: str, raw: Any, convert: Convert) -> None:
        notes: list[str] = []
        try:
            self.entries[name] = (convert(name, raw, notes), notes)
        except Skip as skip:
            self.skipped[name] = str(skip)

    def result(self, source: ImportSource, path: Path) -> ImportResult:
        parsed: dict[str, tuple[ServerConfig, list[str]]] = {}
        for original, (raw, notes) in self.entries.items():
            base = _sanitize(original)
            try:
                parsed[original] = (parse_server_config(base, raw), notes)
            except ConfigError as error:
                self.skipped[original] = str(error).removeprefix(f"server {base!r}: ")
        taken = {name for name in parsed if _is_valid(name)}
        servers: dict[str, ServerConfig] = {}
        for original, (config, notes) in parsed.items():
            name = original
            if not _is_valid(original):
                name = _unique(_sanitize(original), taken)
                taken.add(name)
                self.notes.append(
                    f"renamed {original!r} to {name!r}: mcpdeck server names use only letters, digits, '_' and '-', "
                    f"without '__', at most {MAX_SERVER_NAME} characters"
                )
            servers[name] = config
            self.notes.extend(notes)
        if not self.entries and not self.skipped and not self.notes:
            self.notes.append(f"no MCP servers found in this {_LABELS[source]} file")
        return ImportResult(source, path, servers, self.skipped, list(dict.fromkeys(self.notes)))


def _is_valid(name: str) -> bool:
    try:
        validate_server_name(name)
    except ConfigError:
        return False
    return True


def _sanitize(name: str) -> str:
    clean = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]", "_", name)).strip("_-")
    return clean[:MAX_SERVER_NAME].rstrip("_-") or "server"


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        suffix = f"-{n}"
        name, n = base[: MAX_SERVER_NAME - len(suffix)] + suffix, n + 1
    return name
