"""``/api/tools``: list (filter by server and text), one tool's schema, call (progress on the
event stream, or in the call's own stream with the server's questions; cancel by id; a big result
answered cut with ``cut``); ``/api/calls/{id}/cancel``; ``/api/calls/{id}/result`` (the whole of a
result answered cut, and its parts)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Annotated, Any

import anyio
import mcp_types as types
from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from mcpdeck.api._asks import Asker, current_asker
from mcpdeck.api._common import ApiContextDep, require_server
from mcpdeck.api._context import ApiContext
from mcpdeck.api._cut import cut_result
from mcpdeck.api._errors import ApiError, status_of
from mcpdeck.api._events import sse, stream_response
from mcpdeck.api._models import CallIn, ToolOut, ToolResultOut
from mcpdeck.api._respond import dumps
from mcpdeck.catalog import CatalogTool
from mcpdeck.errors import MCPDeckError, ToolNotFoundError
from mcpdeck.results import ToolResult

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
    ctx: ApiContextDep,
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
async def get_tool(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """One tool: description, input and output schemas, annotations."""
    tool = ctx.host.catalog.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return tool.to_json()


@router.post(
    "/tools/{name}/call",
    response_model=ToolResultOut,
    response_model_exclude_unset=True,  # `shown` only for a call made with `cut`
    summary="Call a tool",
    responses={200: {"content": {"text/event-stream": {}}, "description": "With `Accept: text/event-stream`."}},
)
async def call_tool(ctx: ApiContextDep, name: str, body: CallIn, request: Request) -> Any:
    """Call a tool and answer with its result (``mcpdeck call --json``), ``isError`` when the tool failed.

    While it runs, ``ToolCallStarted``, ``ToolCallProgress`` and ``ToolCallFinished`` events
    carry ``requestId`` = ``callId`` on ``/api/events``; ``POST /api/calls/{callId}/cancel``
    stops it (the answer is then 409 ``cancelled``). With ``Accept: text/event-stream`` the
    answer is a stream instead: a ``progress`` event per progress notification, ``ask`` and
    ``ask-closed`` for a server's questions while the call runs (elicitation, sampling: answer
    with ``POST /api/asks/{id}``), then one ``result`` (the result) or ``error``
    (``{"status", "error": {"code", "message"}}``); closing it cancels the call. Without the
    stream no one can answer a server's question, so it is declined.
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
        return await _answer(ctx, result, call_id, body.cut)
    raise ApiError(409, "cancelled", f"the call {call_id!r} was cancelled")


async def _answer(ctx: ApiContext, result: ToolResult, call_id: str, cut: int | None) -> dict[str, Any]:
    """A call's answer: the whole result, or with ``cut`` the part a page shows (the whole then kept)."""
    if cut is None:
        return result.to_json() | {"callId": call_id}
    data, was_cut = await anyio.to_thread.run_sync(cut_result, result, cut)
    if was_cut:
        ctx.kept.add(call_id, result)
    return data | {"callId": call_id}


def _error_json(status: int, code: str, message: str) -> dict[str, Any]:
    return {"status": status, "error": {"code": code, "message": message}}


def _streamed_call(ctx: ApiContext, name: str, body: CallIn, call_id: str) -> StreamingResponse:
    """The call made in the host's task group, its progress and its end sent as server-sent events."""
    send, receive = anyio.create_memory_object_stream[bytes](256)
    scope = anyio.CancelScope()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(sse("progress", {"progress": value, "total": total, "message": message}))

    asker = Asker("call", call_id)

    def show(kind: str, data: dict[str, Any]) -> bool:
        """A question of this call (or of no one's) goes to its stream."""
        if not asker.owns(data):
            return False
        try:
            send.send_nowait(sse(kind, data))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    async def run() -> None:
        with send:
            end = sse("error", _error_json(409, "cancelled", f"the call {call_id!r} was cancelled"))
            token = current_asker.set(asker)
            off = ctx.chats.asks.watch(show)
            with scope:
                ctx.begin_call(call_id, scope)
                try:
                    result = await ctx.host.call_tool(name, body.arguments, timeout=body.timeout, progress=progress)
                    end = sse("result", await _answer(ctx, result, call_id, body.cut))
                except MCPDeckError as error:
                    end = sse("error", _error_json(*status_of(error), str(error)))
                except Exception as error:  # a bug: told to the caller, never closing the host
                    logger.exception("a streamed call failed", exc_info=error)
                    message = f"mcpdeck failed: {type(error).__name__}; see its log"
                    end = sse("error", _error_json(500, "internal", message))
                finally:
                    ctx.end_call(call_id)
                    off()
                    current_asker.reset(token)
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
async def cancel_call(ctx: ApiContextDep, call_id: str) -> dict[str, str]:
    """Cancel a tool call in flight, by the ``callId`` it was made with (or the host's id from its events)."""
    if not ctx.cancel_call(call_id):
        raise ApiError(404, "call-not-found", f"no call {call_id!r} is running")
    return {"cancelled": call_id}


# ----- the whole result of a call answered cut ------------------------------------------------------


def _kept(ctx: ApiContext, call_id: str) -> ToolResult:
    result = ctx.kept.get(call_id)
    if result is None:
        raise ApiError(
            404,
            "result-not-kept",
            f"no whole result is kept for the call {call_id!r}: only calls answered with `cut` (and cut) are, "
            "the newest few; call the tool again",
        )
    return result


def _file_name(result: ToolResult, call_id: str, suffix: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{result.tool}-{call_id}").strip("-.") or "result"
    return f"{stem[:100]}{suffix}"


def _attachment(download: bool, name: str) -> dict[str, str]:
    return {"content-disposition": f'attachment; filename="{name}"'} if download else {}


_DOWNLOAD = Query(description="Answer as a file to save (`Content-Disposition: attachment`).")
CallIdPath = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_.:-]+$", description="The call's `callId`.")]


@router.get("/calls/{call_id}/result", response_model=ToolResultOut, summary="The whole result of a call answered cut")
async def call_result(
    ctx: ApiContextDep, call_id: CallIdPath, download: Annotated[bool, _DOWNLOAD] = False
) -> Response:
    """The whole result of a recent call made with ``cut`` that was cut, as the call would have answered it."""
    result = _kept(ctx, call_id)
    body = await anyio.to_thread.run_sync(lambda: dumps(result.to_json() | {"callId": call_id}))
    headers = _attachment(download, _file_name(result, call_id, ".json"))
    return Response(body, media_type="application/json", headers=headers)


@router.get(
    "/calls/{call_id}/result/content/{index}",
    summary="One text block of a call's whole result, as text",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "The text."}},
)
async def call_result_text(
    ctx: ApiContextDep, call_id: CallIdPath, index: int, download: Annotated[bool, _DOWNLOAD] = False
) -> Response:
    """The whole text of content block ``index`` (from 0) of a kept result, as ``text/plain``."""
    result = _kept(ctx, call_id)
    block = result.content[index] if 0 <= index < len(result.content) else None
    if not isinstance(block, types.TextContent):
        raise ApiError(404, "not-found", f"the result of {call_id!r} has no text block {index}")
    headers = _attachment(download, _file_name(result, call_id, f"-{index}.txt"))
    return PlainTextResponse(block.text, headers=headers)


@router.get(
    "/calls/{call_id}/result/structured",
    summary="The structured content of a call's whole result",
    responses={200: {"content": {"application/json": {"schema": {}}}, "description": "The structured content."}},
)
async def call_result_structured(
    ctx: ApiContextDep, call_id: CallIdPath, download: Annotated[bool, _DOWNLOAD] = False
) -> Response:
    """The whole structured content of a kept result, as indented JSON."""
    result = _kept(ctx, call_id)
    structured = result.structured_content
    if structured is None:
        raise ApiError(404, "not-found", f"the result of {call_id!r} has no structured content")
    body = await anyio.to_thread.run_sync(lambda: json.dumps(structured, indent=2, ensure_ascii=False, default=str))
    headers = _attachment(download, _file_name(result, call_id, "-structured.json"))
    return Response(body, media_type="application/json", headers=headers)
