"""OpenAI's Chat Completions through the ``openai`` SDK (OpenAI, and every OpenAI-compatible server).

The request streams, asking for usage in the last chunk (``stream_options``) but doing
without it; tool-call deltas are gathered by their index, so parallel calls come out whole.
A server that ignores ``stream`` and answers with one JSON completion is read as such.
``OpenAIModel`` is what the Responses model (``_openai_responses``) shares with it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from mcpdeck.providers._adapter import OpenAIAnthropicChatModel, SDKOptions
from mcpdeck.providers._calls import as_data
from mcpdeck.providers._chat_model import TextDelta, Turn, Usage
from mcpdeck.providers.openai import OpenAIChatConverter

if TYPE_CHECKING:
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk

__all__ = ["DEFAULT_OPENAI_URL", "OpenAIChatModel", "OpenAIModel"]

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


class OpenAIModel(OpenAIAnthropicChatModel):
    """What both OpenAI APIs share: the SDK, its client and its errors."""

    default_url = DEFAULT_OPENAI_URL
    sdk = "openai"
    client_class = "AsyncOpenAI"
    error_class = "OpenAIError"


class OpenAIChatModel(OpenAIModel):
    """A model behind the Chat Completions API: OpenAI's, or any OpenAI-compatible server's."""

    api = "openai"
    converter_type = OpenAIChatConverter

    def __init__(self, model: str, *, include_usage: bool = True, **options: Unpack[SDKOptions]):
        """Create the model (no request is made).

        Args:
            model: The model's name at the provider.
            include_usage: Ask for token usage in the last chunk (``stream_options``).
            **options: What every adapter takes (``SDKOptions``: ``api_key``, ``base_url`` ...).

        Raises:
            ProviderError: The openai package is not installed.
        """
        super().__init__(model, **options)
        self.include_usage = include_usage

    def _body(self, messages: Sequence[Mapping[str, Any]], system: str | None) -> dict[str, Any]:
        """A Chat Completions body: the system prompt as the first message, usage asked for."""
        sent: list[Mapping[str, Any]] = [{"role": "system", "content": system}] if system else []
        sent.extend(messages)
        body: dict[str, Any] = {**self.params, "model": self.model, "messages": sent, "stream": True}
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    async def _turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> AsyncGenerator[TextDelta | Turn]:
        """Text deltas, then the ``Turn`` with the assistant message and its tool calls."""
        create: Any = self._client.chat.completions.with_raw_response.create
        text: list[str] = []
        calls = _CallParts()
        finish: str | None = None
        usage: Usage | None = None
        raw: Any = await create(**self.request(messages, tools, system))
        if "json" in raw.headers.get("content-type", ""):  # not streamed after all: one whole completion
            data: Any = json.loads(await raw.http_response.aread())
            async for item in self._whole(data):
                yield item
            return
        response: AsyncStream[ChatCompletionChunk] = raw.parse()
        async with response:
            async for chunk in response:
                if chunk.usage is not None:
                    usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                for choice in chunk.choices or []:
                    if choice.index not in (0, None):
                        continue
                    delta = choice.delta
                    if delta is not None:  # pyright: ignore[reportUnnecessaryComparison]
                        piece = delta.content or delta.refusal
                        if piece:
                            text.append(piece)
                            yield TextDelta(piece)
                        for position, part in enumerate(delta.tool_calls or []):
                            function = part.function
                            calls.add(
                                part.index if part.index is not None else position,  # pyright: ignore[reportUnnecessaryComparison]
                                part.id,
                                function.name if function is not None else None,
                                function.arguments if function is not None else None,
                            )
                    if choice.finish_reason:
                        finish = choice.finish_reason
        content = "".join(text)
        message: dict[str, Any] = {"role": "assistant", "content": content if content or not calls else None}
        if calls:
            message["tool_calls"] = calls.tool_calls()
        yield Turn(
            text=content,
            tool_calls=self.converter.tool_calls(message),
            messages=[message],
            stop_reason=finish,
            usage=usage,
        )

    async def _whole(self, data: Any) -> AsyncIterator[TextDelta | Turn]:
        """The turn of a whole (not streamed) completion, as a stream of one piece."""
        body = _mapping(data)
        choices = cast(list[Any], body.get("choices") or [{}])
        choice = _mapping(choices[0])
        reply = _mapping(choice.get("message"))
        content = str(reply.get("content") or reply.get("refusal") or "")
        if content:
            yield TextDelta(content)
        calls = _CallParts()
        for position, part in enumerate(cast(list[Any], reply.get("tool_calls") or [])):
            call = _mapping(part)
            function = _mapping(call.get("function"))
            calls.add(position, call.get("id"), function.get("name"), function.get("arguments"))
        message: dict[str, Any] = {"role": "assistant", "content": content if content or not calls else None}
        if calls:
            message["tool_calls"] = calls.tool_calls()
        counted = _mapping(body.get("usage"))
        usage = Usage(counted.get("prompt_tokens"), counted.get("completion_tokens")) if counted else None
        stop = choice.get("finish_reason")
        yield Turn(
            text=content,
            tool_calls=self.converter.tool_calls(message),
            messages=[message],
            stop_reason=str(stop) if stop else None,
            usage=usage,
        )


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


class _CallParts:
    """Tool calls gathered from stream deltas, by index (parallel calls interleave)."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}
        self._slot: dict[int, int] = {}  # the delta's index -> where its call is kept

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, index: int, call_id: str | None, name: str | None, arguments: object) -> None:
        slot = self._slot.get(index)
        current = self._calls.get(slot) if slot is not None else None
        if current is None or (call_id and current["id"] and call_id != current["id"]):
            # A new call; a server that numbers every call 0 still gives each its own id.
            slot = len(self._calls)
            self._slot[index] = slot
            current = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            self._calls[slot] = current
        if call_id:
            current["id"] = call_id
        function = cast(dict[str, Any], current["function"])
        if name:
            known: str = function["name"]
            # Some servers repeat the whole name in every delta; OpenAI sends it once.
            function["name"] = name if not known or name.startswith(known) else known + name
        if arguments:
            piece = arguments if isinstance(arguments, str) else json.dumps(as_data(arguments))
            function["arguments"] += piece

    def tool_calls(self) -> list[dict[str, Any]]:
        """The calls as an assistant message's ``tool_calls`` (an id made up where the server gave none)."""
        result: list[dict[str, Any]] = []
        for _, call in sorted(self._calls.items()):
            if not call["id"]:
                call["id"] = f"call_{uuid.uuid4().hex[:24]}"
            result.append(call)
        return result
