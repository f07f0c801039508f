"""Secrets kept out of what mcpdeck shows: URL query strings and passwords, secret-looking
arguments and values, and the known secret values of a config (``Redactor``).

What is shown in place of a secret: ``****`` (query values, passwords, values), or the
first three characters and ``…****`` for a long value under a secret-sounding name, so the
user can still tell which key it is. ``${VAR}`` references are shown as they are: they
are names, not secrets.

The same signs tell when a secret is being typed into a config (``literal_secret``), so the CLI
and the console can offer a ``${VAR}`` reference in its place (``reference_for``). The console
has these two in ``console/secret-hint.js``; a test holds both to the same answers.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any, Protocol, cast
from urllib.parse import SplitResult, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "OAUTH_SECRET_KEYS",
    "Redactor",
    "is_reference",
    "literal_secret",
    "looks_like_token",
    "mask_args",
    "mask_command_line",
    "mask_config",
    "mask_url",
    "mask_urls",
    "mask_value",
    "reference_for",
    "secret_name",
]

MASK = "****"

OAUTH_SECRET_KEYS = frozenset({"clientSecret", "privateKey", "idToken"})
"""Keys of an ``oauth`` object (and its ``identityProvider``) whose literal values are secrets."""

_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$")
_SECRET_WORDS = re.compile(
    r"token|secret|key|password|passwd|pwd|auth|credential|bearer|cookie|session|private|signature|sig\b",
    re.IGNORECASE,
)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_TOKEN_PREFIX = re.compile(
    r"^(sk-|sk_|pk_|rk_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|ya29\.|eyJ)"
)
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-+=.~/]+$")


def is_reference(value: str) -> bool:
    """Whether ``value`` is a ``${VAR}`` (or ``${VAR:-default}``) reference and nothing else."""
    return bool(_REFERENCE.match(value))


def secret_name(name: str) -> bool:
    """Whether a key, header, flag or variable name sounds like it holds a secret."""
    return bool(_SECRET_WORDS.search(name))


def looks_like_token(value: str) -> bool:
    """Whether a bare value looks like an API key or token: a known prefix, or a long random-looking word."""
    if _TOKEN_PREFIX.match(value) and len(value) >= 12:
        return True
    if len(value) < 20 or not _TOKEN_CHARS.match(value) or "/" in value:
        return False
    if re.fullmatch(r"[0-9a-fA-F]{32,}", value):
        return True
    return bool(re.search(r"[a-z]", value) and re.search(r"[A-Z]", value) and re.search(r"[0-9]", value))


_AUTH_SCHEMES = ("bearer", "basic", "token")
_NOT_A_VARIABLE = re.compile(r"[^A-Za-z0-9]+")


def literal_secret(name: str, value: str) -> bool:
    """Whether ``value``, typed for the env variable or header ``name``, looks like a secret written out.

    A ``Bearer``/``Basic``/``Token`` credential, a value of 8 characters or more under a
    secret-sounding name (not a path or URL), or a token-looking value; never a value that holds a
    ``${VAR}`` reference.
    """
    text = value.strip()
    if not text or "${" in text:
        return False
    scheme, space, rest = text.partition(" ")
    if space and scheme.lower() in _AUTH_SCHEMES and rest.strip():
        return True
    if secret_name(name) and len(text) >= 8 and " " not in text and "://" not in text and text[0] not in "/~.":
        return True
    return looks_like_token(text)


def reference_for(server: str, name: str, value: str, *, header: bool) -> tuple[str, str]:
    """The variable to keep a secret typed as env variable (or header) ``name`` in, and what to save instead.

    An env variable keeps its own name (``GITHUB_TOKEN`` -> ``${GITHUB_TOKEN}``); a header is named
    after the server (``Authorization: Bearer ghp_…`` of ``github`` -> ``Bearer ${GITHUB_TOKEN}``,
    ``X-Api-Key`` -> ``${GITHUB_X_API_KEY}``), its scheme kept.
    """
    if not header and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        variable = name
    else:
        own = "TOKEN" if header and name.lower() == "authorization" else name
        parts = [_NOT_A_VARIABLE.sub("_", part).strip("_").upper() for part in ([server, own] if header else [own])]
        variable = "_".join(part for part in parts if part) or "SECRET"
        if variable[0].isdigit():
            variable = f"_{variable}"
    scheme, space, rest = value.strip().partition(" ")
    if space and scheme.lower() in _AUTH_SCHEMES and rest.strip():
        return variable, f"{scheme} ${{{variable}}}"
    return variable, f"${{{variable}}}"


def mask_value(value: str) -> str:
    """A secret value as shown: references as they are, short values ``****``, long ones their first 3 characters."""
    if is_reference(value):
        return value
    return MASK if len(value) <= 8 else f"{value[:3]}…{MASK}"


def mask_url(url: str) -> str:
    """``url`` with its password and every query value (and a fragment) masked; the rest as it is.

    ``https://u:pw@host/p?key=abc&x=1`` becomes ``https://u:****@host/p?key=****&x=****``. A
    ``${VAR}`` reference is kept (it names the secret, it is not one).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return _mask_query_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if colon:
            netloc = f"{user}:{password if is_reference(password) else MASK}@{hostport}"
        else:
            netloc = f"{user if is_reference(user) or len(user) < 20 else MASK}@{hostport}"
    query = _mask_query(parts.query) if parts.query else ""
    fragment = MASK if parts.fragment and not is_reference(parts.fragment) else parts.fragment
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, fragment))


def _mask_query(query: str) -> str:
    masked: list[str] = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if not equals:
            masked.append(name if is_reference(name) or not name else MASK)
        else:
            masked.append(f"{name}={value if is_reference(value) or not value else MASK}")
    return "&".join(masked)


def _mask_query_text(text: str) -> str:
    base, question, query = text.partition("?")
    return f"{base}?{_mask_query(query)}" if question else text


def mask_urls(text: str) -> str:
    """``text`` with every URL in it masked as ``mask_url`` does."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: mask_url(match.group()), text)


def mask_args(args: Iterable[str]) -> list[str]:
    """Command-line arguments with what looks secret masked.

    The value after a secret-sounding flag (``--api-key X``, ``--token=X``), ``NAME=value``
    and ``Name: value`` under a secret-sounding name, bare values that look like tokens,
    and the query strings and passwords of URLs.
    """
    masked: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next and not arg.startswith("-"):
            masked.append(mask_value(arg))
            hide_next = False
            continue
        hide_next = False
        masked.append(_mask_arg(arg))
        if arg.startswith("-") and "=" not in arg and secret_name(arg):
            hide_next = True
    return masked


def _mask_arg(arg: str) -> str:
    if is_reference(arg):
        return arg
    for separator in ("=", ": ", ":"):
        name, found, value = arg.partition(separator)
        if found and name and " " not in name.strip() and "://" not in arg[: len(name) + 3] and secret_name(name):
            return f"{name}{separator}{mask_value(value.strip()) if value.strip() else value}"
    if "://" in arg:
        return mask_urls(arg)
    scheme, space, rest = arg.partition(" ")
    if space and scheme.lower() in ("bearer", "basic", "token") and rest:
        return f"{scheme} {mask_value(rest)}"
    return mask_value(arg) if looks_like_token(arg) else arg


def mask_command_line(command: str, args: Iterable[str]) -> str:
    """The command line ``command args...`` for display, with secret-looking arguments masked.

    Each word is quoted as a shell would need it to read the line back (``--note 'two words'``):
    when the real word needs quoting, the shown one (masked or not) is quoted."""
    real = [command, *args]
    shown = [command, *mask_args(real[1:])]
    quoted = (shlex.quote(word) if shlex.quote(raw) != raw else word for raw, word in zip(real, shown, strict=True))
    return " ".join(quoted)


class Redactor:
    """Replaces known secret values in text with ``****``."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text


class _JsonConfig(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def _mask_keys(data: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """``data`` with the string values of ``keys`` masked, nested objects included."""
    masked: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            masked[key] = _mask_keys(cast(dict[str, Any], value), keys)
        else:
            masked[key] = mask_value(value) if key in keys and isinstance(value, str) else value
    return masked


def mask_config(config: _JsonConfig) -> dict[str, Any]:
    """A server config's JSON form with what can be secret masked.

    Masked: every ``env`` and ``headers`` value (whatever its name), secret-looking
    ``args``, the URL's query values and password, and the OAuth secrets
    (``OAUTH_SECRET_KEYS``, the identity provider's included). ``${VAR}`` references stay
    readable. The CLI (``get``, ``--json``) and the REST API show configs through this.
    """
    data = config.to_json()
    for section in ("env", "headers"):
        values = data.get(section)
        if isinstance(values, dict):
            data[section] = {key: mask_value(str(value)) for key, value in cast(dict[str, object], values).items()}
    oauth = data.get("oauth")
    if isinstance(oauth, dict):
        data["oauth"] = _mask_keys(cast(dict[str, Any], oauth), OAUTH_SECRET_KEYS)
    if isinstance(data.get("args"), list):
        data["args"] = mask_args(str(arg) for arg in cast(list[object], data["args"]))
    if isinstance(data.get("url"), str):
        data["url"] = mask_url(data["url"])
    return data
