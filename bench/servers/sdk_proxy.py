"""The simplest gateway the SDK alone makes: its low-level ``Server`` on its own ``stdio_server``,
each ``tools/call`` forwarded through an SDK ``Client`` to one stdio server. No mcpdeck code.

For ``python -m bench.gateway``: the cost of one extra hop built from the SDK's server and client
and nothing else (no catalog, no gate, no history, no supervision), beside ``mcpdeck gateway
--stdio``. The tools are listed under the gateway's names (``mcp__<server>__<tool>``), so the
measuring client can call them as it calls the gateway's, and the SDK's client finds the tool it
calls in the list. Run it from the repository root as a module:

    python -m bench.servers.sdk_proxy NAME COMMAND [ARG ...]
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server import Server
from mcp.server.stdio import stdio_server


async def main(name: str, command: str, args: list[str]) -> None:
    prefix = f"mcp__{name}__"
    async with Client(StdioServerParameters(command=command, args=args), mode="legacy") as upstream:
        listed = (await upstream.list_tools()).tools
        tools = [tool.model_copy(update={"name": prefix + tool.name}) for tool in listed]

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            result = await upstream.call_tool(params.name.removeprefix(prefix), params.arguments)
            return types.CallToolResult(
                content=result.content, structured_content=result.structured_content, is_error=result.is_error
            )

        server = Server("sdk-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
