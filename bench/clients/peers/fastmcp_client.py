# pyright: basic, reportMissingImports=false
"""fastmcp's ``Client``, one per server (its venv: ``fastmcp``; see ``peers/__init__.py``).

stdio servers use ``StdioTransport(keep_alive=False)`` so that leaving the client ends the
server, as every other client here does (fastmcp's default keeps it for reuse). A server spec's
``protocol`` pins the era: ``handshake`` is ``mode="legacy"``, ``modern`` is ``mode="auto"`` (its
default: ``server/discover``, then the handshake) and a check that it got 2026-07-28.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from bench.clients.base import ClientLib, Connection, ServerSpec, group, text_size


class _Connection(Connection):
    def __init__(self, opened: dict[str, tuple[Any, list[Any]]]):
        self._opened = opened

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        client, _ = self._opened[server]
        return text_size(await client.call_tool(tool, arguments))

    def protocol_version(self, server: str) -> str:
        client, _ = self._opened[server]
        return client.protocol_version or "?"

    def tool_count(self) -> int:
        return sum(len(tools) for _, tools in self._opened.values())

    async def relist(self, server: str) -> int:
        client, _ = self._opened[server]
        return len(await client.list_tools())


@asynccontextmanager
async def _open(spec: ServerSpec) -> AsyncGenerator[tuple[Any, list[Any]]]:
    if spec.transport == "stdio":
        transport: Any = StdioTransport(spec.command, list(spec.args), keep_alive=False)
    else:
        transport = StreamableHttpTransport(spec.url)
    async with Client(transport, mode="legacy" if spec.protocol == "handshake" else "auto") as client:
        version = client.protocol_version or ""
        if spec.protocol == "modern" and not version.startswith("2026"):
            raise RuntimeError(f"the server answered with protocol {version}, not 2026-07-28")
        yield client, list(await client.list_tools())


class FastmcpLib(ClientLib):
    packages = ("fastmcp", "fastmcp-slim", "mcp")

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        @asynccontextmanager
        async def connected() -> AsyncGenerator[Connection]:
            async with group(servers, _open, concurrent=concurrent) as opened:
                yield _Connection(opened)

        return connected()


def make(name: str) -> ClientLib:
    return FastmcpLib()
