"""Tool calls read from a model's reply: ``ToolCall``, its arguments, and the error for an unreadable one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types

from mcpdeck.errors import ToolCallError
from mcpdeck.results import ToolResult

__all__ = ["ToolCall", "ToolCallError", "as_data", "error_result", "field_of", "parse_arguments", "read_call"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made.

    Attributes:
        id: The provider's id for the call, which its result must carry back (None when the
            provider gave none, as older Gemini models do).
        name: The tool's name as the model wrote it (for MCP tools, the catalog name).
        arguments: The arguments, always a dict.
        error: Why the call could not be read (malformed JSON, say); then ``arguments`` is
            empty and the call should be answered with an error result, not run.
    """

    id: str | None
    name: str
    arguments: dict[str, Any]
    error: str | None = None


def parse_arguments(raw: Any, *, name: str = "", call_id: str | None = None) -> dict[str, Any]:
    """A tool call's arguments as a dict, from a JSON string (OpenAI) or an object (Anthropic, Gemini).

    An empty string or None means no arguments. A string that decodes to another JSON string
    (double-encoded, as some OpenAI-compatible servers send) is decoded again.

    Raises:
        ToolCallError: The string is not valid JSON, or the value is not a JSON object.
    """
    value = raw
    for _ in range(2):
        if not isinstance(value, str):
            break
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            shown = value if len(value) <= 200 else value[:200] + "…"
            raise ToolCallError(
                f"the arguments of {name or 'a tool call'} are not valid JSON ({error.msg} at line {error.lineno} "
                f"column {error.colno}): {shown!r}",
                name=name,
                call_id=call_id,
                raw=raw,
            ) from error
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ToolCallError(
            f"the arguments of {name or 'a tool call'} must be a JSON object, not {type(value).__name__}",
            name=name,
            call_id=call_id,
            raw=raw,
        )
    return dict(cast(Mapping[str, Any], value))


def read_call(call_id: Any, name: Any, arguments: Any, *, no_name: str, raw: Any) -> ToolCall:
    """A ``ToolCall`` from the id, name and arguments of a provider's call (the arguments read by ``parse_arguments``).

    Raises:
        ToolCallError: The name is missing (the error says ``no_name``), or the arguments cannot be read.
    """
    if not isinstance(name, str) or not name:
        raise ToolCallError(no_name, call_id=call_id, raw=raw)
    return ToolCall(id=call_id, name=name, arguments=parse_arguments(arguments, name=name, call_id=call_id))


def error_result(call: ToolCall, message: str) -> ToolResult:
    """A failed result for a call that was not run (unreadable, denied, unknown tool), to send back to the model."""
    content: list[types.ContentBlock] = [types.TextContent(text=message)]
    return ToolResult(
        name=call.name, server="", tool=call.name, content=content, structured_content=None, is_error=True
    )


def as_data(value: Any) -> Any:
    """An SDK object (pydantic model) as plain JSON data; dicts and lists pass through."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True)
    return value


def field_of(data: Any, *names: str) -> Any:
    """The first of ``names`` that ``data`` (a mapping) has, else None."""
    if isinstance(data, Mapping):
        mapping = cast(Mapping[str, Any], data)
        for name in names:
            if name in mapping:
                return mapping[name]
    return None
