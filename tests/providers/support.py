"""Helpers for the provider tests: the saved real schemas, sample arguments, results to convert."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from jsonschema.validators import Draft202012Validator

from mcpdeck.providers import ToolDefinition
from mcpdeck.results import ToolResult
from tests.providers.awkward import awkward_specs

SNAPSHOT = Path(__file__).parent / "data" / "real_schemas.json"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def load_snapshot() -> list[ToolDefinition]:
    """The saved schemas of the reference servers' tools, as tool specs."""
    tools: list[dict[str, Any]] = json.loads(SNAPSHOT.read_text())
    return [ToolDefinition(t["name"], t["description"], t["inputSchema"]) for t in tools]


def every_spec() -> list[ToolDefinition]:
    """The saved real schemas and the awkward ones."""
    return [*load_snapshot(), *awkward_specs()]


def sample(schema: Mapping[str, Any]) -> Any:
    """A value that fits a simple schema (enough for the reference servers' tools)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties: Mapping[str, Any] = schema.get("properties", {})
        return {name: sample(properties[name]) for name in schema.get("required", [])}
    if kind == "array":
        return [sample(schema.get("items", {}))] * max(schema.get("minItems", 1), 1)
    if kind in ("number", "integer"):
        return schema.get("minimum", 1)
    return True if kind == "boolean" else "text"


def result(*content: types.ContentBlock, error: bool = False, name: str = "mcp__s__t") -> ToolResult:
    """A tool result with these blocks."""
    raw = types.CallToolResult(content=list(content), is_error=error)
    return ToolResult.from_mcp(raw, name=name, server="s", tool="t", duration=0.0)


def image(mime: str = "image/png") -> types.ImageContent:
    """A one-pixel image block."""
    return types.ImageContent(data=PNG, mime_type=mime)


def text(value: str) -> types.TextContent:
    """A text block."""
    return types.TextContent(text=value)


def png_bytes() -> bytes:
    """The one-pixel PNG's bytes."""
    return base64.b64decode(PNG)


def admits(schema: Mapping[str, Any], instance: Any) -> None:
    """Fail unless ``schema`` (a valid JSON Schema) accepts ``instance``."""
    Draft202012Validator.check_schema(schema)
    validator: Any = Draft202012Validator(schema)
    validator.validate(instance)
