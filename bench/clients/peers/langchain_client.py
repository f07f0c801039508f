# pyright: basic, reportMissingImports=false
"""langchain-mcp-adapters (its venv: ``langchain``; see ``peers/__init__.py``).

- ``langchain``: the default ``MultiServerMCPClient.get_tools()``: tools load through a
  short-lived session, and every tool call opens a new session (a new server process for
  stdio). Connecting all servers at once is ``get_tools()``'s own gather, per server.
- ``langchain-session``: a persistent ``client.session(name)`` per server and
  ``load_mcp_tools(session)``, as its docs show for stateful servers.

A call is ``await tool.ainvoke(args)`` on the LangChain tool. ``convert`` to ``openai``
is ``langchain_core``'s ``convert_to_openai_tool``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from bench.clients.base import ClientLib, Connection, ServerSpec, Unsupported, group, handshake_only, text_size


def _connection(spec: ServerSpec) -> dict[str, Any]:
    handshake_only(spec)
    if spec.transport == "http":
        return {"transport": "streamable_http", "url": spec.url}
    return {"transport": "stdio", "command": spec.command, "args": list(spec.args)}


class _Connection(Connection):
    def __init__(self, tools: dict[str, list[Any]], client: MultiServerMCPClient | None = None):
        self._tools = tools
        self._by_name = {server: {t.name: t for t in ts} for server, ts in tools.items()}
        self._client = client

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        return text_size(await self._by_name[server][tool].ainvoke(arguments))

    def tool_count(self) -> int:
        return sum(len(ts) for ts in self._tools.values())

    async def relist(self, server: str) -> int:
        if self._client is None:
            raise Unsupported("a persistent session lists once; list again through a new session")
        tools = await self._client.get_tools(server_name=server)
        self._tools[server] = tools
        self._by_name[server] = {t.name: t for t in tools}
        return len(tools)

    async def convert(self, server: str, provider: str, *, again: bool = False) -> int:
        if provider != "openai":
            raise Unsupported(f"langchain-core converts to {provider} only with that provider's package")
        return len([convert_to_openai_tool(t) for t in self._tools[server]])


class LangchainLib(ClientLib):
    packages = ("langchain-mcp-adapters", "langchain-core", "mcp")

    def __init__(self, persistent: bool):
        self._persistent = persistent

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        client = MultiServerMCPClient({s.name: _connection(s) for s in servers})

        @asynccontextmanager
        async def per_call() -> AsyncGenerator[Connection]:
            if concurrent:
                lists = await asyncio.gather(*(client.get_tools(server_name=s.name) for s in servers))
            else:
                lists = [await client.get_tools(server_name=s.name) for s in servers]
            yield _Connection({s.name: list(ts) for s, ts in zip(servers, lists, strict=True)}, client)

        @asynccontextmanager
        async def open_one(spec: ServerSpec) -> AsyncGenerator[list[Any]]:
            async with client.session(spec.name) as session:
                yield await load_mcp_tools(session)

        @asynccontextmanager
        async def persistent() -> AsyncGenerator[Connection]:
            async with group(servers, open_one, concurrent=concurrent) as opened:
                yield _Connection({name: list(ts) for name, ts in opened.items()})

        return persistent() if self._persistent else per_call()


def make(name: str) -> ClientLib:
    return LangchainLib(persistent=name == "langchain-session")
