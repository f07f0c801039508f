"""``/api/tools``: list (filter by server and text), one tool's schema, call (progress on the
event stream, or in the call's own stream; cancel by id); ``/api/calls/{id}/cancel``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request
from starlette.responses import StreamingResponse

from mcpdeck.api._common import Ctx, require_server
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError, status_of
from mcpdeck.api._events import sse, stream_response
from mcpdeck.api._models import CallIn, ToolOut, ToolResultOut
from mcpdeck.catalog import CatalogTool
from mcpdeck.errors import MCPDeckError, ToolNotFoundError

__all__ = ["router"]

logger = logging.getLogger(__name__)

router = APIRouter(tags=["tools"])


def _matches(tool: CatalogTool, text: str) -> bool:
    folded = text.casefold()
    return (
        folded in tool.name.casefold()
        or folded in (tool.title or "").casefold()
        or folded in tool.description.casefold()
    )


@router.get("/tools", response_model=list[ToolOut], summary="List tools")
async def list_tools(
    ctx: Ctx,
    server: Annotated[list[str] | None, Query(description="Only these servers' tools (repeatable).")] = None,
    q: Annotated[str | None, Query(description="Only tools whose name, title or description holds this text.")] = None,
) -> list[dict[str, Any]]:
    """Every tool of every connected server, under its namespaced name (``mcpdeck tools --json``)."""
    for name in server or ():
        require_server(ctx, name)
    tools = ctx.host.tools
    if server:
        tools = [t for t in tools if t.server in server]
    if q:
        tools = [t for t in tools if _matches(t, q)]
    return [t.to_json() for t in tools]


@router.get("/tools/{name}", response_model=ToolOut, summary="Get a tool and its schema")
async def get_tool(ctx: Ctx, name: str) -> dict[str, Any]:
    """One tool: description, input and output schemas, annotations."""
    tool = ctx.host.catalog.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return tool.to_json()


@router.post(
    "/tools/{name}/call",
    response_model=ToolResultOut,
    summary="Call a tool",
    responses={200: {"content": {"text/event-stream": {}}, "description": "With `Accept: text/event-stream`."}},
)
async def call_tool(ctx: Ctx, name: str, body: CallIn, request: Request) -> Any:
    """Call a tool and answer with its result (``mcpdeck call --json``), ``isError`` when the tool failed.

    While it runs, ``ToolCallStarted``, ``ToolCallProgress`` and ``ToolCallFinished`` events
    carry ``requestId`` = ``callId`` on ``/api/events``; ``POST /api/calls/{callId}/cancel``
    stops it (the answer is then 409 ``cancelled``). With ``Accept: text/event-stream`` the
    answer is a stream instead: a ``progress`` event per progress notification, then one
    ``result`` (the result) or ``error`` (``{"status", "error": {"code", "message"}}``);
    closing it cancels the call.
    """
    call_id = body.callId or uuid.uuid4().hex
    if ctx.busy(call_id):
        raise ApiError(409, "call-exists", f"a call with id {call_id!r} is already running; use another callId")
    if "text/event-stream" in request.headers.get("accept", ""):
        return _streamed_call(ctx, name, body, call_id)
    with anyio.CancelScope() as scope:
        ctx.begin_call(call_id, scope)
        try:
            result = await ctx.host.call_tool(name, body.arguments, timeout=body.timeout)
        finally:
            ctx.end_call(call_id)
        return result.to_json() | {"callId": call_id}
    raise ApiError(409, "cancelled", f"the call {call_id!r} was cancelled")


def _error_json(status: int, code: str, message: str) -> dict[str, Any]:
    return {"status": status, "error": {"code": code, "message": message}}


def _streamed_call(ctx: ApiContext, name: str, body: CallIn, call_id: str) -> StreamingResponse:
    """The call made in the host's task group, its progress and its end sent as server-sent events."""
    send, receive = anyio.create_memory_object_stream[bytes](256)
    scope = anyio.CancelScope()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(sse("progress", {"progress": value, "total": total, "message": message}))

    async def run() -> None:
        with send:
            end = sse("error", _error_json(409, "cancelled", f"the call {call_id!r} was cancelled"))
            with scope:
                ctx.begin_call(call_id, scope)
                try:
                    result = await ctx.host.call_tool(name, body.arguments, timeout=body.timeout, progress=progress)
                    end = sse("result", result.to_json() | {"callId": call_id})
                except MCPDeckError as error:
                    end = sse("error", _error_json(*status_of(error), str(error)))
                except Exception as error:  # a bug: told to the caller, never closing the host
                    logger.exception("a streamed call failed", exc_info=error)
                    message = f"mcpdeck failed: {type(error).__name__}; see its log"
                    end = sse("error", _error_json(500, "internal", message))
                finally:
                    ctx.end_call(call_id)
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await send.send(end)

    ctx.host.start_task(run, name=f"mcpdeck call {call_id}")

    async def stream() -> AsyncIterator[bytes]:
        with receive:
            try:
                yield b": connected\n\n"
                async for chunk in receive:
                    yield chunk
            finally:
                scope.cancel()  # the reader left (or it ended): a call still running is stopped

    return stream_response(stream())


@router.post("/calls/{call_id}/cancel", summary="Cancel a running call")
async def cancel_call(ctx: Ctx, call_id: str) -> dict[str, str]:
    """Cancel a tool call in flight, by the ``callId`` it was made with (or the host's id from its events)."""
    if not ctx.cancel_call(call_id):
        raise ApiError(404, "call-not-found", f"no call {call_id!r} is running")
    return {"cancelled": call_id}
