"""Claude through the ``anthropic`` SDK: the Messages API, streamed.

The stream's content blocks are put together by index: text from ``text_delta``, tool
inputs from ``input_json_delta`` pieces (parsed when the block stops), thinking from
``thinking_delta`` and ``signature_delta``. The assistant message keeps every block as a
dict, thinking included, since Claude needs its thinking blocks back with the tool results.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from mcpdeck.errors import ProviderError
from mcpdeck.providers._adapter import OpenAIAnthropicChatModel, SDKOptions
from mcpdeck.providers._calls import as_data
from mcpdeck.providers._chat_model import TextDelta, Turn, Usage, error_detail
from mcpdeck.providers.anthropic import AnthropicConverter

if TYPE_CHECKING:
    from anthropic import AsyncStream
    from anthropic.types import RawMessageStreamEvent

__all__ = ["DEFAULT_ANTHROPIC_URL", "AnthropicModel"]

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"

# The status an error event in the middle of a stream stands for (the response itself was a 200).
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicModel(OpenAIAnthropicChatModel):
    """A Claude model behind the Messages API.

    The system prompt goes in the ``system`` parameter; ``max_tokens``, which the API
    requires, is 8192 unless given.
    """

    api = "anthropic"
    default_url = DEFAULT_ANTHROPIC_URL
    converter_type = AnthropicConverter
    sdk = "anthropic"
    client_class = "AsyncAnthropic"
    error_class = "AnthropicError"

    def __init__(self, model: str, *, max_tokens: int = 8192, **options: Unpack[SDKOptions]):
        """Create the model (no request is made).

        Args:
            model: The model's name (``claude-sonnet-4-5`` ...).
            max_tokens: The most tokens one turn may produce.
            **options: What every adapter takes (``SDKOptions``: ``api_key``, ``base_url`` ...).

        Raises:
            ProviderError: The anthropic package is not installed.
        """
        self.max_tokens = max_tokens
        super().__init__(model, **options)

    def _body(self, messages: Sequence[Mapping[str, Any]], system: str | None) -> dict[str, Any]:
        """A Messages body: ``max_tokens`` (which the API requires), the system prompt as ``system``."""
        body: dict[str, Any] = {"max_tokens": self.max_tokens, **self.params}
        body.update(model=self.model, messages=list(messages), stream=True)
        if system:
            body["system"] = system
        return body

    async def _turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> AsyncGenerator[TextDelta | Turn]:
        """Text deltas, then the ``Turn`` with the assistant message and its tool calls."""
        create: Any = self._client.messages.with_raw_response.create
        message = _Message()
        raw: Any = await create(**self.request(messages, tools, system))
        if "json" in raw.headers.get("content-type", ""):  # not streamed after all: one whole message
            data: Any = json.loads(await raw.read())
            for text in message.whole(cast(dict[str, Any], data) if isinstance(data, dict) else {}):
                yield TextDelta(text)
        else:
            events: AsyncStream[RawMessageStreamEvent] = await raw.parse()
            async with events:
                async for event in events:
                    text = message.add(event)
                    if text is not None:
                        yield TextDelta(text)
        content, read = message.content()
        usage_seen = message.input_tokens is not None or message.output_tokens is not None
        yield Turn(
            text="".join(b["text"] for b in content if b.get("type") == "text"),
            tool_calls=self.converter.tool_calls(read),
            messages=[{"role": "assistant", "content": content}],
            stop_reason=message.stop,
            usage=Usage(message.input_tokens, message.output_tokens) if usage_seen else None,
        )

    def _failure(self, error: Exception) -> ProviderError | None:
        failed: Any = error  # one of the SDK's classes, which this module does not import
        if isinstance(error, self._sdk.APIStatusError) and failed.status_code < 400:  # an error event in a streamed 200
            kind = _error_type(failed.body) or "error"
            status = _ERROR_STATUS.get(kind, 500)
            retryable = status == 429 or status >= 500
            advice = "; try again later" if retryable else ""
            detail = error_detail(failed.body, failed.message)
            return ProviderError(
                f"{self.provider} failed while answering ({kind}): {detail}{advice}",
                provider=self.provider,
                status=status,
                retryable=retryable,
            )
        return super()._failure(error)


class _Message:
    """One assistant message put together from a Messages answer: stream events, or one whole message."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.inputs: dict[int, list[str]] = {}  # input_json_delta pieces of tool blocks
        self.stop: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def whole(self, data: Mapping[str, Any]) -> list[str]:
        """Take a whole (not streamed) message; returns its texts."""
        texts: list[str] = []
        for index, block in enumerate(data.get("content") or []):
            self.blocks[index] = dict(block)
            if block.get("type") == "text" and block.get("text"):
                texts.append(str(block["text"]))
        self.stop = data.get("stop_reason")
        counted: dict[str, Any] = data.get("usage") or {}
        self.input_tokens, self.output_tokens = counted.get("input_tokens"), counted.get("output_tokens")
        return texts

    def add(self, event: RawMessageStreamEvent) -> str | None:
        """Take one stream event; returns the text it adds, if it is a text delta."""
        if event.type == "message_start":
            usage = event.message.usage
            cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
            self.input_tokens = usage.input_tokens + cached
            self.output_tokens = usage.output_tokens
        elif event.type == "content_block_start":
            self.blocks[event.index] = as_data(event.content_block)
        elif event.type == "content_block_delta":
            block = self.blocks.setdefault(event.index, {"type": "text", "text": ""})
            delta = event.delta
            if delta.type == "text_delta":
                block["text"] = block.get("text", "") + delta.text
                return delta.text
            if delta.type == "input_json_delta":
                self.inputs.setdefault(event.index, []).append(delta.partial_json)
            elif delta.type == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.signature
            else:  # citations_delta
                block.setdefault("citations", []).append(as_data(delta.citation))
        elif event.type == "message_delta":
            self.stop = event.delta.stop_reason or self.stop
            self.output_tokens = event.usage.output_tokens
        # content_block_stop and message_stop need nothing: the blocks are read at the end.
        return None

    def content(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The message's content blocks, and the ``tool_use`` blocks to read calls from.

        A tool input that is not valid JSON goes into the message as ``{}`` (the API takes
        only objects) and is read as the raw text, so its ``ToolCall`` carries the error.
        """
        content: list[dict[str, Any]] = []
        read: list[dict[str, Any]] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                continue  # the API refuses empty text blocks
            if kind in ("tool_use", "server_tool_use") and index in self.inputs:
                raw = "".join(self.inputs[index])
                try:
                    parsed: Any = json.loads(raw) if raw.strip() else {}
                except json.JSONDecodeError:
                    parsed = None
                block["input"] = cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {}
                if kind == "tool_use":
                    read.append({**block, "input": raw} if not isinstance(parsed, dict) else block)
            elif kind == "tool_use":
                read.append(block)
            content.append(block)
        return content, read


def _error_type(body: object) -> str:
    """The ``error.type`` of an Anthropic error body."""
    if isinstance(body, Mapping):
        inner = cast(Mapping[str, Any], body).get("error")
        if isinstance(inner, Mapping):
            kind = cast(Mapping[str, Any], inner).get("type")
            return kind if isinstance(kind, str) else ""
    return ""
