"""Secrets in configs going out (masked) and coming back (a masked value means "keep the stored one").

Out: every ``env`` and ``headers`` value and the OAuth secrets are masked (``****``, or the
first three characters and ``…****`` for a long value, so the user can tell which is
which), secret-looking ``args`` too, and a URL's query values and password become
``****``: ``mcpdeck._util.masking.mask_config``, as the CLI's ``get --json``. ``${VAR}``
references are shown as they are: they name secrets, they are not secrets.

Back in: a console shows the masked form and sends the whole config back on save. A value
that still looks masked (``****``, or ``abc…****``) is replaced by the stored value of the
same key (for ``args``: the stored argument at the same place), so a save never writes the
mask over the real secret. A masked value with no
stored value to keep is refused: there is nothing it could mean.

Moved: a config whose URL now names another origin (scheme, host or port) must not take the
stored secrets there unasked. Header values and OAuth secrets it carries without giving
them anew (masked, the same as stored, or left out of a partial change) are refused (409
``secrets-for-new-host``) unless the request says ``keepSecrets=true`` (send them to the new
host) or ``keepSecrets=false`` (drop them): ``moved_secrets``.
"""

from __future__ import annotations

import re
from typing import Any, cast
from urllib.parse import urlsplit

from mcpdeck._util.masking import OAUTH_SECRET_KEYS, mask_config, mask_url
from mcpdeck.api._errors import ApiError
from mcpdeck.errors import ConfigError

__all__ = ["mask_config", "moved_secrets", "restore_masked"]

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


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """Where a URL sends requests: scheme, host and port (a URL that does not parse is its own origin)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ("?", url, None)
    scheme = parts.scheme.lower()
    return (scheme, (parts.hostname or parts.netloc).lower(), port or _DEFAULT_PORTS.get(scheme))


def _carried(
    given: dict[str, Any] | None, stored: dict[str, Any], keys: frozenset[str] | None, where: str
) -> list[str]:
    """The stored values ``given`` keeps without giving them anew: masked, the same, or (``given`` None) all."""
    found: list[str] = []
    for key, value in stored.items():
        if isinstance(value, dict):
            inner = _as_dict(given.get(key)) if given is not None else None
            if given is None or inner is not None:
                found += _carried(inner, cast(dict[str, Any], value), keys, f"{where}.{key}")
        elif keys is None or key in keys:
            if given is None or (key in given and (_is_masked(given[key]) or given[key] == value)):
                found.append(f"{where}.{key}")
    return found


def _dropped(given: dict[str, Any] | None, stored: dict[str, Any], keys: frozenset[str] | None) -> dict[str, Any]:
    """``given`` (or, None, the stored values) without what ``_carried`` finds."""
    source = stored if given is None else given
    kept: dict[str, Any] = {}
    for key, value in source.items():
        if isinstance(value, dict):
            inner = _as_dict(given.get(key)) if given is not None else cast(dict[str, Any], value)
            kept[key] = (
                _dropped(inner, _as_dict(stored.get(key)) or {}, keys) if given is None or inner is not None else value
            )
        elif keys is not None and key not in keys:
            kept[key] = value
        elif given is not None and not (key in stored and (_is_masked(value) or stored[key] == value)):
            kept[key] = value
    return kept


def moved_secrets(
    given: dict[str, Any], stored: dict[str, Any] | None, *, partial: bool, keep: bool | None
) -> dict[str, Any]:
    """``given`` (a config from a client, or with ``partial`` some keys of it) checked before its
    masked values are restored from ``stored``: when its URL names another origin than the stored
    one, the stored header values and OAuth secrets it would carry there are sent on only with
    ``keep`` True, dropped with ``keep`` False, and refused otherwise.

    Raises:
        ApiError: 409 ``secrets-for-new-host``, naming the keys (never their values) and both ways on.
    """
    stored = stored or {}
    old, new = stored.get("url"), given.get("url")
    if not isinstance(old, str) or not isinstance(new, str) or "****" in new:  # a masked URL is the stored one
        return given
    if _origin(old) == _origin(new):
        return given
    sections = (("headers", None), ("oauth", OAUTH_SECRET_KEYS))
    carried: list[str] = []
    for section, keys in sections:
        kept = _as_dict(stored.get(section))
        if kept and (partial or section in given):
            carried += _carried(_as_dict(given.get(section)) if section in given else None, kept, keys, section)
    if not carried or keep:
        return given
    if keep is False:
        result = dict(given)
        for section, keys in sections:
            kept = _as_dict(stored.get(section))
            if kept and (partial or section in given):
                inner = _as_dict(given.get(section)) if section in given else None
                result[section] = _dropped(inner, kept, keys)
        return result
    raise ApiError(
        409,
        "secrets-for-new-host",
        f"the URL now points at {_shown(new)}, not {_shown(old)}: the stored {', '.join(carried)} would be sent "
        f"there. Give {'it' if len(carried) == 1 else 'them'} again, or confirm that the stored values go to the "
        "new host (keepSecrets=true), or drop them (keepSecrets=false)",
    )


def _shown(url: str) -> str:
    scheme, host, port = _origin(url)
    return f"{scheme}://{host}:{port}" if port is not None else f"{scheme}://{host}"
