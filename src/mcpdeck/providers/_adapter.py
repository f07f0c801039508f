"""What the chat adapters on the official SDKs share; each adapter keeps only its wire format.

``SDKChatModel`` takes the options every adapter takes (``SDKOptions``: the key, the URL,
headers, retries, timeout, extra request parameters, the converter), makes the SDK's client
through the adapter's ``_client_for``, closes it, and runs ``stream`` around the adapter's
``_turn``: whatever the SDK raises on the way (also at the end of the stream) goes through
the adapter's ``_failure`` and comes out as a ``ProviderError``. The ``openai`` and
``anthropic`` SDKs are made by the same generator (Stainless), so their clients take the
same options and raise the same error tree: ``OpenAIAnthropicChatModel`` makes the client, maps
the errors and builds the request for both.
"""

from __future__ import annotations

import importlib
import inspect
from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, ClassVar, Required, TypedDict, Unpack

from mcpdeck.errors import ProviderError
from mcpdeck.providers._base import Converter
from mcpdeck.providers._chat_model import ChatModel, TextDelta, Turn, error_cause, error_detail, missing_sdk

__all__ = ["OpenAIAnthropicChatModel", "SDKChatModel", "SDKOptions"]


class SDKOptions(TypedDict, total=False):
    """The keyword arguments every adapter takes (``chat_model`` fills them in); only ``api_key`` is required.

    Attributes:
        api_key: The API key (any non-empty text for servers that take none).
        provider: The provider's name, for messages (default: the adapter's ``api``).
        base_url: The API's root (default: the provider's own): with ``/v1`` for OpenAI, without
            it for Anthropic, without the version for Gemini.
        headers: Extra HTTP headers for every request.
        max_retries: How often rate limits, overload and lost connections are retried (default 2).
        timeout: Seconds for one request (default: the SDK's; 10 minutes for OpenAI and Anthropic).
        params: More request parameters, sent as they are (``temperature``, ``reasoning`` ...).
        converter: The tools converter (default: a plain one of the adapter's format).
        key_hint: What to do about a refused key, for the error message.
    """

    api_key: Required[str]
    provider: str
    base_url: str
    headers: Mapping[str, str] | None
    max_retries: int
    timeout: float | None
    params: Mapping[str, Any] | None
    converter: Converter | None
    key_hint: str


class SDKChatModel(ChatModel):
    """A ``ChatModel`` on a provider's SDK: the client, ``aclose``, and errors mapped once for every turn."""

    default_url: ClassVar[str]
    """Where the provider's API is, unless ``base_url`` says otherwise."""
    converter_type: ClassVar[type[Converter]]
    """The converter of the adapter's wire format, made when none is given."""

    def __init__(self, model: str, **options: Unpack[SDKOptions]):
        """Create the model and its SDK client (no request is made).

        Raises:
            TypeError: An option that is none of ``SDKOptions``, or no ``api_key``.
            ProviderError: The provider's SDK is not installed.
        """
        _check(type(self), options)
        base_url = options.get("base_url") or self.default_url
        converter = options.get("converter") or self.converter_type()
        provider = options.get("provider") or self.api
        super().__init__(provider, model, converter, base_url=base_url, key_hint=options.get("key_hint", ""))
        self.params: dict[str, Any] = dict(options.get("params") or {})
        self._client = self._client_for(
            options["api_key"],
            base_url,
            headers=dict(options.get("headers") or {}),
            max_retries=options.get("max_retries", 2),
            timeout=options.get("timeout"),
        )

    @abstractmethod
    def _client_for(
        self, api_key: str, base_url: str, *, headers: dict[str, str], max_retries: int, timeout: float | None
    ) -> Any:
        """The SDK's client (``timeout`` None keeps the SDK's own).

        Raises:
            ProviderError: The SDK is not installed (``missing_sdk``).
        """

    def user_message(self, text: str) -> dict[str, Any]:
        """``{"role": "user", "content": text}``."""
        return {"role": "user", "content": text}

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._client.close()

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        system: str | None = None,
    ) -> AsyncGenerator[TextDelta | Turn]:
        """Run one turn: ``TextDelta`` items as text arrives, then exactly one ``Turn``, last.

        Raises:
            ProviderError: The provider refused or failed the request (after the SDK's retries).
        """
        try:
            async with aclosing(self._turn(messages, tools, system)) as items:
                async for item in items:
                    yield item
        except ProviderError:
            raise
        except Exception as error:
            failure = self._failure(error)
            if failure is None:
                raise
            raise failure from error

    @abstractmethod
    def _turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> AsyncGenerator[TextDelta | Turn]:
        """The turn in the provider's wire format; SDK errors are left to ``_failure``."""

    @abstractmethod
    def _failure(self, error: Exception) -> ProviderError | None:
        """The ``ProviderError`` an SDK error stands for; None for an error that is not the SDK's."""


def _check(adapter: type[SDKChatModel], options: Mapping[str, object]) -> None:
    """Refuse options no adapter takes, and a missing ``api_key``, as a wrong keyword argument is refused."""
    unknown = sorted(options.keys() - SDKOptions.__annotations__.keys())
    if unknown or "api_key" not in options:
        own = [p.name for p in inspect.signature(adapter.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
        takes = ", ".join([*SDKOptions.__annotations__, *own])
        wrong = f"unknown options {', '.join(unknown)}" if unknown else "no api_key"
        raise TypeError(f"{adapter.__name__}: {wrong}; it takes {takes}")


class OpenAIAnthropicChatModel(SDKChatModel):
    """An adapter on an SDK made by Stainless (``openai``, ``anthropic``): the same client options, the
    same error tree, and a streamed request whose body is the adapter's own (``_body``) plus the tools."""

    sdk: ClassVar[str]
    """The SDK's module, which is also the extra that installs it: ``openai`` or ``anthropic``."""
    client_class: ClassVar[str]
    """Its async client: ``AsyncOpenAI`` or ``AsyncAnthropic``."""
    error_class: ClassVar[str]
    """The root of its errors: ``OpenAIError`` or ``AnthropicError``."""

    def _client_for(
        self, api_key: str, base_url: str, *, headers: dict[str, str], max_retries: int, timeout: float | None
    ) -> Any:
        try:
            self._sdk: Any = importlib.import_module(self.sdk)  # only now: importing mcpdeck loads no SDK
        except ImportError as error:
            raise missing_sdk(self.provider, self.sdk, self.sdk) from error
        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        factory = getattr(self._sdk, self.client_class)
        return factory(api_key=api_key, base_url=base_url, max_retries=max_retries, default_headers=headers, **options)

    def request(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> dict[str, Any]:
        """The body of one streamed request: the adapter's own, with the tools if there are any."""
        body = self._body(messages, system)
        if tools:
            body["tools"] = list(tools)
        return body

    @abstractmethod
    def _body(self, messages: Sequence[Mapping[str, Any]], system: str | None) -> dict[str, Any]:
        """The request body in the adapter's wire format, without the tools."""

    def _failure(self, error: Exception) -> ProviderError | None:
        """The ``ProviderError`` for an error of the SDK.

        A timeout or a refused connection says so; an HTTP error goes through ``status_error``;
        an error event in the middle of a stream says the provider failed while answering.
        """
        sdk = self._sdk
        if not isinstance(error, getattr(sdk, self.error_class)):
            return None
        failed: Any = error  # one of the SDK's classes, which this module does not import
        if isinstance(error, sdk.APITimeoutError):
            return self.connection_error(error_cause(error), timeout=True)
        if isinstance(error, sdk.APIConnectionError):
            return self.connection_error(error_cause(error))
        if isinstance(error, sdk.APIStatusError):
            return self.status_error(failed.status_code, error_detail(failed.body, failed.message))
        if isinstance(error, sdk.APIError):
            detail = error_detail(failed.body, failed.message)
            return ProviderError(f"{self.provider} failed while answering: {detail}", provider=self.provider)
        return ProviderError(f"{self.provider}: {error}", provider=self.provider)
