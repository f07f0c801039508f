"""Making a ``ChatModel`` from ``provider:model``: built-in providers, config settings, environment variables.

Built in: ``openai`` (Chat Completions), ``openai-responses``, ``anthropic``, ``gemini`` (also
``google``) and ``ollama`` (its OpenAI-compatible API). The config may tune those and add
providers of its own (see ``_provider_settings``), ``${VAR}`` references expanded when a
model is made. Each setting comes from the first of: the argument given to ``chat_model``,
the config's provider settings, the provider's environment variables, the default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from mcpdeck.errors import ProviderError
from mcpdeck.providers._anthropic_chat import AnthropicModel
from mcpdeck.providers._chat_model import ChatModel, ModelRef, parse_model
from mcpdeck.providers._gemini_chat import GeminiModel
from mcpdeck.providers._openai_chat import DEFAULT_OPENAI_URL, OpenAIChatModel
from mcpdeck.providers._openai_responses import OpenAIResponsesModel
from mcpdeck.providers._provider_settings import ALIASES, BUILTIN, Builtin, ProviderSettings

__all__ = ["chat_model", "known_providers", "ollama_url", "provider_url"]

_MODELS: dict[str, Callable[..., ChatModel]] = {
    "openai": OpenAIChatModel,
    "openai-responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
    "gemini": GeminiModel,
}


def known_providers(settings: Mapping[str, ProviderSettings] | None = None) -> list[str]:
    """The provider names ``chat_model`` takes: the built-in ones, their aliases, and those in ``settings``."""
    return sorted({*BUILTIN, *ALIASES, *(settings or {})})


def chat_model(
    spec: str | ModelRef,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    settings: Mapping[str, ProviderSettings] | None = None,
    **options: Any,
) -> ChatModel:
    """A model, ready to stream (no request is made yet).

    Args:
        spec: ``provider:model`` (``openai:gpt-4.1``, ``ollama:llama3.2:1b``) or a ``ModelRef``.
        api_key: The API key (default: the config's, else the provider's environment variable).
        base_url: The API's root (default: the config's, else the environment's, else the provider's own).
        environ: The environment variables to read (default: ``os.environ``).
        settings: The config's provider settings (``parse_provider_settings``).
        **options: Passed to the model: ``max_retries``, ``timeout``, ``headers``, ``params``,
            ``converter``; ``max_tokens`` (Anthropic), ``include_usage`` (Chat Completions),
            ``retry_delay`` (Gemini).

    Raises:
        ProviderError: The spec names no provider or model, the provider is unknown, no API
            key is set where one is needed (the message names the variable), or the
            provider's SDK is not installed.
        ConfigError: A ``${VAR}`` in the provider's settings names an unset variable.
    """
    ref = parse_model(spec) if isinstance(spec, str) else spec
    env = os.environ if environ is None else environ
    name = ref.provider
    canonical = ALIASES.get(name, name)
    builtin, own = _settings(name, settings or {}, env)
    api = builtin.api if builtin is not None else own.type or "openai"
    key, hint = _key(name, builtin, api_key, own, env)
    url = base_url or own.base_url or _env_url(canonical, builtin, env)
    if key is None:
        if builtin is not None and builtin.needs_key and url.rstrip("/") == builtin.default_url:
            variable = " or ".join(builtin.key_env)
            raise ProviderError(
                f'no API key for {name}: set {variable} (or "apiKey" under providers.{canonical} in the config)',
                provider=name,
            )
        key = "ollama" if canonical == "ollama" else "no-key"  # servers that take none still want a header
    arguments: dict[str, Any] = {"provider": name, "api_key": key, "base_url": url, "key_hint": hint}
    arguments.update(_options(own, options))
    return _MODELS[api](ref.model, **arguments)


def provider_url(
    name: str, settings: Mapping[str, ProviderSettings] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The API root a model of provider ``name`` would talk to (as ``chat_model`` picks it).

    Raises:
        ProviderError: The provider is unknown.
    """
    env = os.environ if environ is None else environ
    builtin, own = _settings(name, settings or {}, env)
    return own.base_url or _env_url(ALIASES.get(name, name), builtin, env)


def _settings(
    name: str, configured: Mapping[str, ProviderSettings], env: Mapping[str, str]
) -> tuple[Builtin | None, ProviderSettings]:
    """The built-in provider ``name`` stands for (if any) and its settings from the config, expanded."""
    canonical = ALIASES.get(name, name)
    found = configured.get(name) or configured.get(canonical)
    builtin = BUILTIN.get(canonical)
    if builtin is None and found is None:
        raise ProviderError(
            f"unknown provider {name!r}; known: {', '.join(known_providers(configured))} "
            f'(add your own under "providers" in the config)',
            provider=name,
        )
    return builtin, found.expand(name, env) if found is not None else ProviderSettings()


def _options(own: ProviderSettings, options: dict[str, Any]) -> dict[str, Any]:
    """The model's options: the config's retries, timeout, headers and params, with what was given on top."""
    chosen: dict[str, Any] = {}
    if own.max_retries is not None:
        chosen["max_retries"] = own.max_retries
    if own.timeout is not None:
        chosen["timeout"] = own.timeout
    extra_headers: Mapping[str, str] = options.pop("headers", None) or {}
    headers = {**own.headers, **extra_headers}
    if headers:
        chosen["headers"] = headers
    extra_params: Mapping[str, Any] = options.pop("params", None) or {}
    params = {**own.params, **extra_params}
    if params:
        chosen["params"] = params
    chosen.update(options)
    return chosen


def _key(
    name: str, builtin: Builtin | None, given: str | None, own: ProviderSettings, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """The API key and what to do if it is refused, from the first place that has one."""
    canonical = ALIASES.get(name, name)
    if given:
        return given, "check the api_key given"
    if own.api_key:
        return own.api_key, f'check "apiKey" under providers.{canonical} in the config'
    for variable in builtin.key_env if builtin is not None else ():
        value = env.get(variable, "").strip()
        if value:
            return value, f"check {variable}"
    if builtin is not None and builtin.key_env:
        return None, f"set {' or '.join(builtin.key_env)}"
    return None, f'set "apiKey" under providers.{canonical} in the config'


def _env_url(name: str, builtin: Builtin | None, env: Mapping[str, str]) -> str:
    """The base URL from the provider's environment variables, else its default."""
    if builtin is None:
        return DEFAULT_OPENAI_URL  # not reached: a provider of the config's own has a baseUrl
    for variable in builtin.url_env:
        value = env.get(variable, "").strip()
        if value:
            return value
    host = env.get("OLLAMA_HOST", "").strip() if name == "ollama" else ""
    return ollama_url(host) if host else builtin.default_url


def ollama_url(host: str) -> str:
    """The OpenAI-compatible base URL for an ``OLLAMA_HOST`` value, read as Ollama reads it.

    No scheme means http and port 11434 (``0.0.0.0:11434``, ``myhost``); with a scheme the
    port defaults to the scheme's (``https://ollama.example.com``).
    """
    value = host.strip()
    scheme, sep, rest = value.partition("://")
    if not sep:
        scheme, rest, port = "http", value, 11434
    else:
        port = 443 if scheme == "https" else 80
    hostport, _, path = rest.partition("/")
    parts = urlsplit(f"//{hostport}")
    try:
        port = parts.port or port
    except ValueError:  # a port that is not a number: leave it to the request to fail
        pass
    hostname = parts.hostname or "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    base = f"{scheme}://{hostname}:{port}"
    if path.strip("/"):
        base += "/" + path.strip("/")
    return base + "/v1"
