"""Config values as shown to people: literal secrets masked, ``${VAR}`` references as they are.

Used by every face that shows a server's config (``mcpdeck get``, the REST API).
"""

from __future__ import annotations

import re
from typing import Any, cast

from mcpdeck.config._models import OAUTH_SECRET_KEYS, ServerConfig

__all__ = ["mask_secrets", "mask_value"]

_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$")
_SECRET_WORDS = re.compile(r"token|secret|key|password|passwd|auth|credential|bearer|cookie|session", re.IGNORECASE)


def mask_value(key: str, value: str) -> str:
    """A config value as shown: ``${VAR}`` references as they are, anything else under a secret-ish key masked."""
    if _REFERENCE.match(value) or not _SECRET_WORDS.search(key):
        return value
    return "****" if len(value) <= 8 else f"{value[:3]}…****"


def _mask_keys(data: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """``data`` with the values of ``keys`` masked, nested objects included."""
    masked: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            masked[key] = _mask_keys(cast(dict[str, Any], value), keys)
        elif key in keys and isinstance(value, str):
            masked[key] = value if _REFERENCE.match(value) else ("****" if len(value) <= 8 else f"{value[:3]}…****")
        else:
            masked[key] = value
    return masked


def mask_secrets(config: ServerConfig) -> dict[str, Any]:
    """The config's JSON form with literal secrets masked: ``env``, ``headers``, and the OAuth client
    secret, private key and identity provider's secret and ID token."""
    data = config.to_json()
    oauth = data.get("oauth")
    if isinstance(oauth, dict):
        data["oauth"] = _mask_keys(cast(dict[str, Any], oauth), OAUTH_SECRET_KEYS)
    for section in ("env", "headers"):
        values = data.get(section)
        if isinstance(values, dict):
            data[section] = {k: mask_value(k, str(v)) for k, v in values.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return data
