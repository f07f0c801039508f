"""What a native tool's function returned, or how its call failed, as a ``ToolResult``."""

from __future__ import annotations

import json
import time
import typing
from collections.abc import Sequence
from typing import Any, cast

import mcp_types as types
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from mcpdeck.results import ToolResult

__all__ = ["NO_OUTPUT", "failure", "problems", "result_of"]

_CONTENT_TYPES = (
    types.TextContent,
    types.ImageContent,
    types.AudioContent,
    types.ResourceLink,
    types.EmbeddedResource,
)
NO_OUTPUT = "(no output)"
"""The text of a tool call whose function returned None."""


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _is_content_list(value: Any) -> typing.TypeGuard[Sequence[types.ContentBlock | str]]:
    """Whether ``value`` is a list of content blocks (and strings), with at least one block."""
    if not isinstance(value, list | tuple):
        return False
    items = cast(Sequence[Any], value)
    return (
        bool(items)
        and all(isinstance(item, (*_CONTENT_TYPES, str)) for item in items)
        and any(isinstance(item, _CONTENT_TYPES) for item in items)
    )


def result_of(value: Any, name: str, duration: float) -> ToolResult:
    """What a function returned, as a ToolResult."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, types.CallToolResult):
        return ToolResult.from_mcp(value, name=name, server="", tool=name, duration=duration)
    structured: dict[str, Any] | None = None
    content: list[types.ContentBlock]
    if value is None:
        content = [types.TextContent(text=NO_OUTPUT)]
    elif isinstance(value, str):
        content = [types.TextContent(text=value)]
    elif isinstance(value, _CONTENT_TYPES):
        content = [value]
    elif _is_content_list(value):
        content = [types.TextContent(text=item) if isinstance(item, str) else item for item in value]
    else:
        try:
            data = to_jsonable_python(value)
        except PydanticSerializationError:
            data = str(value)
        if isinstance(data, dict):
            structured = cast(dict[str, Any], data)
        content = [types.TextContent(text=data if isinstance(data, str) else _json_text(data))]
    return ToolResult(
        name=name,
        server="",
        tool=name,
        content=content,
        structured_content=structured,
        is_error=False,
        duration=duration,
    )


def failure(name: str, text: str, started: float) -> ToolResult:
    return ToolResult(
        name=name,
        server="",
        tool=name,
        content=[types.TextContent(text=text)],
        structured_content=None,
        is_error=True,
        duration=time.perf_counter() - started,
    )


def problems(error: ValidationError) -> list[str]:
    problems: list[str] = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"])
        problems.append(f"{where}: {item['msg']}" if where else item["msg"])
    return problems
