"""The bare ``mcp`` SDK (the main environment's, 2.3.0): the baselines.

- ``sdk-session``: ``stdio_client`` / ``streamable_http_client`` + ``ClientSession`` after
  ``initialize()``, then ``list_tools()``: the lowest layer a user would call.
- ``sdk-client``: ``mcp.Client`` (``mode="auto"``: a ``server/discover`` probe, then the
  handshake), then ``list_tools()``. A server spec's ``protocol`` pins the era: ``handshake``
  is ``mode="legacy"``, ``modern`` is ``mode="auto"`` and a check that it got 2026-07-28.
  ``sdk-session`` speaks the handshake whatever the spec says (it is the bare session of
  every HTTP row, the modern ones too).

``convert`` is a naive hand conversion (no schema fix-ups, no cache): what a user of the
bare SDK writes, and the reference for mcpdeck's provider conversion when it lands.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bench.clients.base import ClientLib, Connection, ServerSpec, group

__all__ = ["SdkLib", "convert_tools", "make"]


def convert_tools(tools: list[types.Tool], provider: str) -> list[dict[str, Any]]:
    """A tool list in a provider's format, the plain way."""
    if provider == "openai":
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
            }
            for t in tools
        ]
    if provider == "openai-responses":
        return [
            {"type": "function", "name": t.name, "description": t.description or "", "parameters": t.input_schema}
            for t in tools
        ]
    if provider == "anthropic":
        return [{"name": t.name, "description": t.description or "", "input_schema": t.input_schema} for t in tools]
    if provider == "gemini":
        return [{"name": t.name, "description": t.description or "", "parameters": t.input_schema} for t in tools]
    raise ValueError(f"unknown provider {provider!r}")


class _Server:
    def __init__(self, session: ClientSession | Client, tools: list[types.Tool]):
        self.session = session
        self.tools = tools


class _Connection(Connection):
    def __init__(self, servers: dict[str, _Server]):
        self._servers = servers

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        result = await self._servers[server].session.call_tool(tool, arguments)
        return sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))

    def tool_count(self) -> int:
        return sum(len(s.tools) for s in self._servers.values())

    def protocol_version(self, server: str) -> str:
        return self._servers[server].session.protocol_version or "?"

    async def relist(self, server: str) -> int:
        entry = self._servers[server]
        entry.tools = list((await entry.session.list_tools()).tools)
        return len(entry.tools)

    async def convert(self, server: str, provider: str, *, again: bool = False) -> int:
        return len(convert_tools(self._servers[server].tools, provider))


@asynccontextmanager
async def _open_session(spec: ServerSpec) -> AsyncGenerator[_Server]:
    if spec.transport == "stdio":
        transport = stdio_client(StdioServerParameters(command=spec.command, args=list(spec.args)))
    else:
        transport = streamable_http_client(spec.url)
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield _Server(session, list((await session.list_tools()).tools))


@asynccontextmanager
async def _open_client(spec: ServerSpec) -> AsyncGenerator[_Server]:
    target = spec.url if spec.transport == "http" else StdioServerParameters(command=spec.command, args=list(spec.args))
    async with Client(target, mode="legacy" if spec.protocol == "handshake" else "auto") as client:
        if spec.protocol == "modern" and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise RuntimeError(f"the server answered with protocol {client.protocol_version}, not 2026-07-28")
        yield _Server(client, list((await client.list_tools()).tools))


class SdkLib(ClientLib):
    packages = ("mcp",)

    def __init__(self, variant: str):
        self._open = _open_session if variant == "sdk-session" else _open_client

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        @asynccontextmanager
        async def connected() -> AsyncGenerator[Connection]:
            async with group(servers, self._open, concurrent=concurrent) as opened:
                yield _Connection(opened)

        return connected()


def make(name: str) -> ClientLib:
    return SdkLib(name)
