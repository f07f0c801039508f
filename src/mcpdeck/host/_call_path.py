"""The one instrumented path every tool call of the host takes: a server's tool or a native one.

A call passes the permission gate (when asked to), is announced with ``ToolCallStarted``,
reports ``ToolCallProgress`` while it runs, and ends with one ``ToolCallFinished`` whether it
returned, failed, was refused or was cancelled, timed the same way each time. The history,
the console and the gateway read those events, so they see an agent's native tool and a
server's tool alike. When no one listens for them, no event is built: that is the hot path of a
loop of calls (and of a gateway, which listens for other kinds).

The history is the one listener that is not a subscriber: a host given one (``Host(history=...)``)
hands it each call's start and end (a ``CallRecorder``), and a call that ends — answered, failed or
refused — returns only once its record is committed. So whatever face a call came through (the
gateway, the API, the CLI, the agent), an answer its caller got is a call on the record.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types

from mcpdeck._observability.tracing import note_approval, note_outcome, tool_call_span, trace_id_of, tracing
from mcpdeck.catalog import CatalogTool
from mcpdeck.connection import ProgressCallback
from mcpdeck.errors import MCPDeckError, PermissionDeniedError
from mcpdeck.events import (
    ApprovedBy,
    EventBus,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    current_caller,
    current_conversation,
)
from mcpdeck.permissions import GATE_APPROVER, Access, ApprovalCallback, CallingClient, GateApprover, PermissionGate
from mcpdeck.results import ToolResult

__all__ = ["CallPath", "CallRecorder", "Send", "new_call_id"]

if TYPE_CHECKING:
    from opentelemetry.trace import Span

Send = Callable[[ProgressCallback | None], Awaitable[types.CallToolResult]]
"""Sends one call and returns its result; called with the progress callback to report through."""

_CALL_EVENTS = (ToolCallStarted, ToolCallFinished, ToolCallProgress)
"""A call's events: each is built only when someone takes one of them."""


def new_call_id() -> str:
    """A new call's id: 32 hex digits, the time in milliseconds (12) then 80 random bits (20).

    Ids that grow with time land at the end of the history's unique index on ``call_id``, as its
    other indexes do; random ones (``uuid4``, before) landed anywhere in it, and once a history
    no longer fitted SQLite's page cache each call's insert read pages from the file: a big
    history's inserts then cost about twice an empty one's (bench/RESULTS.md).
    """
    # `random`, not `os.urandom`: an id is no secret, only unique (the module reseeds after a fork), and the
    # system call let a busy history writer take the interpreter in the middle of every call.
    return f"{time.time_ns() // 1_000_000:012x}{random.getrandbits(80):020x}"


class CallRecorder(Protocol):
    """Where a host's calls are recorded (``mcpdeck.history.History`` is one)."""

    def call_started(self, event: ToolCallStarted) -> None:
        """Note a call's start (without waiting)."""
        ...

    def call_finished(self, event: ToolCallFinished) -> None:
        """Note a call's end (without waiting)."""
        ...

    async def committed(self) -> None:
        """Wait until everything noted so far is durable."""
        ...


def _trace(span: Span | None) -> str | None:
    return None if span is None else trace_id_of(span)


@dataclass(slots=True)
class _OnRecord:
    """One call as its events tell it: who, since when, let through by whom."""

    events: EventBus
    recorder: CallRecorder | None
    name: str
    server: str
    tool: str
    approved_by: ApprovedBy | None
    trace_id: str | None = None
    call_id: str = field(default_factory=new_call_id)
    started: float = 0.0

    def start(self, arguments: dict[str, Any]) -> None:
        event = ToolCallStarted(
            call_id=self.call_id,
            name=self.name,
            server=self.server,
            tool=self.tool,
            arguments=arguments,
            approved_by=self.approved_by,
            conversation=current_conversation.get(),
            caller=current_caller.get(),
            trace_id=self.trace_id,
        )
        if self.recorder is not None:
            self.recorder.call_started(event)
        self.events.publish(event)
        self.started = time.perf_counter()

    def relay(self, progress: ProgressCallback | None) -> ProgressCallback:
        """A progress callback that publishes ``ToolCallProgress`` and passes the news on to ``progress``."""

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            self.events.publish(
                ToolCallProgress(
                    call_id=self.call_id,
                    name=self.name,
                    server=self.server,
                    progress=value,
                    total=total,
                    message=message,
                )
            )
            if progress is not None:
                await progress(value, total, message)

        return on_progress

    def finish(
        self,
        *,
        is_error: bool,
        error: str | None = None,
        size: int | None = None,
        duration: float | None = None,
        result: ToolResult | None = None,
    ) -> None:
        event = ToolCallFinished(
            call_id=self.call_id,
            name=self.name,
            server=self.server,
            tool=self.tool,
            duration=time.perf_counter() - self.started if duration is None else duration,
            is_error=is_error,
            error=error,
            result_size=size,
            approved_by=self.approved_by,
            result=result,
        )
        if self.recorder is not None:
            self.recorder.call_finished(event)
        self.events.publish(event)

    async def on_record(self) -> None:
        """Wait until the call's record is committed (nothing to wait for without a recorder)."""
        if self.recorder is not None:
            await self.recorder.committed()


class CallPath:
    """Runs tool calls through the gate, the events and the clock, one way for every kind of tool."""

    def __init__(self, events: EventBus, gate: PermissionGate, recorder: CallRecorder | None = None):
        self._events = events
        self._gate = gate
        self.recorder = recorder
        """Where calls are recorded (the host's history), if anywhere."""

    def _anyone_listens(self) -> bool:
        """Whether anyone listens for a call's events, or records them."""
        return self.recorder is not None or self._events.wants_any(_CALL_EVENTS)

    async def check_access(
        self,
        access: Access,
        arguments: Mapping[str, Any],
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> None:
        """Pass the gate for a resource read or a prompt (not a call: no events).

        Raises:
            PermissionDeniedError: The gate refused it.
        """
        decision = await self._gate.check(access, arguments, approver=approver)
        if not decision.allowed:
            raise PermissionDeniedError(decision.message, tool=access.name, approved_by=decision.approved_by)

    async def call(
        self,
        tool: CatalogTool | str,
        arguments: dict[str, Any],
        send: Send,
        *,
        check_permission: bool,
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call ``tool`` (a catalog tool, or a native tool's name: its server is ``""``) with ``send``.

        Raises:
            PermissionDeniedError: The gate refused the call (``send`` was not called); on the record.
            MCPDeckError: What ``send`` raised; on the record, as is a cancellation.
        """
        if isinstance(tool, CatalogTool):
            name, server, original = tool.name, tool.server, tool.original_name
        else:
            name, server, original = tool, "", tool
        if not tracing():
            return await self._call(name, server, original, tool, arguments, send, check_permission, approver, progress)
        with tool_call_span(name, server, original) as span:
            return await self._call(
                name, server, original, tool, arguments, send, check_permission, approver, progress, span
            )

    async def _call(
        self,
        name: str,
        server: str,
        original: str,
        tool: CatalogTool | str,
        arguments: dict[str, Any],
        send: Send,
        check_permission: bool,
        approver: ApprovalCallback | CallingClient | GateApprover | None,
        progress: ProgressCallback | None,
        span: Span | None = None,
    ) -> ToolResult:
        """``call``, inside its span when spans are recorded."""
        approved_by: ApprovedBy | None = None
        if check_permission:
            decision = await self._gate.check(tool, arguments, approver=approver)
            approved_by = decision.approved_by
            if not decision.allowed:
                if span is not None:
                    note_approval(span, approved_by)
                    note_outcome(span, is_error=True, denied=True)
                if self._anyone_listens():  # on the record: who refused what
                    refused = _OnRecord(self._events, self.recorder, name, server, original, approved_by, _trace(span))
                    refused.start(arguments)
                    refused.finish(is_error=True, error=decision.message)
                    await refused.on_record()
                raise PermissionDeniedError(decision.message, tool=name, approved_by=decision.approved_by)
        if span is not None:
            note_approval(span, approved_by)
        if not self._anyone_listens():  # the common case in a hot loop: nothing to tell anyone
            started = time.perf_counter()
            raw = await send(progress)
            duration = time.perf_counter() - started
            result = ToolResult.from_mcp(
                raw, name=name, server=server, tool=original, duration=duration, approved_by=approved_by
            )
            if span is not None:
                note_outcome(span, is_error=result.is_error)
            return result
        record = _OnRecord(self._events, self.recorder, name, server, original, approved_by, _trace(span))
        record.start(arguments)
        try:
            # progress is asked of the server only when someone takes it: asking costs every call (a token, a handler)
            wanted = progress is not None or self._events.wants(ToolCallProgress)
            raw = await send(record.relay(progress) if wanted else None)
        except MCPDeckError as error:
            record.finish(is_error=True, error=str(error))
            await record.on_record()  # an error is an answer too: on the record before it is given
            raise
        except anyio.get_cancelled_exc_class():
            record.finish(is_error=True, error="cancelled")
            raise
        duration = time.perf_counter() - record.started
        result = ToolResult.from_mcp(
            raw, name=name, server=server, tool=original, duration=duration, approved_by=approved_by
        )
        if span is not None:
            note_outcome(span, is_error=result.is_error)
        record.finish(is_error=result.is_error, size=result.size, duration=duration, result=result)
        await record.on_record()
        return result

    async def call_native(
        self,
        name: str,
        arguments: dict[str, Any],
        run: Callable[[dict[str, Any]], Awaitable[ToolResult]],
        *,
        check_permission: bool,
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> ToolResult:
        """Call a native tool: ``run(arguments)``, its result taken as an MCP tool's answer."""

        async def send(_: ProgressCallback | None) -> types.CallToolResult:
            result = await run(arguments)
            return types.CallToolResult(
                content=result.content, structured_content=result.structured_content, is_error=result.is_error
            )

        return await self.call(name, arguments, send, check_permission=check_permission, approver=approver)
