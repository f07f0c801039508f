"""The config document: the whole file as one typed model, made in one place.

``ConfigDocument`` holds every part of the file a part of mcpdeck reads: the servers, the global switch and
``npmRegistry`` (``McpConfig``), ``permissions``, ``profiles``, the ``gateway`` settings, and the whole JSON
data (``raw``: the keys a model here does not have, such as ``providers`` and ``model``, which their own part
reads with its environment, and every key not known yet). ``ConfigStore.document()`` makes it once per change of
the file and hands the same object to every reader; a save writes the user's text back with only what changed
spliced in (``_splice``), never this model.

Values stay as the file writes them: a ``${VAR}`` is expanded where it is used (a server's when it connects, a
gateway token by the command that serves), never here.

One part that cannot be read does not make the others unusable: the servers report theirs by name
(``McpConfig.problems``), and ``permissions``, ``profiles`` and ``gateway`` each report theirs in ``problems``
under its key while the document keeps that part as the previous document had it (its defaults when there was
none). A reader that must refuse to start on a broken part calls ``check``; one that runs keeps the last good
part and reports the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from mcpdeck.config._gateway import GatewaySettings, parse_gateway_settings
from mcpdeck.config._json import load_json, strip_jsonc
from mcpdeck.config._models import ServerConfig, parse_server_config
from mcpdeck.config._permissions import PermissionRules, parse_permissions
from mcpdeck.config._profiles import ProfileConfig, parse_profiles
from mcpdeck.errors import ConfigError

__all__ = [
    "ConfigDocument",
    "ConfigSection",
    "McpConfig",
    "load_document_json",
    "parse_config_document",
    "parse_document",
]

ConfigSection = Literal["permissions", "profiles", "gateway"]
"""The parts of the document (besides the servers) that can be unusable on their own."""


@dataclass(frozen=True)
class McpConfig:
    """One reading of a config file's servers (or of configs given in code).

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


@dataclass(frozen=True, eq=False)
class ConfigDocument:
    """The whole config file, parsed once (``ConfigStore.document()``); treat it, ``raw`` included, as read-only.

    Attributes:
        config: The servers, their problems, ``npmRegistry`` and ``mcpEnabled``.
        permissions: The ``permissions`` rules.
        profiles: The gateway's ``profiles``, by name.
        gateway: The ``gateway`` settings (``approval``, ``tokens`` with ``${VAR}`` unexpanded).
        raw: The whole document as JSON data, every key included.
        problems: The parts that could not be read, with the error that says where and what to write; each such
            part holds what the previous document had.
        path: The file it was read from, if any.
    """

    config: McpConfig = field(default_factory=McpConfig)
    permissions: PermissionRules = field(default_factory=PermissionRules)
    profiles: Mapping[str, ProfileConfig] = field(default_factory=dict[str, ProfileConfig])
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    raw: Mapping[str, Any] = field(default_factory=dict[str, Any])
    problems: Mapping[ConfigSection, ConfigError] = field(default_factory=dict[ConfigSection, ConfigError])
    path: Path | None = None

    def check(self, *sections: ConfigSection) -> None:
        """Raise the error of the first of ``sections`` that could not be read (for a reader about to start).

        Raises:
            ConfigError: That part is unusable; the message says where and what to write.
        """
        for section in sections:
            problem = self.problems.get(section)
            if problem is not None:
                raise problem


def load_document_json(text: str, path: str) -> dict[str, Any]:
    """The file's text as JSON data, checked to be a config document's object.

    Raises:
        ConfigError: Not JSON(C), a key given twice, too deep, or not an object with an object ``mcpServers``.
    """
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


def parse_document(
    data: Mapping[str, Any], path: Path | None = None, previous: ConfigDocument | None = None
) -> ConfigDocument:
    """The typed model of a parsed document; a part that cannot be read keeps ``previous``'s (see the module)."""
    before = previous or ConfigDocument()
    where = str(path) if path is not None else None
    problems: dict[ConfigSection, ConfigError] = {}
    try:
        permissions = parse_permissions(data, path=where)
    except ConfigError as error:
        permissions, problems["permissions"] = before.permissions, error
    try:
        profiles: Mapping[str, ProfileConfig] = parse_profiles(data, path=where)
    except ConfigError as error:
        profiles, problems["profiles"] = before.profiles, error
    try:
        gateway = parse_gateway_settings(data, path=where)
    except ConfigError as error:
        gateway, problems["gateway"] = before.gateway, error
    return ConfigDocument(
        config=parse_config_document(data, path),
        permissions=permissions,
        profiles=profiles,
        gateway=gateway,
        raw=data,
        problems=problems,
        path=path,
    )
