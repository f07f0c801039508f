"""Profiles: named subsets of servers and tools the gateway serves as virtual servers.

They live beside ``mcpServers`` in the config file::

    "profiles": {
      "coding": {"servers": ["fs", "github"], "tools": {"exclude": ["mcp__github__delete_*"]}},
      "fs-only": {"servers": ["fs"], "prefix": false}
    }

``servers`` (absent: every server) picks the servers; ``tools`` is an include/exclude filter
whose patterns match either the catalog name (``mcp__fs__read_*``) or the server's own name
(``read_*``); ``prefix: false`` serves one server's tools and prompts under their own names.
Keys this module does not know are kept on save (``put_profile`` and ``remove_profile`` are in ``_store``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mcpdeck.config._models import ToolFilter
from mcpdeck.errors import ConfigError

__all__ = ["ProfileConfig", "parse_profile", "parse_profiles", "validate_profile_name"]

_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
_RESERVED = ("sse", "messages")


def validate_profile_name(name: object) -> str:
    """Check that ``name`` can be a URL path segment (``/mcp/<name>``); return it, or raise ConfigError."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"profile name {name!r}: use only letters, digits, '_', '-' and '.'")
    if name in _RESERVED:
        raise ConfigError(f"profile name {name!r} is taken by the gateway's SSE paths; choose another")
    return name


class ProfileConfig(BaseModel):
    """One profile: which servers and tools it serves, and under which names."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    servers: list[str] | None = None
    """The servers it serves (absent: all of them)."""
    tools: ToolFilter | None = None
    """Include/exclude patterns on catalog names or the servers' own tool names."""
    prefix: bool = True
    """False: serve the one server's tools and prompts under their own names, with no ``mcp__<server>__``."""
    description: str | None = None

    @model_validator(mode="after")
    def _one_server_without_prefix(self) -> ProfileConfig:
        if not self.prefix and (self.servers is None or len(self.servers) != 1):
            raise ValueError('"prefix": false needs exactly one server in "servers" (names could collide otherwise)')
        return self

    def serves(self, server: str) -> bool:
        """Whether the profile includes this server."""
        return self.servers is None or server in self.servers

    def allows_tool(self, server: str, name: str, original_name: str) -> bool:
        """Whether a tool (catalog name and the server's own name) is in the profile."""
        if not self.serves(server):
            return False
        if self.tools is None:
            return True
        names = (name, original_name)
        if any(fnmatchcase(n, p) for p in self.tools.exclude for n in names):
            return False
        include = self.tools.include
        return include is None or any(fnmatchcase(n, p) for p in include for n in names)

    def to_json(self) -> dict[str, Any]:
        """The profile as it is written to the file."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def parse_profile(name: str, raw: object) -> ProfileConfig:
    """One profile as written under ``profiles.<name>``.

    Raises:
        ConfigError: The name or the profile is unusable; the message says which key and why.
    """
    validate_profile_name(name)
    try:
        return ProfileConfig.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc']) or 'profile'}: {item['msg']}" for item in error.errors()
        )
        raise ConfigError(f"profile {name!r}: {problems}") from None


def parse_profiles(doc: Mapping[str, Any], *, path: str | None = None) -> dict[str, ProfileConfig]:
    """The ``profiles`` object of a config document.

    Raises:
        ConfigError: It is not an object, or a profile is unusable; the message says which and why.
    """
    raw: object = doc.get("profiles")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError('"profiles" must be an object mapping profile names to profiles', path=path)
    profiles: dict[str, ProfileConfig] = {}
    for name, entry in cast(dict[str, object], raw).items():
        try:
            profiles[name] = parse_profile(name, entry)
        except ConfigError as error:
            raise ConfigError(str(error), path=path) from None
    return profiles
