"""Anthropic Messages: ``tools`` with ``input_schema``, ``tool_use`` blocks, ``tool_result`` blocks.

Schemas get references inlined (recursive ones kept in ``$defs``, which Claude follows) and
an object root: the API refuses anything but ``type: object`` at the top, and ``anyOf``,
``oneOf`` or ``allOf`` there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from mcpdeck.providers._base import Converter, ToolSpec, check_name, prepared
from mcpdeck.providers._calls import ToolCall, as_data, field_of, read_call
from mcpdeck.results import ToolResult

__all__ = ["AnthropicConverter"]

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class AnthropicConverter(Converter):
    """Claude's Messages API.

    A result is a ``tool_result`` block with ``is_error`` and, for images, ``image`` blocks
    beside the text; ``tool_results`` puts one turn's blocks into one user message, as the
    API requires.
    """

    provider = "anthropic"

    def tool(self, spec: ToolSpec) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}``."""
        tool: dict[str, Any] = {"name": check_name(spec.name, NAME, "Anthropic")}
        description = self.description(spec)
        if description:
            tool["description"] = description
        tool["input_schema"] = prepared(spec, keep_cycles=True)
        return tool

    def parse_tool_call(self, call: Any) -> ToolCall:
        """A ``tool_use`` block: ``{type, id, name, input}`` (``input`` as an object or a JSON string)."""
        data = as_data(call)
        name, arguments = field_of(data, "name"), field_of(data, "input")
        return read_call(field_of(data, "id"), name, arguments, no_name="a tool_use block has no name", raw=data)

    def tool_calls(self, message: Any) -> list[ToolCall]:
        """The ``tool_use`` blocks of a reply (a ``Message``, its dict, or its ``content`` list)."""
        data = as_data(message)
        blocks = field_of(data, "content") if isinstance(data, Mapping) else data
        if not isinstance(blocks, list):
            return []
        return self._read_all(b for b in cast(list[Any], blocks) if field_of(as_data(b), "type") == "tool_use")

    def tool_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """``{"type": "tool_result", "tool_use_id", "content"[, "is_error": true]}``."""
        text = self.result_text(result)
        images = self.images(result)
        content: str | list[dict[str, Any]] = text
        if images:
            content = [{"type": "text", "text": text}] if text else []
            content.extend(
                {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
                for mime, data in images
            )
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id or "", "content": content}
        if result.is_error:
            block["is_error"] = True
        return block

    def tool_results(self, results: Sequence[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """One user message holding every ``tool_result`` block of the turn."""
        if not results:
            return []
        return [{"role": "user", "content": [self.tool_result(call, result) for call, result in results]}]
