"""OpenAI's Responses API through the ``openai`` SDK, streamed.

A turn is the response's output items (reasoning, message, function calls): all of them go
back into the next request's ``input``, reasoning items included, as reasoning models need.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from mcpdeck.errors import ProviderError
from mcpdeck.providers._calls import as_data
from mcpdeck.providers._chat_model import TextDelta, Turn, Usage
from mcpdeck.providers._openai_chat import OpenAIModel
from mcpdeck.providers.openai import OpenAIResponsesConverter

if TYPE_CHECKING:
    from openai import AsyncStream
    from openai.types.responses import Response, ResponseStreamEvent

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel(OpenAIModel):
    """A model behind OpenAI's Responses API.

    The system prompt goes in ``instructions``; ``Turn.messages`` are the response's output
    items as input items (reasoning items included, as reasoning models need them back). The
    API stores responses unless told otherwise; with ``params={"store": False}`` also ask for
    ``"include": ["reasoning.encrypted_content"]``, so the reasoning items can go back.
    """

    api = "openai-responses"
    converter_type = OpenAIResponsesConverter

    def _body(self, messages: Sequence[Mapping[str, Any]], system: str | None) -> dict[str, Any]:
        """A Responses body: the messages as ``input``, the system prompt as ``instructions``."""
        body: dict[str, Any] = {**self.params, "model": self.model, "input": list(messages), "stream": True}
        if system:
            body["instructions"] = system
        return body

    async def _turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], system: str | None
    ) -> AsyncGenerator[TextDelta | Turn]:
        """Text deltas, then the ``Turn`` whose messages are the output items (a failed response raises)."""
        create: Any = self._client.responses.create
        text: list[str] = []
        done: dict[int, dict[str, Any]] = {}
        final: Response | None = None
        events: AsyncStream[ResponseStreamEvent] = await create(**self.request(messages, tools, system))
        async with events:
            async for event in events:
                if event.type == "response.output_text.delta":
                    text.append(event.delta)
                    yield TextDelta(event.delta)
                elif event.type == "response.output_item.done":
                    done[event.output_index] = as_data(event.item)
                elif event.type == "response.completed" or event.type == "response.incomplete":
                    final = event.response
                elif event.type == "response.failed":
                    raise self._response_failed(event.response)
                elif event.type == "error":
                    detail = f"{event.message} ({event.code})" if event.code else event.message
                    raise ProviderError(f"{self.provider} failed while answering: {detail}", provider=self.provider)
        if final is not None and final.output:
            items: list[dict[str, Any]] = [as_data(item) for item in final.output]
        else:
            items = [done[index] for index in sorted(done)]
        content = "".join(text) or _output_text(items)
        calls = self.converter.tool_calls(items)
        stop = "tool_calls" if calls else None
        usage: Usage | None = None
        if final is not None:
            if final.incomplete_details is not None and final.incomplete_details.reason:
                stop = final.incomplete_details.reason
            elif stop is None:
                stop = final.status
            if final.usage is not None:
                usage = Usage(final.usage.input_tokens, final.usage.output_tokens)
        yield Turn(text=content, tool_calls=calls, messages=items, stop_reason=stop, usage=usage)

    def _response_failed(self, response: Response) -> ProviderError:
        error = response.error
        detail = f"{error.message} ({error.code})" if error is not None else "no reason given"
        retryable = error is not None and error.code in ("rate_limit_exceeded", "server_error")
        return ProviderError(
            f"{self.provider} failed while answering: {detail}", provider=self.provider, retryable=retryable
        )


def _output_text(items: Sequence[Mapping[str, Any]]) -> str:
    """The text of the output's message items (for a stream that sent no text deltas)."""
    texts: list[str] = []
    for item in items:
        if item.get("type") == "message":
            parts = cast(list[dict[str, Any]], item.get("content") or [])
            texts.extend(p["text"] for p in parts if p.get("type") == "output_text" and isinstance(p.get("text"), str))
    return "".join(texts)
