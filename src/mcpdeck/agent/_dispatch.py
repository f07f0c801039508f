"""One turn's tool calls: run on the host's one call path, reported as they go, answered in order.

A stretch of calls whose tools all say ``readOnlyHint`` runs side by side; any other call runs
alone, in the order the model asked. Each call is reported (``ToolCallRequested``, then
``ToolProgress`` if the tool reports any, then ``ToolCallDone``); a call that cannot run (bad
arguments, an unknown tool, a refusal, a failure) becomes an error result for the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpdeck.agent._events import AgentError, AgentEvent, ToolCallDone, ToolCallRequested, ToolProgress, ToolsFound
from mcpdeck.agent._tools import NativeTool
from mcpdeck.catalog import PREFIX, CatalogTool
from mcpdeck.errors import MCPDeckError, PermissionDeniedError
from mcpdeck.host import Host
from mcpdeck.providers import ToolCall, error_result
from mcpdeck.results import ToolResult

__all__ = ["Dispatch", "Resolved", "read_only"]

Resolved = CatalogTool | NativeTool | None
"""A call's tool, or None when there is no tool of that name (for this agent)."""


def read_only(tool: Resolved) -> bool:
    """Whether a call of ``tool`` may run beside others (it says it only reads)."""
    return tool is not None and tool.read_only


@dataclass
class Dispatch:
    """What running one turn's calls needs from the agent.

    Attributes:
        host: The host whose call path every call takes.
        send: Where the run's events go.
        search: The ``search_tools`` tool (its finds are reported as ``ToolsFound``).
        found: The names tool search has offered so far (it appends to this list).
        searching: Whether this run's tools are found by search (for the hint on an unknown name).
        max_chars: The cap on a result's text sent to the model (None: none), to report what is cut.
    """

    host: Host
    send: MemoryObjectSendStream[AgentEvent]
    search: NativeTool
    found: list[str]
    searching: bool
    max_chars: int | None

    async def run(self, calls: list[ToolCall], tools: list[Resolved]) -> list[ToolResult]:
        """Run a turn's calls (``tools[i]`` is the tool of ``calls[i]``); their results in the calls' order."""
        results: list[ToolResult | None] = [None] * len(calls)
        i = 0
        while i < len(calls):
            j = i + 1
            if read_only(tools[i]) and calls[i].error is None:
                while j < len(calls) and read_only(tools[j]) and calls[j].error is None:
                    j += 1
            if j - i == 1:
                results[i] = await self._run_call(calls[i], tools[i])
            else:
                async with anyio.create_task_group() as tg:
                    for k in range(i, j):
                        tg.start_soon(self._run_into, results, k, calls[k], tools[k])
            i = j
        return [r for r in results if r is not None]

    async def _run_into(self, results: list[ToolResult | None], k: int, call: ToolCall, tool: Resolved) -> None:
        results[k] = await self._run_call(call, tool)

    async def _run_call(self, call: ToolCall, tool: Resolved) -> ToolResult:
        call_id = call.id or ""
        server = tool.server if isinstance(tool, CatalogTool) else None
        await self.send.send(ToolCallRequested(call_id, call.name, call.arguments, server, read_only(tool)))
        started = time.perf_counter()
        approved_by: str | None = None
        denied = False
        if call.error is not None:
            result = error_result(call, f"Error: {call.error}. Call the tool again with a JSON object of arguments.")
        elif tool is None:
            result = error_result(call, self._unknown(call.name))
        else:
            before = len(self.found)
            result, approved_by, denied = await self._call(tool, call)
            if tool is self.search and len(self.found) > before:
                await self.send.send(ToolsFound(str(call.arguments.get("query", "")), self.found[before:]))
        cut = max(0, len(result.text()) - self.max_chars) if self.max_chars is not None else 0
        duration = time.perf_counter() - started
        if result.duration == 0.0:
            result = replace(result, duration=duration)
        await self.send.send(ToolCallDone(call_id, call.name, result, approved_by, denied, cut, duration))
        return result

    def _unknown(self, name: str) -> str:
        hint = "use search_tools to find tools" if self.searching else "call one of the tools you were given"
        if name.startswith(PREFIX):
            return f"Error: there is no tool named {name!r} (its server may be down or the name misspelt); {hint}."
        return f"Error: there is no tool named {name!r}; {hint}."

    async def _call(self, tool: CatalogTool | NativeTool, call: ToolCall) -> tuple[ToolResult, str | None, bool]:
        """Run one call on the host's one call path (gate, events, history), native or MCP alike."""
        call_id = call.id or ""

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await self.send.send(ToolProgress(call_id, call.name, value, total, message))

        try:
            if isinstance(tool, NativeTool):
                result = await self.host.call_native(tool.name, call.arguments, tool.call, check_permission=True)
            else:
                result = await self.host.call_tool(tool.name, call.arguments, progress=progress, check_permission=True)
        except PermissionDeniedError as error:
            return error_result(call, str(error)), error.approved_by, True
        except MCPDeckError as error:
            await self.send.send(AgentError(str(error), kind="tool", tool=call.name))
            return error_result(call, f"Error: {error}"), None, False
        return result, result.approved_by, False
