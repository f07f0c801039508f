"""Secrets in configs going out (masked) and coming back (a masked value means "keep the stored one").

Out: every ``env`` and ``headers`` value and the OAuth secrets are masked (``****``, or the
first three characters and ``…****`` for a long value, so the user can tell which is
which), secret-looking ``args`` too, and a URL's query values and password become
``****``: ``mcpdeck._masking.mask_config``, as the CLI's ``get --json``. ``${VAR}``
references are shown as they are: they name secrets, they are not secrets.

Back in: a console shows the masked form and sends the whole config back on save. A value
that still looks masked (``****``, or ``abc…****``) is replaced by the stored value of the
same key (for ``args``: the stored argument at the same place), so a save never writes the
mask over the real secret. A masked value with no
stored value to keep is refused: there is nothing it could mean.
"""

from __future__ import annotations

import re
from typing import Any, cast

from mcpdeck._masking import OAUTH_SECRET_KEYS, mask_config, mask_url
from mcpdeck.errors import ConfigError

__all__ = ["mask_config", "restore_masked"]

_MASKED = re.compile(r"(?:^|[=: ])(?:\*{4}|[^=: ]{0,3}…\*{4})$")


def _as_dict(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _is_masked(value: object) -> bool:
    return isinstance(value, str) and bool(_MASKED.search(value))


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
    args, stored_args = new.get("args"), old.get("args")
    if isinstance(args, list) and any(_is_masked(arg) for arg in cast(list[object], args)):
        given = cast(list[object], args)
        if not isinstance(stored_args, list) or len(cast(list[object], stored_args)) != len(given):
            raise ConfigError("args holds masked values but not as many arguments as are stored; send the real ones")
        kept = cast(list[object], stored_args)
        result["args"] = [kept[i] if _is_masked(arg) else arg for i, arg in enumerate(given)]
    url, stored_url = new.get("url"), old.get("url")
    if isinstance(url, str) and "****" in url:
        if isinstance(stored_url, str) and mask_url(stored_url) == url:
            result["url"] = stored_url
        else:
            raise ConfigError("url holds masked query values that do not match the stored URL; send the real URL")
    return result
