"""The secret values a config holds, so that what is shown or stored can hide them (``Redactor``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from mcpdeck._util.masking import OAUTH_SECRET_KEYS
from mcpdeck.config._expand import referenced_values
from mcpdeck.config._models import StdioServerConfig
from mcpdeck.config._store import McpConfig

__all__ = ["secrets_of"]


def _oauth_secrets(oauth: object) -> list[str]:
    """The literal secrets of an ``oauth`` config object (nested identity provider included)."""
    if not isinstance(oauth, dict):
        return []
    found: list[str] = []
    for key, value in cast(dict[str, object], oauth).items():
        if isinstance(value, dict):
            found.extend(_oauth_secrets(cast(object, value)))
        elif key in OAUTH_SECRET_KEYS and isinstance(value, str):
            found.append(value)
    return found


def secrets_of(config: McpConfig, environ: Mapping[str, str] | None = None) -> set[str]:
    """The secret values a config holds: env and header values, OAuth client secrets, and
    (given ``environ``) the values its ``${VAR}`` references bring in.

    ``${VAR}`` references are not secrets themselves; literal values shorter than 6
    characters are too likely to be ordinary words to be worth hiding.
    """
    found: set[str] = set() if environ is None else referenced_values(config.servers, environ)
    for server in config.servers.values():
        values: list[str] = []
        if isinstance(server, StdioServerConfig):
            values.extend(server.env.values())
        else:
            values.extend(server.headers.values())
            values.extend(_oauth_secrets(server.to_json().get("oauth")))
        found.update(v for v in values if len(v) >= 6 and not v.startswith("${"))
        # A header like "Bearer abc123..." carries its secret after the scheme.
        found.update(v.split(" ", 1)[1] for v in values if " " in v and len(v.split(" ", 1)[1]) >= 6)
    return found
