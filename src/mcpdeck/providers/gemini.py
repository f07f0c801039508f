"""Gemini (``generateContent``): function declarations, ``functionCall`` and ``functionResponse`` parts.

Dicts use the REST API's camelCase names (``functionDeclarations``, ``functionResponse``,
``inlineData``); ``google.genai.types`` reads them as they are.

By default parameters are in Gemini's OpenAPI subset (``parameters``; see
``mcpdeck.providers._openapi``), which every Gemini endpoint takes. ``json_schema=True``
sends the JSON Schema itself as ``parametersJsonSchema`` instead (references inlined,
recursion kept), which current Gemini models accept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from mcpdeck.providers._base import Converter, ToolSpec, check_name, prepared
from mcpdeck.providers._calls import ToolCall, as_data, field_of, read_call
from mcpdeck.providers._openapi import gemini_parameters
from mcpdeck.results import DEFAULT_MAX_CHARS, ToolResult

__all__ = ["GeminiConverter"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")


class GeminiConverter(Converter):
    """Gemini's function calling.

    ``tools()`` gives ``[{"functionDeclarations": [...]}]``. A result is a
    ``functionResponse`` part whose ``response`` is ``{"output": text}`` or, for a failure,
    ``{"error": text}``. Images go into the same user turn as ``inlineData`` parts after the
    function responses, which every model reads; with ``multimodal_responses=True`` they go
    inside ``functionResponse.parts`` instead (Gemini 3 models).
    """

    provider = "gemini"
    image_types = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})

    def __init__(
        self,
        *,
        json_schema: bool = False,
        multimodal_responses: bool = False,
        max_chars: int | None = DEFAULT_MAX_CHARS,
        max_description: int | None = None,
    ):
        """Create a converter.

        Args:
            json_schema: Send ``parametersJsonSchema`` (JSON Schema) instead of ``parameters``
                (the OpenAPI subset).
            multimodal_responses: Put images inside ``functionResponse.parts``.
            max_chars: Cap on the text of one tool result (None: no cap).
            max_description: Cap on a tool's description (None: sent whole).
        """
        super().__init__(max_chars=max_chars, max_description=max_description)
        self.json_schema = json_schema
        self.multimodal_responses = multimodal_responses

    def tool(self, spec: ToolSpec) -> dict[str, Any]:
        """A function declaration: ``{"name", "description", "parameters"}`` (no parameters: left out)."""
        declaration: dict[str, Any] = {"name": check_name(spec.name, NAME, "Gemini")}
        description = self.description(spec)
        if description:
            declaration["description"] = description
        if self.json_schema:
            declaration["parametersJsonSchema"] = prepared(spec, keep_cycles=True)
        else:
            parameters = gemini_parameters(prepared(spec, keep_cycles=False))
            if parameters is not None:
                declaration["parameters"] = parameters
        return declaration

    def _wrap(self, definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"functionDeclarations": definitions}]

    def parse_tool_call(self, call: Any) -> ToolCall:
        """A ``functionCall`` (``{id, name, args}``) or a part holding one."""
        data = as_data(call)
        inner = field_of(data, "functionCall", "function_call")
        if inner is not None:
            data = inner
        name, arguments = field_of(data, "name"), field_of(data, "args")
        return read_call(field_of(data, "id"), name, arguments, no_name="a functionCall has no name", raw=data)

    def tool_calls(self, message: Any) -> list[ToolCall]:
        """The ``functionCall`` parts of a reply: a response (first candidate), a candidate, a content or its parts."""
        data = as_data(message)
        candidates = field_of(data, "candidates")
        if isinstance(candidates, list) and candidates:
            data = cast(list[Any], candidates)[0]
        if isinstance(field_of(data, "content"), Mapping):
            data = field_of(data, "content")
        parts = field_of(data, "parts") if isinstance(data, Mapping) else data
        if not isinstance(parts, list):
            return []
        return self._read_all(
            p for p in cast(list[Any], parts) if field_of(as_data(p), "functionCall", "function_call") is not None
        )

    def _inline(self, result: ToolResult) -> list[dict[str, Any]]:
        return [{"inlineData": {"mimeType": mime, "data": data}} for mime, data in self.images(result)]

    def tool_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """``{"functionResponse": {"id", "name", "response": {"output" | "error": text}[, "parts"]}}``."""
        text = self.result_text(result)
        response: dict[str, Any] = {}
        if call.id:
            response["id"] = call.id
        response["name"] = call.name
        response["response"] = {"error": text} if result.is_error else {"output": text}
        if self.multimodal_responses:
            parts = self._inline(result)
            if parts:
                response["parts"] = parts
        return {"functionResponse": response}

    def tool_results(self, results: Sequence[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """One user content: every ``functionResponse`` part, then the images (unless inside the responses)."""
        if not results:
            return []
        parts = [self.tool_result(call, result) for call, result in results]
        if not self.multimodal_responses:
            for _, result in results:
                parts.extend(self._inline(result))
        return [{"role": "user", "parts": parts}]
