"""The four wire formats the scripted servers speak: each API's replies, streamed and whole, and its errors.

Every function takes a scripted step and gives the JSON (or the SSE events) the real API
would send for it. The shapes follow the APIs' references and the official SDKs' types.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "APIS",
    "Call",
    "Fail",
    "Ids",
    "Reply",
    "error_body",
    "split_text",
    "sse",
]

APIS = ("openai", "openai-responses", "anthropic", "gemini")
"""The wire formats, named as ``ChatModel.api`` names them."""


@dataclass(frozen=True)
class Call:
    """A tool call in a scripted reply.

    Attributes:
        name: The tool's name ("" sends a call with no name, which is malformed).
        arguments: The arguments; a string is sent as it is (for malformed JSON), where the
            API sends arguments as JSON text (OpenAI) or streams it (Anthropic).
        id: The call's id (default: one made up, except for Gemini, which sends none).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict[str, Any])
    id: str | None = None

    def json_text(self) -> str:
        """The arguments as JSON text."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """A scripted model turn.

    Attributes:
        text: The text, streamed in ``chunks`` pieces.
        tool_calls: The tool calls, after the text.
        chunks: How many pieces the text is streamed in.
        thinking: Reasoning to send first (an Anthropic thinking block, a Responses
            reasoning item, a Gemini thought part).
        signature: The thinking block's signature (Anthropic) or the ``thoughtSignature``
            of the first function call, else of the text (Gemini), as text.
        usage: ``(input tokens, output tokens)`` to report; None reports none.
        stop: The stop reason to send instead of the natural one.
    """

    text: str = ""
    tool_calls: Sequence[Call] = ()
    chunks: int = 3
    thinking: str | None = None
    signature: str | None = None
    usage: tuple[int, int] | None = (11, 7)
    stop: str | None = None


@dataclass(frozen=True)
class Fail:
    """A scripted HTTP error, in the API's own error format.

    Attributes:
        status: The HTTP status.
        message: The error's message (default: what the API says for that status).
        retry_after: Seconds for a ``retry-after`` header (None: no header).
    """

    status: int = 500
    message: str | None = None
    retry_after: float | None = None


class Ids:
    """Ids for one server, numbered in order so tests can predict them."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def next(self, prefix: str) -> str:
        """``<prefix>_<n>``, n counting from 1 for each prefix."""
        count = self._counts.get(prefix, 0) + 1
        self._counts[prefix] = count
        return f"{prefix}_{count:03d}"


def split_text(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` non-empty pieces (fewer if it is shorter), joined back it is ``text``."""
    if not text:
        return []
    count = max(1, min(chunks, len(text)))
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> str:
    """One server-sent event."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


# ----- errors --------------------------------------------------------------------------------

_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
    ),
    403: ("permission_error", None, "You are not allowed to sample from this model."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again shortly."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
_GEMINI_ERRORS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "models/unknown is not found for API version v1beta."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    ),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def error_body(api: str, status: int, message: str | None, request_id: str) -> dict[str, Any]:
    """The JSON body the API sends with an HTTP error."""
    if api == "anthropic":
        kind, default = _ANTHROPIC_ERRORS.get(status, ("api_error", "Internal server error"))
        return {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": request_id}
    if api == "gemini":
        state, default = _GEMINI_ERRORS.get(status, ("UNKNOWN", "Unknown error."))
        return {"error": {"code": status, "message": message or default, "status": state}}
    kind, code, default = _OPENAI_ERRORS.get(status, ("server_error", None, "The server had an error."))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


# ----- OpenAI Chat Completions ---------------------------------------------------------------


@dataclass
class ChatCompletions:
    """A Chat Completions reply (``POST /v1/chat/completions``)."""

    reply: Reply
    model: str
    ids: Ids
    include_usage: bool = False
    id: str = ""
    calls: list[tuple[str, Call]] = field(default_factory=list[tuple[str, Call]])

    def __post_init__(self) -> None:
        self.id = "chatcmpl-" + self.ids.next("c").split("_")[1]
        self.calls = [(call.id or self.ids.next("call"), call) for call in self.reply.tool_calls]
        self.created = int(time.time())

    @property
    def finish_reason(self) -> str:
        return self.reply.stop or ("tool_calls" if self.calls else "stop")

    def usage(self) -> dict[str, Any] | None:
        if self.reply.usage is None:
            return None
        prompt, completion = self.reply.usage
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> str:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": "fp_scripted",
            "choices": choices,
        }
        if self.include_usage:
            chunk["usage"] = usage
        return sse(chunk)

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> str:
        return self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    def events(self) -> Iterator[str]:
        """The SSE stream, ending ``data: [DONE]``."""
        yield self._delta({"role": "assistant", "content": "", "refusal": None})
        for piece in split_text(self.reply.text, self.reply.chunks):
            yield self._delta({"content": piece})
        for index, (call_id, call) in enumerate(self.calls):
            head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            yield self._delta({"tool_calls": [head]})
            for piece in split_text(call.json_text(), 2):
                yield self._delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield self._delta({}, self.finish_reason)
        usage = self.usage()
        if self.include_usage and usage is not None:
            yield self._chunk([], usage)
        yield sse("[DONE]")

    def body(self) -> dict[str, Any]:
        """The whole ``chat.completion`` object."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.reply.text or None,
            "refusal": None,
            "annotations": [],
        }
        if self.calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.json_text()}}
                for call_id, call in self.calls
            ]
        body: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self.finish_reason}],
            "service_tier": "default",
            "system_fingerprint": "fp_scripted",
        }
        usage = self.usage()
        if usage is not None:
            body["usage"] = usage
        return body


# ----- OpenAI Responses ----------------------------------------------------------------------


@dataclass
class Responses:
    """A Responses API reply (``POST /v1/responses``)."""

    reply: Reply
    request: Mapping[str, Any]
    ids: Ids
    sequence: int = 0

    def __post_init__(self) -> None:
        self.id = self.ids.next("resp")
        self.created = int(time.time())
        self.items: list[dict[str, Any]] = []
        if self.reply.thinking is not None:
            summary = [{"type": "summary_text", "text": self.reply.thinking}]
            self.items.append({"id": self.ids.next("rs"), "type": "reasoning", "summary": summary})
        if self.reply.text:
            self.items.append(
                {
                    "id": self.ids.next("msg"),
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": self.reply.text, "annotations": [], "logprobs": []}],
                }
            )
        for call in self.reply.tool_calls:
            self.items.append(
                {
                    "id": self.ids.next("fc"),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": call.json_text(),
                    "call_id": call.id or self.ids.next("call"),
                    "name": call.name,
                }
            )

    def response(self, status: str) -> dict[str, Any]:
        """The ``response`` object, as it is at ``status``."""
        done = status == "completed"
        usage: dict[str, Any] | None = None
        if done and self.reply.usage is not None:
            prompt, completion = self.reply.usage
            usage = {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            }
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": self.request.get("instructions"),
            "max_output_tokens": self.request.get("max_output_tokens"),
            "model": self.request.get("model"),
            "output": self.items if done else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": self.request.get("store", True),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": self.request.get("tools", []),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": None,
            "metadata": {},
        }

    def _event(self, kind: str, **fields: Any) -> str:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return sse(data, kind)

    def events(self) -> Iterator[str]:
        """The SSE stream, from ``response.created`` to ``response.completed``."""
        yield self._event("response.created", response=self.response("in_progress"))
        yield self._event("response.in_progress", response=self.response("in_progress"))
        for index, item in enumerate(self.items):
            yield from self._item_events(index, item)
        yield self._event("response.completed", response=self.response("completed"))

    def _item_events(self, index: int, item: dict[str, Any]) -> Iterator[str]:
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            yield self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield self._event(
                "response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}
            )
            for piece in split_text(text, self.reply.chunks):
                yield self._event("response.output_text.delta", **where, delta=piece, logprobs=[])
            yield self._event("response.output_text.done", **where, text=text, logprobs=[])
            yield self._event("response.content_part.done", **where, part=item["content"][0])
        elif kind == "function_call":
            yield self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            where = {"item_id": item["id"], "output_index": index}
            for piece in split_text(item["arguments"], 2):
                yield self._event("response.function_call_arguments.delta", **where, delta=piece)
            yield self._event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        else:  # reasoning
            yield self._event("response.output_item.added", output_index=index, item={**item, "summary": []})
        yield self._event("response.output_item.done", output_index=index, item=item)

    def body(self) -> dict[str, Any]:
        """The whole ``response`` object."""
        return self.response("completed")


# ----- Anthropic Messages --------------------------------------------------------------------


@dataclass
class Messages:
    """An Anthropic Messages reply (``POST /v1/messages``)."""

    reply: Reply
    model: str
    ids: Ids

    def __post_init__(self) -> None:
        self.id = self.ids.next("msg")
        self.calls = [(call.id or self.ids.next("toolu"), call) for call in self.reply.tool_calls]

    @property
    def stop_reason(self) -> str:
        return self.reply.stop or ("tool_use" if self.calls else "end_turn")

    def _usage(self, output: int | None = None) -> dict[str, Any]:
        prompt, completion = self.reply.usage or (0, 0)
        return {
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": completion if output is None else output,
            "service_tier": "standard",
        }

    def blocks(self) -> list[dict[str, Any]]:
        """The reply's content blocks."""
        blocks: list[dict[str, Any]] = []
        if self.reply.thinking is not None:
            signature = self.reply.signature or ""
            blocks.append({"type": "thinking", "thinking": self.reply.thinking, "signature": signature})
        if self.reply.text:
            blocks.append({"type": "text", "text": self.reply.text})
        for call_id, call in self.calls:
            arguments: Any = call.arguments
            blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": arguments})
        return blocks

    def events(self) -> Iterator[str]:
        """The SSE stream, from ``message_start`` to ``message_stop``."""
        start: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage(output=1),
        }
        yield sse({"type": "message_start", "message": start}, "message_start")
        yield sse({"type": "ping"}, "ping")
        for index, block in enumerate(self.blocks()):
            yield from self._block_events(index, block)
        delta = {"stop_reason": self.stop_reason, "stop_sequence": None}
        usage = {"output_tokens": self.reply.usage[1] if self.reply.usage else 0}
        yield sse({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")

    def _block_events(self, index: int, block: dict[str, Any]) -> Iterator[str]:
        def delta(data: dict[str, Any]) -> str:
            return sse({"type": "content_block_delta", "index": index, "delta": data}, "content_block_delta")

        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        yield sse({"type": "content_block_start", "index": index, "content_block": opening}, "content_block_start")
        if kind == "text":
            for piece in split_text(block["text"], self.reply.chunks):
                yield delta({"type": "text_delta", "text": piece})
        elif kind == "thinking":
            for piece in split_text(block["thinking"], 2):
                yield delta({"type": "thinking_delta", "thinking": piece})
            if block["signature"]:
                yield delta({"type": "signature_delta", "signature": block["signature"]})
        else:
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            yield delta({"type": "input_json_delta", "partial_json": ""})
            for piece in split_text(raw, 3):
                yield delta({"type": "input_json_delta", "partial_json": piece})
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")

    def body(self) -> dict[str, Any]:
        """The whole ``message`` object."""
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks(),
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(),
        }


# ----- Gemini --------------------------------------------------------------------------------


@dataclass
class Gemini:
    """A Gemini reply (``:streamGenerateContent?alt=sse`` or ``:generateContent``)."""

    reply: Reply
    model: str
    ids: Ids

    def __post_init__(self) -> None:
        self.response_id = self.ids.next("gen")

    def _signature(self) -> str | None:
        if self.reply.signature is None:
            return None
        return base64.b64encode(self.reply.signature.encode()).decode()

    def _call_parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for index, call in enumerate(self.reply.tool_calls):
            inner: dict[str, Any] = {}
            if call.id is not None:
                inner["id"] = call.id
            if call.name:
                inner["name"] = call.name
            inner["args"] = call.arguments
            part: dict[str, Any] = {"functionCall": inner}
            signature = self._signature()
            if index == 0 and signature is not None:
                part["thoughtSignature"] = signature
            parts.append(part)
        return parts

    def _usage(self) -> dict[str, Any] | None:
        if self.reply.usage is None:
            return None
        prompt, completion = self.reply.usage
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "totalTokenCount": prompt + completion,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }

    @property
    def finish_reason(self) -> str:
        return self.reply.stop or "STOP"

    def _chunk(self, parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if last:
            candidate["finishReason"] = self.finish_reason
        candidate["index"] = 0
        chunk: dict[str, Any] = {"candidates": [candidate]}
        usage = self._usage()
        if usage is not None:
            chunk["usageMetadata"] = usage
        chunk["modelVersion"] = self.model
        chunk["responseId"] = self.response_id
        return chunk

    def _parts(self, count: int) -> list[list[dict[str, Any]]]:
        """The parts of each chunk: thought, text in ``count`` pieces, then the function calls together."""
        chunks: list[list[dict[str, Any]]] = []
        if self.reply.thinking is not None:
            chunks.append([{"text": self.reply.thinking, "thought": True}])
        pieces = split_text(self.reply.text, count)
        signature = self._signature()
        for index, piece in enumerate(pieces):
            part: dict[str, Any] = {"text": piece}
            if signature is not None and not self.reply.tool_calls and index == len(pieces) - 1:
                part["thoughtSignature"] = signature  # Gemini signs the last text part when it calls nothing
            chunks.append([part])
        calls = self._call_parts()
        if calls:
            chunks.append(calls)
        return chunks or [[{"text": ""}]]

    def events(self) -> Iterator[str]:
        """The SSE stream: one ``GenerateContentResponse`` per event, the last with ``finishReason``."""
        chunks = self._parts(self.reply.chunks)
        for index, parts in enumerate(chunks):
            yield sse(self._chunk(parts, index == len(chunks) - 1)).replace("\n", "\r\n")

    def body(self) -> dict[str, Any]:
        """The whole ``GenerateContentResponse``."""
        parts = [part for chunk in self._parts(1) for part in chunk]
        return self._chunk(parts, True)
