"""A low-level server that lists its tools over several pages, and can speak only the old handshake.

``python -m tests.servers.paged`` serves both protocol eras (the client's first request
decides); ``python -m tests.servers.paged --legacy`` serves only the ``initialize``
handshake era, where tool-list changes travel as ``notifications/tools/list_changed``.
Its ``grow`` tool adds a tool and sends that notification.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp_types import INVALID_PARAMS

__all__ = ["PAGE_SIZE", "TOOL_COUNT", "build_server", "run_legacy_stdio"]

TOOL_COUNT = 25
PAGE_SIZE = 10


def _tool(name: str) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"Paged tool {name}.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    )


def build_server() -> Server[Any]:
    """A new paged server: ``page_00`` ... ``page_24``, ten per page, plus ``grow``."""
    names = [f"page_{i:02d}" for i in range(TOOL_COUNT)]
    grow = types.Tool(
        name="grow",
        description="Add a tool and notify the client.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        tools = [_tool(name) for name in names] + [grow]
        page = tools[start : start + PAGE_SIZE]
        following = start + PAGE_SIZE
        return types.ListToolsResult(tools=page, next_cursor=str(following) if following < len(tools) else None)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "grow":
            names.append(str(arguments["name"]))
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(text=f"grew {arguments['name']}")])
        if params.name not in names:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name}")
        return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])

    return Server("paged", version="0.1", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_legacy_stdio(server: Server[Any]) -> None:
    """Serve the ``initialize`` handshake era only, over stdin/stdout."""
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=options)


async def _main(legacy: bool) -> None:
    server = build_server()
    if legacy:
        await run_legacy_stdio(server)
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main, "--legacy" in sys.argv[1:])
