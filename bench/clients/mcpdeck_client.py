"""mcpdeck's ``Host``, used the way its README shows.

- Concurrent connect: ``async with Host({...all servers...})`` (it starts every server at once).
- Sequential connect: ``async with Host({})``, then ``add_server(..., save=False)`` one by one.
- A call: ``host.call_tool("mcp__<server>__<tool>", args)`` (the public name is looked up
  once per tool, as an app keeps it).
- Listing again: mcpdeck lists when a server says its list changed, so ``relist`` calls
  the server's ``touch_tools`` and waits for the ``ToolsChanged`` event.
- Provider conversion: ``get_provider(p).tools(host.catalog)``, the whole catalog in a
  provider's format. The first conversion (``again=False``) uses a new converter, so
  nothing is cached; ``again=True`` asks the same converter for the same, unchanged catalog
  (its per-catalog-version cache).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from bench.clients.base import ClientLib, Connection, ServerSpec
from mcpdeck import Event, Host, ServerState, ToolsChanged
from mcpdeck.providers import Converter, get_provider

__all__ = ["McpdeckLib", "make"]


def _config(spec: ServerSpec) -> dict[str, Any]:
    if spec.transport == "http":
        return {"type": "http", "url": spec.url}
    return {"command": spec.command, "args": list(spec.args)}


class _Connection(Connection):
    def __init__(self, host: Host):
        self._host = host
        self._names: dict[tuple[str, str], str] = {}
        self._converters: dict[str, Converter] = {}

    def _public_name(self, server: str, tool: str) -> str:
        name = self._names.get((server, tool))
        if name is None:
            entry = self._host.catalog.find(server, tool)
            name = self._names[(server, tool)] = entry.name if entry is not None else f"mcp__{server}__{tool}"
        return name

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        result = await self._host.call_tool(self._public_name(server, tool), arguments)
        return sum(len(getattr(block, "text", "")) for block in result.content)

    def tool_count(self) -> int:
        return len(self._host.tools)

    async def relist(self, server: str) -> int:
        changed = asyncio.Event()

        def on_event(event: Event) -> None:
            if isinstance(event, ToolsChanged) and event.server == server:
                changed.set()

        unsubscribe = self._host.events.on(on_event)
        try:
            await self.call(server, "touch_tools", {})
            await changed.wait()
        finally:
            unsubscribe()
        return len(self._host.catalog.for_server(server))

    async def convert(self, server: str, provider: str, *, again: bool = False) -> int:
        converter = self._converters.get(provider) if again else None
        if converter is None:
            if again:
                raise RuntimeError(f"nothing converted to {provider} yet")
            converter = self._converters[provider] = get_provider(provider)
        tools = converter.tools(self._host.catalog)
        if len(tools) == 1 and "functionDeclarations" in tools[0]:  # Gemini: one group of declarations
            return len(tools[0]["functionDeclarations"])
        return len(tools)


def _check(host: Host, servers: list[ServerSpec]) -> None:
    statuses = host.servers
    failed = {s.name: statuses[s.name].error for s in servers if statuses[s.name].state is not ServerState.CONNECTED}
    if failed:
        raise RuntimeError(f"servers did not connect: {failed}")


class McpdeckLib(ClientLib):
    packages = ("mcpdeck", "mcp")

    def __init__(self) -> None:
        self._log_dir = tempfile.mkdtemp(prefix="bench-mcpdeck-logs-")

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        @asynccontextmanager
        async def connected() -> AsyncGenerator[Connection]:
            initial = {s.name: _config(s) for s in servers} if concurrent else {}
            async with Host(initial, log_dir=self._log_dir) as host:
                if not concurrent:
                    for spec in servers:
                        await host.add_server(spec.name, _config(spec), save=False)
                _check(host, servers)
                yield _Connection(host)

        return connected()


def make(name: str) -> ClientLib:
    return McpdeckLib()
