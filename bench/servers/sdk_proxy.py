"""The simplest gateway the SDK makes: its low-level ``Server`` serving stdio, each ``tools/call``
forwarded through an SDK ``Client`` to one stdio server.

For ``python -m bench.gateway``, two floors beside ``mcpdeck gateway --stdio``:

- by default, the SDK alone: its ``Server`` on its own ``stdio_server`` and its ``Client`` on its
  own ``stdio_client``, no mcpdeck code: the cost of one extra hop built from the SDK and nothing
  else (no catalog, no gate, no history, no supervision);
- with ``--pipes``, the same ``Server`` and ``Client`` on mcpdeck's stdio pipes (``gateway._stdio``
  towards the client, ``_stdio.stdio_transport`` towards the server) with the SDK's idle spans left
  out, as the gateway runs them: everything the gateway has on a call's path except mcpdeck's host
  layer. The gateway's distance from it is what the host layer costs per call;
- with ``--port N``, the SDK's ``Client`` behind its ``Server`` served over streamable HTTP on
  127.0.0.1:N (0: any free port; its ``streamable_http_app`` under uvicorn, as the SDK's
  documentation runs it; the address is printed once it listens): the floor beside ``mcpdeck
  gateway --port``.

The tools are listed under the gateway's names (``mcp__<server>__<tool>``), so the measuring
client can call them as it calls the gateway's, and the SDK's client finds the tool it calls in
the list. Run it from the repository root as a module:

    python -m bench.servers.sdk_proxy [--pipes | --port N] NAME COMMAND [ARG ...]
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server import Server
from mcp.server.stdio import stdio_server


async def main(name: str, command: str, args: list[str], pipes: bool = False, port: int | None = None) -> None:
    prefix = f"mcp__{name}__"
    params = StdioServerParameters(command=command, args=args)
    upstream_target: Any = params
    serve_stdio: Callable[[], AbstractAsyncContextManager[Any]] = stdio_server
    if pipes:
        from mcpdeck._sdk.stdio import stdio_transport
        from mcpdeck.gateway._spans import drop_idle_client_spans
        from mcpdeck.gateway._stdio import stdio_streams

        drop_idle_client_spans()
        upstream_target = stdio_transport(params, sys.stderr, max_message=64 << 20)
        serve_stdio = stdio_streams
    async with Client(upstream_target, mode="legacy") as upstream:
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
        if pipes:  # the SDK's server span, a no-op without a tracer provider, left out as the gateway does
            server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
        if port is not None:  # listening before the address is printed: a client may connect at once
            import uvicorn

            listening = socket.create_server(("127.0.0.1", port))
            print(f"http://127.0.0.1:{listening.getsockname()[1]}/mcp", flush=True)
            config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
            await uvicorn.Server(config).serve(sockets=[listening])
            return
        async with serve_stdio() as (read, write):
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        prog="python -m bench.servers.sdk_proxy", description=(__doc__ or "").split("\n")[0]
    )
    face = parser.add_mutually_exclusive_group()
    face.add_argument("--pipes", action="store_true", help="serve stdio on mcpdeck's pipes, with idle spans off")
    face.add_argument("--port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT (0: any) instead of stdio")
    parser.add_argument("name")
    parser.add_argument("command")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    anyio.run(main, options.name, options.command, options.args, options.pipes, options.port)
