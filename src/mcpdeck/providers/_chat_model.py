"""The chat side of a provider: one model turn, streamed, in the provider's own message format.

A ``ChatModel`` keeps no conversation of its own. The caller (the agent loop) holds the
messages as plain dicts in the provider's wire format and passes them in each turn::

    model = chat_model("anthropic:claude-sonnet-4-5")
    messages = [model.user_message("What is in /tmp?")]
    async for item in model.stream(messages, tools=model.converter.tools(host.catalog)):
        if isinstance(item, TextDelta):
            print(item.text, end="")
        else:  # the Turn, always last
            messages.extend(item.messages)
            ... run item.tool_calls, then messages += model.converter.tool_results(results)

A turn adds ``Turn.messages`` to the conversation: one assistant message for Chat
Completions, Anthropic and Gemini, and the response's output items (reasoning, message,
function calls) for the Responses API, where one turn is several input items.

Every provider failure comes out as ``ProviderError`` (with ``status`` and ``retryable``);
the SDKs' own retries (rate limits, overload) happen first.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from mcpdeck.errors import ProviderError
from mcpdeck.providers._base import Converter
from mcpdeck.providers._calls import ToolCall

__all__ = [
    "ChatModel",
    "ModelRef",
    "TextDelta",
    "Turn",
    "Usage",
    "error_cause",
    "error_detail",
    "missing_sdk",
    "parse_model",
]


@dataclass(frozen=True)
class ModelRef:
    """A model named ``provider:model`` (``openai:gpt-4.1``, ``ollama:llama3.2``)."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_model(spec: str) -> ModelRef:
    """``provider:model`` split at the first colon (model names may hold more: ``ollama:llama3.2:1b``).

    Raises:
        ProviderError: No provider or no model is named.
    """
    provider, sep, model = spec.strip().partition(":")
    if not sep or not provider or not model:
        raise ProviderError(
            f"name the model as provider:model (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, "
            f"gemini:gemini-2.5-flash, ollama:llama3.2), not {spec!r}",
            provider=provider if sep else "",
        )
    return ModelRef(provider.lower(), model)


@dataclass(frozen=True)
class Usage:
    """Tokens a turn used, as the provider counted them (None when it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text, as it streams."""

    text: str


@dataclass(frozen=True)
class Turn:
    """One finished model turn.

    Attributes:
        text: All the text of the turn.
        tool_calls: The tool calls, in the order the model made them (an unreadable one has ``error`` set).
        messages: What the turn adds to the conversation, in the provider's format, to append
            as it is (``messages.extend(turn.messages)``): it carries what the provider needs
            back (call ids, thinking blocks, thought signatures, reasoning items). One assistant
            message for every API but the Responses API, whose output items may be several.
        stop_reason: The provider's reason for stopping (``stop``, ``tool_use``, ``max_tokens`` ...).
        usage: Tokens used, when known.
    """

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list[ToolCall])
    messages: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    stop_reason: str | None = None
    usage: Usage | None = None


class ChatModel(ABC):
    """One model of one provider, reached through the provider's official SDK.

    Use it as an async context manager, or call ``aclose()``, to close its connections.

    Attributes:
        provider: The provider name the model was made with (``openai``, ``ollama`` ...).
        model: The model's name at the provider.
        converter: Tool definitions, calls and results in this provider's format.
        base_url: Where the requests go.
        key_hint: What to do about a refused key, for error messages (``set OPENAI_API_KEY ...``).
    """

    api: ClassVar[str]
    """The wire format: ``openai``, ``openai-responses``, ``anthropic`` or ``gemini``."""

    def __init__(self, provider: str, model: str, converter: Converter, *, base_url: str = "", key_hint: str = ""):
        self.provider = provider
        self.model = model
        self.converter = converter
        self.base_url = base_url
        self.key_hint = key_hint or "check the API key"

    @property
    def name(self) -> str:
        """``provider:model``."""
        return f"{self.provider}:{self.model}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} at {self.base_url}>"

    @abstractmethod
    def user_message(self, text: str) -> dict[str, Any]:
        """A user message in the provider's format."""

    @abstractmethod
    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        system: str | None = None,
    ) -> AsyncIterator[TextDelta | Turn]:
        """Run one turn: ``TextDelta`` items as text arrives, then exactly one ``Turn``, last.

        Args:
            messages: The conversation so far, in the provider's format.
            tools: The request's ``tools`` value (from ``converter.tools``); empty sends none.
            system: The system prompt, if any.

        Raises:
            ProviderError: The provider refused or failed the request (after the SDK's retries).
        """

    @abstractmethod
    async def aclose(self) -> None:
        """Close the SDK client's connections."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ----- errors, shared by the adapters -------------------------------------------------

    def status_error(self, status: int, detail: str) -> ProviderError:
        """The ``ProviderError`` for an HTTP error ``status`` whose provider message is ``detail``."""
        detail = detail.strip().rstrip(".")
        said = f": {detail}" if detail else ""
        where = f"{self.provider} ({self.base_url})" if self.base_url else self.provider
        if status in (401, 403):
            verb = "refused the API key" if status == 401 else "denied access"
            message = f"{where} {verb} (HTTP {status}){said}; {self.key_hint}"
        elif status == 404:
            message = (
                f"{where} has no model {self.model!r} (HTTP 404){said}; check the model name"
                f" (and that the base URL is the API's root)"
            )
        elif status == 429:
            message = f"{where} rate limited the request (HTTP 429){said}; wait a little and try again"
        elif status >= 500:
            message = f"{where} failed (HTTP {status}){said}; the service may be overloaded, try again later"
        else:
            message = f"{where} refused the request (HTTP {status}){said}"
        retryable = status in (408, 409, 429) or status >= 500
        return ProviderError(message, provider=self.provider, status=status, retryable=retryable)

    def connection_error(self, detail: str, *, timeout: bool = False) -> ProviderError:
        """The ``ProviderError`` for a request that got no answer (refused, reset, timed out)."""
        said = f" ({detail})" if detail else ""
        if timeout:
            message = f"{self.provider}: no answer from {self.base_url} in time{said}; try again, or raise the timeout"
        else:
            message = f"{self.provider}: cannot reach {self.base_url}{said}: is the server running?"
        return ProviderError(message, provider=self.provider, retryable=True)


def error_detail(body: object, fallback: str = "") -> str:
    """The provider's own message in an error body (``{"error": {"message": ...}}`` and the like)."""
    data = body
    if isinstance(data, Mapping):
        inner = cast(Mapping[str, Any], data).get("error")
        if isinstance(inner, Mapping):
            data = cast(Mapping[str, Any], inner)
    if isinstance(data, Mapping):
        message = cast(Mapping[str, Any], data).get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(data, str) and data.strip():
        text = data.strip()
        return text if len(text) <= 500 else text[:500] + "…"
    return fallback


def error_cause(error: BaseException) -> str:
    """What lies under a connection error (``[Errno 111] Connection refused`` ...), else its own text."""
    inner = error.__cause__ or error.__context__ or error
    for _ in range(8):  # past wrappers with no text of their own
        deeper = inner.__cause__ or inner.__context__
        if deeper is None or str(inner):
            break
        inner = deeper
    return str(inner) or type(inner).__name__


def missing_sdk(provider: str, module: str, extra: str) -> ProviderError:
    """The ``ProviderError`` for an SDK that is not installed."""
    return ProviderError(
        f"{provider} needs the {module} package: pip install 'mcpdeck[{extra}]'",
        provider=provider,
    )
