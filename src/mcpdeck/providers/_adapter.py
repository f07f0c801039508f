"""What the chat adapters on the official SDKs share; each adapter keeps only its wire format.

``SDKChatModel`` holds the SDK's client and the extra request parameters, closes the
client, and runs ``stream`` around the adapter's ``_turn``: whatever the SDK raises on the
way (also at the end of the stream) goes through the adapter's ``_failure`` and comes out
as a ``ProviderError``. The ``openai`` and ``anthropic`` SDKs are made by the same
generator (Stainless), so their clients take the same options and raise the same error
tree: ``stainless_client`` and ``stainless_failure`` serve both.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from mcpdeck.errors import ProviderError
from mcpdeck.providers._base import Converter
from mcpdeck.providers._chat import ChatModel, TextDelta, Turn, error_cause, error_detail

__all__ = ["SDKChatModel", "stainless_client", "stainless_failure"]


class SDKChatModel(ChatModel):
    """A ``ChatModel`` on a provider's SDK: the client, ``aclose``, and errors mapped once for every turn."""

    def __init__(
        self,
        provider: str,
        model: str,
        converter: Converter,
        *,
        client: Any,
        base_url: str,
        key_hint: str,
        params: Mapping[str, Any] | None,
    ):
        super().__init__(provider, model, converter, base_url=base_url, key_hint=key_hint)
        self._client = client
        self.params: dict[str, Any] = dict(params or {})

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


def stainless_client(
    factory: Callable[..., Any],
    *,
    api_key: str,
    base_url: str,
    headers: Mapping[str, str] | None,
    max_retries: int,
    timeout: float | None,
) -> Any:
    """An ``AsyncOpenAI`` or ``AsyncAnthropic`` client (``timeout`` None keeps the SDK's own)."""
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    return factory(
        api_key=api_key, base_url=base_url, max_retries=max_retries, default_headers=dict(headers or {}), **options
    )


def stainless_failure(model: ChatModel, sdk: Any, base: type[Exception], error: Exception) -> ProviderError | None:
    """The ``ProviderError`` for an error of the ``openai`` or ``anthropic`` SDK (``base``: its root class).

    A timeout or a refused connection says so; an HTTP error goes through ``status_error``;
    an error event in the middle of a stream says the provider failed while answering.
    """
    if not isinstance(error, base):
        return None
    failed: Any = error  # one of the SDK's classes, which this module does not import
    if isinstance(error, sdk.APITimeoutError):
        return model.connection_error(error_cause(error), timeout=True)
    if isinstance(error, sdk.APIConnectionError):
        return model.connection_error(error_cause(error))
    if isinstance(error, sdk.APIStatusError):
        return model.status_error(failed.status_code, error_detail(failed.body, failed.message))
    if isinstance(error, sdk.APIError):
        detail = error_detail(failed.body, failed.message)
        return ProviderError(f"{model.provider} failed while answering: {detail}", provider=model.provider)
    return ProviderError(f"{model.provider}: {error}", provider=model.provider)
