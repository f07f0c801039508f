"""mcpdeck's ``Host``, used the way its README shows.

- Concurrent connect: ``async with Host({...all servers...})`` (it starts every server at once).
- The era: a server spec's ``protocol`` (``handshake``, ``modern``) is its config's ``"protocol"``.
- Sequential connect: ``async with Host({})``, then ``add_server(..., save=False)`` one by one.
- A call: ``host.call_tool("mcp__<server>__<tool>", args)`` (the public name is looked up
  once per tool, as an app keeps it).
- Listing again: mcpdeck lists when a server says its list changed, so ``relist`` calls
  the server's ``touch_tools`` and waits for the ``ToolsChanged`` event.
- Provider conversion: ``get_provider(p).tools(host.catalog)``, the whole catalog in a
  provider's format. The first conversion (``again=False``) uses a new converter, so
  nothing is cached; ``again=True`` asks the same converter for the same, unchanged catalog
  (its per-catalog-version cache).
- Agent requests (the ``tokens`` metric): ``Agent(host, model=...)`` as an app makes it, run
  against a stand-in ``ChatModel`` that records the ``tools=`` value the agent loop passes
  with each request (``get_provider(p)``'s converter, as the provider's real model has; no
  network). Tool search off: one request with every tool. Tool search as by default (on above
  40 tools): the model calls ``search_tools(query)`` (its default limit, 5), then the first
  tool found (allowed for the session), then answers: three requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from bench.clients.base import ClientLib, Connection, ServerSpec
from mcpdeck import Host, RetryPolicy, ServerState
from mcpdeck.agent import Agent, AgentError
from mcpdeck.events import Event, ToolsChanged
from mcpdeck.providers import ChatModel, Converter, TextDelta, ToolCall, Turn, get_provider

__all__ = ["McpdeckLib", "make"]


SLOWED = os.environ.get("BENCH_SLOWED") == "1"
"""Set by ``bench.instructions`` (valgrind, cProfile): everything runs many times slower, so the connect gets 30
minutes, and no health ping (every 30 s, answered within 10 s, on a handshake session) is sent: behind 32 calls in
flight it is not answered in time there, and the connection would be taken for lost."""


def _config(spec: ServerSpec) -> dict[str, Any]:
    era: dict[str, Any] = {"protocol": spec.protocol} if spec.protocol else {}
    if SLOWED:
        era["startupTimeout"] = 1800
    if spec.transport == "http":
        return {"type": "http", "url": spec.url, **era}
    return {"command": spec.command, "args": list(spec.args), **era}


def _tool_count(tools: Sequence[Mapping[str, Any]]) -> int:
    """Tool definitions in a request's ``tools`` value (Gemini groups them in ``functionDeclarations``)."""
    return sum(len(t["functionDeclarations"]) if "functionDeclarations" in t else 1 for t in tools)


class _Recorder(ChatModel):
    """A stand-in model: records the ``tools`` value of each request, answers with scripted turns."""

    api = "bench"

    def __init__(self, provider: str, script: Sequence[Callable[[], Turn]]):
        super().__init__(provider, "bench-recorder", get_provider(provider))
        self.requests: list[dict[str, Any]] = []
        self._script = list(script)

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        system: str | None = None,
    ) -> AsyncIterator[TextDelta | Turn]:
        # compact JSON, as the provider SDKs send it
        self.requests.append(
            {"json": json.dumps(list(tools), separators=(",", ":"), ensure_ascii=False), "tools": _tool_count(tools)}
        )
        yield self._script[min(len(self.requests), len(self._script)) - 1]()

    async def aclose(self) -> None:
        return None


async def _run(agent: Agent, prompt: str) -> None:
    async for event in agent.run(prompt):
        if isinstance(event, AgentError) and event.kind != "tool":
            raise RuntimeError(f"the agent run failed: {event.message}")


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

    def protocol_version(self, server: str) -> str:
        return self._host.servers[server].protocol_version or "?"

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

    async def agent_requests(self, server: str, provider: str, queries: list[str]) -> dict[str, Any]:
        every = _Recorder(provider, [lambda: Turn(text="done")])
        await _run(Agent(self._host, model=every, tool_search=False), "Which tools are there?")
        runs = [await self._search_run(provider, query) for query in queries]
        searching = Agent(self._host, model=_Recorder(provider, [])).searching()
        return {"all": every.requests[0], "searching": searching, "runs": runs}

    async def _search_run(self, provider: str, query: str) -> dict[str, Any]:
        """A run with tool search as by default: search, call the first tool found, answer."""
        host = self._host
        found: list[str] = []

        def search() -> Turn:
            return Turn("", tool_calls=[ToolCall("call-1", "search_tools", {"query": query})], stop_reason="tool_use")

        def call_found() -> Turn:
            if not found:
                return Turn(text="nothing found")
            host.permissions.session_allowed.add(found[0])  # as if the user allowed it for the session
            return Turn(
                "", tool_calls=[ToolCall("call-2", found[0], {"workspace": "acme-prod"})], stop_reason="tool_use"
            )

        recorder = _Recorder(provider, [search, call_found, lambda: Turn(text="done")])
        agent = Agent(host, model=recorder)
        found = agent.found  # the agent's own list: what its search_tools found
        await _run(agent, f"Please {query}.")
        return {"query": query, "found": list(agent.found), "requests": recorder.requests}


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
            retry = RetryPolicy(health_interval=0) if SLOWED else None
            async with Host(initial, log_dir=self._log_dir, retry=retry) as host:
                if not concurrent:
                    for spec in servers:
                        await host.add_server(spec.name, _config(spec), save=False)
                _check(host, servers)
                yield _Connection(host)

        return connected()


def make(name: str) -> ClientLib:
    return McpdeckLib()
