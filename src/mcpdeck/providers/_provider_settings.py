"""The config's provider settings (its top-level ``providers`` object) and the default model::

    {"model": "lmstudio:qwen3-8b",
     "providers": {"openai": {"apiKey": "${OPENAI_API_KEY}"},
                   "lmstudio": {"type": "openai", "baseUrl": "http://localhost:1234/v1"}}}

Keys are camelCase: ``type``, ``apiKey``, ``baseUrl``, ``headers``, ``maxRetries``,
``timeout``, ``params``. The built-in providers need no ``type``; one of the config's own
needs a ``baseUrl`` and speaks Chat Completions unless its ``type`` says otherwise.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from mcpdeck.config import expand_vars
from mcpdeck.errors import ConfigError, UnsetVariableError
from mcpdeck.providers._anthropic_chat import DEFAULT_ANTHROPIC_URL
from mcpdeck.providers._gemini_chat import DEFAULT_GEMINI_URL
from mcpdeck.providers._openai_chat import DEFAULT_OPENAI_URL

__all__ = [
    "ALIASES",
    "API_KINDS",
    "BUILTIN",
    "Builtin",
    "ProviderSettings",
    "builtin_providers",
    "canonical_provider",
    "default_model",
    "parse_provider_settings",
]

API_KINDS = ("openai", "openai-responses", "anthropic", "gemini")
"""The wire formats a provider can speak (``ProviderSettings.type``)."""

DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"


@dataclass(frozen=True)
class Builtin:
    """A provider mcpdeck knows: its API, its environment variables, its default URL."""

    api: str
    key_env: tuple[str, ...]
    url_env: tuple[str, ...]
    default_url: str
    needs_key: bool = True


BUILTIN: dict[str, Builtin] = {
    "openai": Builtin("openai", ("OPENAI_API_KEY",), ("OPENAI_BASE_URL",), DEFAULT_OPENAI_URL),
    "openai-responses": Builtin("openai-responses", ("OPENAI_API_KEY",), ("OPENAI_BASE_URL",), DEFAULT_OPENAI_URL),
    "anthropic": Builtin("anthropic", ("ANTHROPIC_API_KEY",), ("ANTHROPIC_BASE_URL",), DEFAULT_ANTHROPIC_URL),
    "gemini": Builtin(
        "gemini",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        ("GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"),  # the second is google-genai's own
        DEFAULT_GEMINI_URL,
    ),
    "ollama": Builtin("openai", ("OLLAMA_API_KEY",), ("OLLAMA_BASE_URL",), DEFAULT_OLLAMA_URL, needs_key=False),
}
ALIASES = {"google": "gemini"}


def builtin_providers() -> dict[str, Builtin]:
    """The providers mcpdeck knows, by name: what each speaks, which variables hold its key and URL."""
    return dict(BUILTIN)


def canonical_provider(name: str) -> str:
    """The name a built-in provider is known by under another of its names (``google``: ``gemini``);
    any other name as it is."""
    return ALIASES.get(name, name)


_KEYS = {
    "type": "type",
    "apiKey": "api_key",
    "baseUrl": "base_url",
    "headers": "headers",
    "maxRetries": "max_retries",
    "timeout": "timeout",
    "params": "params",
}


@dataclass(frozen=True)
class ProviderSettings:
    """One provider's settings from the config's ``providers`` object.

    Attributes:
        type: The API it speaks (``openai``, ``openai-responses``, ``anthropic``, ``gemini``);
            None for a built-in provider, whose API is known.
        api_key: The API key (``apiKey``), ``${VAR}`` references and all.
        base_url: The API's root (``baseUrl``).
        headers: Extra HTTP headers for every request.
        max_retries: How often to retry rate limits and overload (``maxRetries``).
        timeout: Seconds for one request.
        params: More request parameters, as the API names them (``temperature`` ...).
        expanded: Whether the ``${VAR}`` references were expanded already (so they are not again).
    """

    type: str | None = None
    api_key: str | None = None
    base_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    max_retries: int | None = None
    timeout: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict[str, Any])
    expanded: bool = False

    def expand(self, name: str, environ: Mapping[str, str]) -> ProviderSettings:
        """A copy with the ``${VAR}`` references of ``apiKey``, ``baseUrl`` and ``headers`` expanded.

        Raises:
            UnsetVariableError: A reference names an unset variable and gives no default.
        """
        if self.expanded:
            return self

        def ex(text: str | None, where: str) -> str | None:
            return None if text is None else expand_vars(text, environ, field=f"providers.{name}.{where}")

        return replace(
            self,
            api_key=ex(self.api_key, "apiKey"),
            base_url=ex(self.base_url, "baseUrl"),
            headers={key: ex(value, f"headers.{key}") or "" for key, value in self.headers.items()},
            expanded=True,
        )


def parse_provider_settings(
    doc: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, ProviderSettings]:
    """The ``providers`` object of a config document, checked.

    Args:
        doc: The whole config document (``{"mcpServers": ..., "providers": ...}``).
        path: The file it came from, for error messages.
        environ: Expand the ``${VAR}`` references now, with these variables. A provider
            whose references cannot all be expanded (an unset variable) is kept as written,
            so only using it fails (in ``chat_model``, which expands them when it makes a
            model): a key that is not set does not get in the way of the other providers.

    Raises:
        ConfigError: The object is malformed: an unknown key (the message names the allowed
            ones), a value of the wrong type, an unknown API type, or a provider of the
            config's own with no ``baseUrl``.
    """
    where = os.fspath(path) if path is not None else None
    section = doc.get("providers")
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConfigError('"providers" must be an object mapping provider names to their settings', path=where)
    result: dict[str, ProviderSettings] = {}
    for raw_name, raw in cast(Mapping[Any, Any], section).items():
        name = str(raw_name).lower()
        if not name or ":" in name:
            raise ConfigError(f"provider name {raw_name!r} must be non-empty and hold no ':'", path=where)

        def fail(message: str, name: str = name) -> ConfigError:
            return ConfigError(f"providers.{name}: {message}", path=where)

        if not isinstance(raw, Mapping):
            raise fail('must be an object like {"apiKey": "${MY_API_KEY}", "baseUrl": "https://..."}')
        entry = cast(Mapping[str, Any], raw)
        unknown = [key for key in entry if key not in _KEYS]
        if unknown:
            raise fail(f"unknown key {unknown[0]!r}; the keys are {', '.join(_KEYS)}")
        values: dict[str, Any] = {}
        for key, value in entry.items():
            values[_KEYS[key]] = _checked(key, value, fail)
        kind = values.get("type")
        builtin = BUILTIN.get(ALIASES.get(name, name))
        if kind is not None and kind not in API_KINDS:
            raise fail(f"type {kind!r} is not an API mcpdeck speaks; use one of {', '.join(API_KINDS)}")
        if builtin is not None and kind is not None and kind != builtin.api:
            raise fail(f"{name} is built in and speaks {builtin.api}; leave out type, or name the provider otherwise")
        if builtin is None:
            values.setdefault("type", "openai")
            if not values.get("base_url"):
                raise fail('a provider of your own needs "baseUrl" (the API\'s root, like http://localhost:1234/v1)')
        settings = ProviderSettings(**values)
        if environ is not None:
            with contextlib.suppress(UnsetVariableError):
                settings = settings.expand(name, environ)
        result[name] = settings
    return result


def _checked(key: str, value: Any, fail: Callable[[str], ConfigError]) -> Any:
    """A settings value of the right type, else the error saying what it must be."""
    if key in ("type", "apiKey", "baseUrl"):
        if not isinstance(value, str):
            raise fail(f"{key} must be a string")
        return value
    if key == "headers":
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in cast(Mapping[Any, Any], value).items()
        ):
            raise fail("headers must be an object of strings")
        return dict(cast(Mapping[str, str], value))
    if key == "maxRetries":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail("maxRetries must be a whole number, 0 or more")
        return value
    if key == "timeout":
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise fail("timeout must be a number of seconds above 0")
        return float(value)
    if not isinstance(value, Mapping):  # params
        raise fail("params must be an object of request parameters")
    return dict(cast(Mapping[str, Any], value))


def default_model(environ: Mapping[str, str] | None = None, doc: Mapping[str, Any] | None = None) -> str | None:
    """The model to use when none is named: ``MCPDECK_MODEL``, else the config's top-level ``model``, else None.

    Raises:
        ConfigError: The config's ``model`` is not a string.
    """
    env = os.environ if environ is None else environ
    named = env.get("MCPDECK_MODEL", "").strip()
    if named:
        return named
    value = (doc or {}).get("model")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError('"model" must be a string like "anthropic:claude-sonnet-4-5"')
    return value.strip()
