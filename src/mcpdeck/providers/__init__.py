"""Tools for LLM providers: definitions out, calls in, results back, in each provider's wire format.

One converter per provider, all plain dicts (no provider SDK is imported)::

    converter = get_provider("anthropic")
    tools = converter.tools(host.catalog)          # cached per catalog version
    calls = converter.tool_calls(reply)            # [ToolCall(id, name, arguments)]
    results = [(call, await host.call_tool(call.name, call.arguments)) for call in calls]
    messages += converter.tool_results(results)

Providers: ``openai`` (Chat Completions and OpenAI-compatible servers), ``openai-responses``,
``anthropic``, ``gemini``. The schema fix-ups are pure functions, exported too.

The chat side talks to the models through the official SDKs (the ``openai``, ``anthropic``
and ``gemini`` extras), one streamed turn at a time, the conversation held by the caller
in the provider's own format::

    model = chat_model("anthropic:claude-sonnet-4-5")   # ANTHROPIC_API_KEY from the environment
    messages = [model.user_message("What is in /tmp?")]
    async for item in model.stream(messages, tools=model.converter.tools(host.catalog)):
        ...  # TextDelta items, then one Turn: messages.extend(turn.messages)

``chat_model`` knows ``openai``, ``openai-responses``, ``anthropic``, ``gemini`` (or
``google``) and ``ollama``, plus the providers a config defines under ``"providers"``
(``parse_provider_settings``); ``default_model`` reads ``MCPDECK_MODEL`` or the config's
``"model"``. ``builtin_providers()`` says what each built-in provider speaks and which variables
hold its key and URL (``canonical_provider``: the name it goes by under another of its names);
``provider_readiness`` which of them a chat can use now (a key where one is needed, a local
provider's port answering).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpdeck.providers._base import Converter, ToolDefinition, ToolSpec
from mcpdeck.providers._calls import ToolCall, ToolCallError, error_result, parse_arguments
from mcpdeck.providers._chat_model import ChatModel, ModelRef, TextDelta, Turn, Usage, parse_model
from mcpdeck.providers._models import chat_model
from mcpdeck.providers._openapi import gemini_schema
from mcpdeck.providers._provider_settings import (
    Builtin,
    ProviderSettings,
    builtin_providers,
    canonical_provider,
    default_model,
    parse_provider_settings,
)
from mcpdeck.providers._readiness import ProviderReadiness, provider_readiness
from mcpdeck.providers._schema import inline_refs, merge_all_of, object_root
from mcpdeck.providers._strict import strict_schema, strip_nulls
from mcpdeck.providers.anthropic import AnthropicConverter
from mcpdeck.providers.gemini import GeminiConverter
from mcpdeck.providers.openai import OpenAIChatConverter, OpenAIResponsesConverter

__all__ = [
    "AnthropicConverter",
    "Builtin",
    "ChatModel",
    "Converter",
    "GeminiConverter",
    "ModelRef",
    "OpenAIChatConverter",
    "OpenAIResponsesConverter",
    "ProviderReadiness",
    "ProviderSettings",
    "TextDelta",
    "ToolCall",
    "ToolCallError",
    "ToolDefinition",
    "ToolSpec",
    "Turn",
    "Usage",
    "builtin_providers",
    "canonical_provider",
    "chat_model",
    "default_model",
    "error_result",
    "gemini_schema",
    "get_provider",
    "inline_refs",
    "merge_all_of",
    "object_root",
    "parse_arguments",
    "parse_model",
    "parse_provider_settings",
    "provider_names",
    "provider_readiness",
    "register_provider",
    "strict_schema",
    "strip_nulls",
]

_PROVIDERS: dict[str, Callable[..., Converter]] = {
    OpenAIChatConverter.provider: OpenAIChatConverter,
    OpenAIResponsesConverter.provider: OpenAIResponsesConverter,
    AnthropicConverter.provider: AnthropicConverter,
    GeminiConverter.provider: GeminiConverter,
}


def get_provider(name: str, **options: Any) -> Converter:
    """A new converter for a provider.

    Args:
        name: ``openai``, ``openai-responses``, ``anthropic``, ``gemini``, or one registered.
        **options: Passed to the converter (``strict=True`` for OpenAI, ``json_schema=True``
            for Gemini, ``max_chars``, ``max_description``).

    Raises:
        ValueError: No provider has that name.
    """
    factory = _PROVIDERS.get(name.lower())
    if factory is None:
        raise ValueError(f"unknown provider {name!r}; known: {', '.join(sorted(_PROVIDERS))}")
    return factory(**options)


def register_provider(name: str, factory: Callable[..., Converter]) -> None:
    """Make ``get_provider(name)`` build converters with ``factory`` (replacing any of that name)."""
    _PROVIDERS[name.lower()] = factory


def provider_names() -> list[str]:
    """The names ``get_provider`` knows."""
    return sorted(_PROVIDERS)
