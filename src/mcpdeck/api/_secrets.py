"""Secrets in configs going out (masked) and coming back (a masked value means "keep the stored one").

Out: a config's ``env`` and ``headers`` values under secret-looking keys and its OAuth
secrets are masked as the CLI masks them (``mask_secrets``), and a URL's query values
(API keys often ride there) become ``****``. ``${VAR}`` references are shown as they are:
they are not secrets.

Back in: a console shows the masked form and sends the whole config back on save. A value
that still looks masked (``****``, or ``abc…****``) is replaced by the stored value of the
same key, so a save never writes the mask over the real secret. A masked value with no
stored value to keep is refused: there is nothing it could mean.
"""

from __future__ import annotations

import re
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcpdeck.config import ServerConfig
from mcpdeck.config._masking import mask_secrets
from mcpdeck.config._models import OAUTH_SECRET_KEYS
from mcpdeck.errors import ConfigError

__all__ = ["mask_config", "mask_url", "restore_masked"]

_MASKED = re.compile(r"^(?:\*{4}|.{0,3}…\*{4})$")


def mask_url(url: str) -> str:
    """``url`` with the values of its query string replaced by ``****``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.query:
        return url
    query = [(key, "****") for key, _ in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*")))


def mask_config(config: ServerConfig) -> dict[str, Any]:
    """A config's JSON form with its secrets masked (as ``mcpdeck get --json`` shows it)."""
    data = mask_secrets(config)
    if isinstance(data.get("url"), str):
        data["url"] = mask_url(data["url"])
    return data


def _as_dict(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _is_masked(value: object) -> bool:
    return isinstance(value, str) and bool(_MASKED.match(value))


def _restore_map(new: dict[str, Any], old: dict[str, Any], where: str, keys: frozenset[str] | None) -> dict[str, Any]:
    restored: dict[str, Any] = {}
    for key, value in new.items():
        inner, stored = _as_dict(value), _as_dict(old.get(key))
        if inner is not None and stored is not None:
            restored[key] = _restore_map(inner, stored, f"{where}.{key}", keys)
        elif (keys is None or key in keys) and _is_masked(value):
            if key not in old:
                raise ConfigError(
                    f"{where}.{key} holds a masked value ({value}) and there is no stored value to keep; "
                    "send the real value"
                )
            restored[key] = old[key]
        else:
            restored[key] = value
    return restored


def restore_masked(new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """``new`` (a config's JSON form from a client) with masked values put back from ``old`` (the stored one)."""
    old = old or {}
    result = dict(new)
    for section, keys in (("env", None), ("headers", None), ("oauth", OAUTH_SECRET_KEYS)):
        given = _as_dict(new.get(section))
        if given is not None:
            result[section] = _restore_map(given, _as_dict(old.get(section)) or {}, section, keys)
    url, stored_url = new.get("url"), old.get("url")
    if isinstance(url, str) and "****" in url:
        if isinstance(stored_url, str) and mask_url(stored_url) == url:
            result["url"] = stored_url
        else:
            raise ConfigError("url holds masked query values that do not match the stored URL; send the real URL")
    return result
