"""Gemini through the ``google-genai`` SDK: ``generateContent``, streamed.

Messages are the REST API's camelCase dicts (``{"role": "model", "parts": [...]}``), which
the SDK reads as they are. The model's content for one turn is the parts of every chunk,
in order, with each ``thoughtSignature`` on the part it came with (Gemini needs them back,
unchanged and in place); text pieces without a signature are joined into one part.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from mcpdeck.errors import ProviderError
from mcpdeck.providers._adapter import SDKChatModel, SDKOptions
from mcpdeck.providers._calls import as_data
from mcpdeck.providers._chat_model import TextDelta, Turn, Usage, error_cause, missing_sdk
from mcpdeck.providers.gemini import GeminiConverter

if TYPE_CHECKING:
    from google.genai import types as genai_types

__all__ = ["DEFAULT_GEMINI_URL", "GeminiModel"]

DEFAULT_GEMINI_URL = "https://generativelanguage.googleapis.com"

_TRANSPORT_ERRORS = {"TransportError", "NetworkError", "ConnectError", "ReadError", "WriteError", "RemoteProtocolError"}
_TIMEOUT_ERRORS = {"TimeoutException", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout"}


class GeminiModel(SDKChatModel):
    """A Gemini model behind the Gemini API.

    The system prompt goes in ``system_instruction``; automatic function calling is off,
    since the caller runs the tools. Unlike the other SDKs, google-genai retries only when
    asked: ``max_retries`` sets its retry options (429, 408 and 5xx, exponential backoff
    from ``retry_delay`` seconds).
    """

    api = "gemini"
    default_url = DEFAULT_GEMINI_URL
    converter_type = GeminiConverter

    def __init__(
        self, model: str, *, retry_delay: float = 1.0, api_version: str | None = None, **options: Unpack[SDKOptions]
    ):
        """Create the model (no request is made).

        Args:
            model: The model's name (``gemini-2.5-flash`` ...).
            retry_delay: Seconds before the first retry (doubling after, plus up to as much again at random).
            api_version: The API version in the URL (default: the SDK's, ``v1``; ``v1beta`` has
                the newest features).
            **options: What every adapter takes (``SDKOptions``; ``params`` are more
                ``GenerateContentConfig`` fields, ``temperature``, ``thinking_config`` ...).

        Raises:
            ProviderError: The google-genai package is not installed.
        """
        self._retry_delay = retry_delay
        self._api_version = api_version
        super().__init__(model, **options)

    def _client_for(
        self, api_key: str, base_url: str, *, headers: dict[str, str], max_retries: int, timeout: float | None
    ) -> Any:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError as error:
            raise missing_sdk(self.provider, "google-genai", "gemini") from error
        self._types = types
        self._errors = errors
        delay = self._retry_delay
        options = types.HttpOptions(
            base_url=base_url,
            api_version=self._api_version,
            headers=headers,
            retry_options=types.HttpRetryOptions(attempts=max_retries + 1, initial_delay=delay, jitter=delay),
            timeout=round(timeout * 1000) if timeout is not None else None,
        )
        return genai.Client(api_key=api_key, vertexai=False, http_options=options)

    def user_message(self, text: str) -> dict[str, Any]:
        """``{"role": "user", "parts": [{"text": text}]}``."""
        return {"role": "user", "parts": [{"text": text}]}

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._client.aio.aclose()
        self._client.close()

    def config(self, tools: Sequence[Mapping[str, Any]], system: str | None) -> genai_types.GenerateContentConfig:
        """The request's config: the extra parameters, the system prompt, the tools."""
        types = self._types
        config = types.GenerateContentConfig(**self.params)
        config.automatic_function_calling = types.AutomaticFunctionCallingConfig(disable=True)
        if system:
            config.system_instruction = system
        if tools:
            config.tools = [types.Tool.model_validate(tool) for tool in tools]
        return config

    async def _turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> AsyncGenerator[TextDelta | Turn]:
        """Text deltas, then the ``Turn`` with the model's content and its function calls."""
        types = self._types
        parts: list[dict[str, Any]] = []
        text: list[str] = []
        stop: str | None = None
        usage: Usage | None = None
        try:
            contents = [types.Content.model_validate(message) for message in messages]
        except ValueError as error:  # pydantic's ValidationError
            raise ProviderError(
                f"{self.provider}: a message is not in Gemini's format ({error}); "
                "messages are dicts like {'role': 'user', 'parts': [{'text': ...}]}",
                provider=self.provider,
            ) from error
        models: Any = self._client.aio.models  # the method's type names PIL's Image, which may be absent
        chunks: AsyncIterator[genai_types.GenerateContentResponse] = await models.generate_content_stream(
            model=self.model, contents=contents, config=self.config(tools, system)
        )
        async for chunk in chunks:
            if chunk.usage_metadata is not None:
                meta = chunk.usage_metadata
                output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
                usage = Usage(meta.prompt_token_count, output if output else None)
            if not chunk.candidates:
                feedback = chunk.prompt_feedback
                if feedback is not None and feedback.block_reason is not None:
                    stop = f"blocked: {_name(feedback.block_reason)}"
                continue
            candidate = chunk.candidates[0]
            if candidate.finish_reason is not None:
                stop = _name(candidate.finish_reason)
            content = candidate.content
            for part in (content.parts if content is not None else None) or []:
                data: dict[str, Any] = as_data(part)
                if part.text and not part.thought:
                    text.append(part.text)
                    yield TextDelta(part.text)
                _add_part(parts, data)
        message: dict[str, Any] = {"role": "model", "parts": parts}
        yield Turn(
            text="".join(text),
            tool_calls=self.converter.tool_calls(parts),
            messages=[message],
            stop_reason=stop,
            usage=usage,
        )

    def _failure(self, error: Exception) -> ProviderError | None:
        if isinstance(error, self._errors.APIError):
            return self._api_failure(error)
        if isinstance(error, ValueError):  # a reply the SDK's types refuse (pydantic's ValidationError)
            return ProviderError(f"{self.provider} sent a reply that cannot be read: {error}", provider=self.provider)
        return self._transport_failure(error)

    def _api_failure(self, error: Any) -> ProviderError:
        code = error.code if isinstance(error.code, int) else 500
        detail = error.message if isinstance(error.message, str) and error.message else str(error)
        status = error.status if isinstance(error.status, str) else ""
        if code == 400 and "api key" in detail.lower():  # Gemini answers a bad key with 400 INVALID_ARGUMENT
            return ProviderError(
                f"{self.provider} ({self.base_url}) refused the API key (HTTP 400): {detail}; {self.key_hint}",
                provider=self.provider,
                status=400,
            )
        return self.status_error(code, f"{detail} ({status})" if status and status not in detail else detail)

    def _transport_failure(self, error: Exception) -> ProviderError | None:
        """The ``ProviderError`` for an HTTP client's network error (httpx, httpx2 or aiohttp), else None."""
        names = {
            kind.__name__
            for kind in type(error).__mro__
            if kind.__module__.split(".")[0] in ("httpx", "httpx2", "aiohttp", "httpcore")
        }
        if names & _TIMEOUT_ERRORS:
            return self.connection_error(error_cause(error), timeout=True)
        if names & _TRANSPORT_ERRORS or any(name.startswith(("ClientConnector", "ClientOS")) for name in names):
            return self.connection_error(error_cause(error))
        return None


def _name(value: object) -> str:
    """An enum's value (``STOP``), or the text of anything else."""
    inner = getattr(value, "value", value)
    return inner if isinstance(inner, str) else str(inner)


def _add_part(parts: list[dict[str, Any]], part: dict[str, Any]) -> None:
    """Add a streamed part, joining a text piece to the text before it when neither has a signature."""
    if set(part) <= {"text", "thought"}:
        if not part.get("text"):
            return
        last = parts[-1] if parts else None
        if last is not None and set(last) <= {"text", "thought"} and last.get("thought") == part.get("thought"):
            last["text"] += part["text"]
            return
    parts.append(part)
