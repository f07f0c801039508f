"""Tool call results: the MCP content kept whole, and rendered as text.

``ToolResult`` keeps every content block (text, image, audio, resource links, embedded
resources), the structured content and ``is_error``. ``text()`` renders them for a model
that only reads text, with an optional cap that says how much was cut.

The rendering is written once, over the protocol's JSON form of a result (``result_text``,
``content_text``): ``ToolResult.text()`` uses it, and so does the CLI for a result a running
``mcpdeck serve`` sent as JSON. This module imports the SDK's types for type checking only, so
the CLI can render such a result without loading the SDK or pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import mcp_types as types

__all__ = ["DEFAULT_MAX_CHARS", "ToolResult", "content_text", "render_content", "result_text", "truncate"]

DEFAULT_MAX_CHARS = 100_000
"""About 25k tokens: the default cap on a result's text for a model."""


def _size(data: str) -> str:
    raw = len(data) * 3 // 4 - data[-2:].count("=")  # base64 length -> decoded bytes
    return f"{raw / 1024:.1f} KB" if raw >= 1024 else f"{raw} bytes"


def content_text(block: Mapping[str, Any]) -> str:
    """One content block, in the protocol's JSON form, as text; binary content is described, not dumped."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType')}, {_size(str(block.get('data', '')))}]"
    if kind == "resource_link":
        label = block.get("title") or block.get("name")
        mime = f" {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {label} <{block.get('uri')}>{mime}]"
    if kind == "resource":
        resource = cast(Mapping[str, Any], block.get("resource") or {})
        if "text" in resource:
            return str(resource["text"])
        blob = _size(str(resource.get("blob", "")))
        return f"[binary resource <{resource.get('uri')}> {resource.get('mimeType') or ''}, {blob}]".replace(" ,", ",")
    return f"[{kind or 'unknown'} content]"


def result_text(content: Sequence[Mapping[str, Any]], structured: object = None) -> str:
    """A result's text from its JSON form: each block rendered, the structured content as JSON when no block is text."""
    parts = [content_text(block) for block in content]
    if structured is not None and not any(block.get("type") == "text" for block in content):
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return "\n".join(parts)


def render_content(block: types.ContentBlock) -> str:
    """One content block as text (``content_text`` of its JSON form; a text block is its text)."""
    if block.type == "text":  # most blocks: no JSON form needed
        return block.text
    return content_text(block.model_dump(mode="json", by_alias=True, exclude_none=True))


def truncate(text: str, max_chars: int | None) -> str:
    """Cut ``text`` to ``max_chars`` with a note saying how much was left out."""
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    return f"{text[:max_chars]}\n\n[... {cut:,} of {len(text):,} characters cut; the result was too long to show whole]"


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned.

    Attributes:
        name: The tool's public (namespaced) name.
        server: The server that ran it.
        tool: The tool's original name on that server.
        content: The content blocks, as the server sent them.
        structured_content: The structured result, if the tool returns one.
        is_error: True when the tool ran and reported a failure.
        duration: Seconds the call took.
        approved_by: Who let the call through, when the permission gate was asked ("rule",
            "user-once" ...); None for a call made without the gate.
    """

    name: str
    server: str
    tool: str
    content: list[types.ContentBlock]
    structured_content: dict[str, Any] | None
    is_error: bool
    duration: float = 0.0
    approved_by: str | None = None

    @classmethod
    def from_mcp(
        cls,
        result: types.CallToolResult,
        *,
        name: str,
        server: str,
        tool: str,
        duration: float,
        approved_by: str | None = None,
    ) -> ToolResult:
        """Wrap an SDK ``CallToolResult``."""
        # What the dataclass's ``__init__`` does, in one step: a frozen dataclass sets each
        # field through ``object.__setattr__``. Every field is set here. Kept because it is on
        # every call, and a frozen ``__init__`` is a measurable share of one (bench/RESULTS.md).
        wrapped = object.__new__(cls)
        wrapped.__dict__.update(
            name=name,
            server=server,
            tool=tool,
            content=list(result.content),
            structured_content=result.structured_content,
            is_error=bool(result.is_error),
            duration=duration,
            approved_by=approved_by,
        )
        return wrapped

    @property
    def size(self) -> int:
        """Characters of content: text, plus binary data as its base64 text."""
        total = 0
        for block in self.content:
            if block.type == "text":
                total += len(block.text)
            elif block.type == "image" or block.type == "audio":
                total += len(block.data)
            elif block.type == "resource":
                text: object = getattr(block.resource, "text", None)  # text contents, else a blob
                total += len(text) if isinstance(text, str) else len(getattr(block.resource, "blob", ""))
        return total

    def text(self, max_chars: int | None = None) -> str:
        """The result as plain text: each block rendered, structured content as JSON when there is no text."""
        parts = [render_content(block) for block in self.content]
        if self.structured_content is not None and not any(block.type == "text" for block in self.content):
            parts.append(json.dumps(self.structured_content, indent=2, ensure_ascii=False))
        return truncate("\n".join(parts), max_chars)

    def images(self) -> list[tuple[str, bytes]]:
        """``(mime type, bytes)`` of every image block."""
        import base64

        return [(b.mime_type, base64.b64decode(b.data)) for b in self.content if b.type == "image"]

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape: the MCP content as the protocol writes it."""
        return {
            "name": self.name,
            "server": self.server,
            "tool": self.tool,
            "isError": self.is_error,
            "content": [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in self.content],
            "structuredContent": self.structured_content,
            "duration": round(self.duration, 6),
        }
