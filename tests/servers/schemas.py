"""A low-level server whose tools have the input schemas real servers send and hosts trip over.

``shot`` marks ``scale`` both required and defaulted (as playwright's screenshot tool does),
``loop`` has a ``$ref`` chain that loops back on itself. Every tool answers with the
arguments it received, as JSON, so a test sees exactly what was sent.

``python -m tests.servers.schemas`` runs it over stdio; ``build_server()`` gives one to run
in-process.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

__all__ = ["TOOLS", "build_server"]

TOOLS = [
    types.Tool(
        name="shot",
        description="Take a picture (scale is required and has a default).",
        input_schema={
            "type": "object",
            "properties": {
                "scale": {"type": "string", "enum": ["css", "device"], "default": "css"},
                "name": {"type": "string"},
            },
            "required": ["scale", "name"],
        },
    ),
    types.Tool(
        name="loop",
        description="A schema whose $ref chain loops back on itself.",
        input_schema={
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
    ),
]


def build_server() -> Server[Any]:
    """A new schemas server."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        received = json.dumps(params.arguments or {}, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} got {received}")])

    return Server("schemas", version="0.1", on_list_tools=list_tools, on_call_tool=call_tool)


async def _main() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main)
