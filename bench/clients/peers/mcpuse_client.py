# pyright: basic, reportMissingImports=false
"""mcp-use's ``MCPClient`` (its venv: ``mcp-use``; see ``peers/__init__.py``).

Connecting one after the other is its own ``create_all_sessions()``; at once is
``create_session(name)`` for every server gathered. A call is ``session.call_tool``.
Its telemetry is off (``MCP_USE_ANONYMIZED_TELEMETRY=false``, set by the harness).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp_use import MCPClient

from bench.clients.base import ClientLib, Connection, ServerSpec, handshake_only, text_size


def _config(spec: ServerSpec) -> dict[str, Any]:
    handshake_only(spec)
    if spec.transport == "http":
        return {"url": spec.url}
    return {"command": spec.command, "args": list(spec.args)}


class _Connection(Connection):
    def __init__(self, client: MCPClient, names: list[str]):
        self._sessions = {name: client.get_session(name) for name in names}

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        return text_size(await self._sessions[server].call_tool(tool, arguments))

    def tool_count(self) -> int:
        return sum(len(s.connector.tools) for s in self._sessions.values())

    async def relist(self, server: str) -> int:
        return len(await self._sessions[server].list_tools())


class McpUseLib(ClientLib):
    packages = ("mcp-use", "mcp")

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        @asynccontextmanager
        async def connected() -> AsyncGenerator[Connection]:
            client = MCPClient({"mcpServers": {s.name: _config(s) for s in servers}})
            try:
                if concurrent:
                    await asyncio.gather(*(client.create_session(s.name) for s in servers))
                else:
                    await client.create_all_sessions()
                yield _Connection(client, [s.name for s in servers])
            finally:
                await client.close_all_sessions()

        return connected()


def make(name: str) -> ClientLib:
    return McpUseLib()
