"""OpenAI: Chat Completions (also every OpenAI-compatible server) and the Responses API.

Schemas get references inlined (recursive ones kept in ``$defs``) and an object root. With
``strict=True`` each tool that strict mode can express is sent strict (see
``mcpdeck.providers._strict``); the others are sent non-strict, and the ``null`` values the
model sends for optional properties of strict tools are removed when its calls are read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from mcpdeck.providers._base import Converter, ToolSpec, check_name, data_url, prepared
from mcpdeck.providers._calls import ToolCall, as_data, field_of, read_call
from mcpdeck.providers._schema import JsonSchema
from mcpdeck.providers._strict import make_strict, strip_nulls
from mcpdeck.results import DEFAULT_MAX_CHARS, ToolResult

__all__ = ["OpenAIChatConverter", "OpenAIResponsesConverter"]

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class _OpenAIBase(Converter):
    def __init__(
        self, *, strict: bool = False, max_chars: int | None = DEFAULT_MAX_CHARS, max_description: int | None = None
    ):
        """Create a converter.

        Args:
            strict: Send tools in strict mode where their schema allows it.
            max_chars: Cap on the text of one tool result (None: no cap).
            max_description: Cap on a tool's description (None: sent whole).
        """
        super().__init__(max_chars=max_chars, max_description=max_description)
        self.strict = strict
        self._sources: dict[str, JsonSchema] = {}

    def parameters(self, spec: ToolSpec) -> tuple[JsonSchema, bool]:
        """The tool's ``parameters`` schema and whether it is strict."""
        schema = prepared(spec, keep_cycles=True)
        if self.strict:
            strict = make_strict(schema)
            if strict is not None:
                self._sources[spec.name] = schema
                return strict, True
        self._sources.pop(spec.name, None)
        return schema, False

    def _call(self, call_id: str | None, name: Any, raw: Any) -> ToolCall:
        call = read_call(call_id, name, raw, no_name="a tool call has no function name", raw=raw)
        source = self._sources.get(call.name)
        if source is None:
            return call
        return ToolCall(id=call.id, name=call.name, arguments=strip_nulls(call.arguments, source))


class OpenAIChatConverter(_OpenAIBase):
    """Chat Completions: ``tools`` of ``type: function``, ``tool_calls`` and ``role: tool`` messages.

    Tool messages carry text only, so images a tool returns go into one user message after
    the tool messages of the turn (``tool_results`` builds it; ``tool_result`` alone gives
    the text, where each image is only named, as ``[image: image/png, 3.9 KB]``).
    """

    provider = "openai"

    def tool(self, spec: ToolSpec) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters[, strict]}}``."""
        parameters, strict = self.parameters(spec)
        function: dict[str, Any] = {"name": check_name(spec.name, NAME, "OpenAI")}
        description = self.description(spec)
        if description:
            function["description"] = description
        function["parameters"] = parameters
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def parse_tool_call(self, call: Any) -> ToolCall:
        """An entry of an assistant message's ``tool_calls``: ``{id, type, function: {name, arguments}}``."""
        data = as_data(call)
        function = field_of(data, "function")
        call_id = field_of(data, "id")
        return self._call(call_id, field_of(function, "name"), field_of(function, "arguments"))

    def tool_calls(self, message: Any) -> list[ToolCall]:
        """The calls in an assistant message (a ``ChatCompletionMessage``, its dict, or a choice)."""
        data = as_data(message)
        if isinstance(field_of(data, "message"), Mapping):
            data = field_of(data, "message")
        return self._read_all(field_of(data, "tool_calls") or [])

    def tool_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """``{"role": "tool", "tool_call_id", "content"}``; a failure starts with "Error: "."""
        return {"role": "tool", "tool_call_id": call.id or "", "content": self.result_text(result, error_prefix=True)}

    def tool_results(self, results: Sequence[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """One tool message per call, then one user message with the turn's images, if any."""
        messages = [self.tool_result(call, result) for call, result in results]
        parts: list[dict[str, Any]] = []
        for call, result in results:
            images = self.images(result)
            if images:
                parts.append({"type": "text", "text": f"Image(s) returned by {call.name} (call {call.id}):"})
                parts.extend({"type": "image_url", "image_url": {"url": data_url(m, d)}} for m, d in images)
        if parts:
            messages.append({"role": "user", "content": parts})
        return messages


class OpenAIResponsesConverter(_OpenAIBase):
    """The Responses API: flat ``function`` tools, ``function_call`` items, ``function_call_output`` items.

    ``strict`` is always sent, because the API makes tools strict when it is left out.
    Outputs with images are a list of ``input_text`` and ``input_image`` parts.
    """

    provider = "openai-responses"

    def tool(self, spec: ToolSpec) -> dict[str, Any]:
        """``{"type": "function", "name", "description", "parameters", "strict"}``."""
        parameters, strict = self.parameters(spec)
        tool: dict[str, Any] = {"type": "function", "name": check_name(spec.name, NAME, "OpenAI")}
        description = self.description(spec)
        if description:
            tool["description"] = description
        tool["parameters"] = parameters
        tool["strict"] = strict
        return tool

    def parse_tool_call(self, call: Any) -> ToolCall:
        """A ``function_call`` output item: ``{type, call_id, name, arguments}``."""
        data = as_data(call)
        return self._call(field_of(data, "call_id", "id"), field_of(data, "name"), field_of(data, "arguments"))

    def tool_calls(self, message: Any) -> list[ToolCall]:
        """The ``function_call`` items of a response (the ``Response``, its dict, or its ``output`` list)."""
        data = as_data(message)
        items = field_of(data, "output") if isinstance(data, Mapping) else data
        calls = [item for item in cast(list[Any], items or []) if field_of(as_data(item), "type") == "function_call"]
        return self._read_all(calls)

    def tool_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """``{"type": "function_call_output", "call_id", "output"}``; a failure starts with "Error: "."""
        text = self.result_text(result, error_prefix=True)
        images = self.images(result)
        output: str | list[dict[str, Any]] = text
        if images:
            output = [{"type": "input_text", "text": text}]
            output.extend({"type": "input_image", "image_url": data_url(m, d), "detail": "auto"} for m, d in images)
        return {"type": "function_call_output", "call_id": call.id or "", "output": output}

    def tool_results(self, results: Sequence[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """One ``function_call_output`` input item per call."""
        return [self.tool_result(call, result) for call, result in results]
