"""``/api/tools``: list (filter by server and text), one tool's schema, call (progress on the
event stream, cancel by id); ``/api/calls/{id}/cancel``."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query

from mcpdeck.api._common import Ctx, require_server
from mcpdeck.api._errors import ApiError
from mcpdeck.api._models import CallIn, ToolOut, ToolResultOut
from mcpdeck.catalog import CatalogTool
from mcpdeck.errors import ToolNotFoundError

__all__ = ["router"]

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


@router.post("/tools/{name}/call", response_model=ToolResultOut, summary="Call a tool")
async def call_tool(ctx: Ctx, name: str, body: CallIn) -> dict[str, Any]:
    """Call a tool and answer with its result (``mcpdeck call --json``), ``isError`` when the tool failed.

    While it runs, ``ToolCallStarted``, ``ToolCallProgress`` and ``ToolCallFinished`` events
    carry ``requestId`` = ``callId`` on ``/api/events``; ``POST /api/calls/{callId}/cancel``
    stops it (the answer is then 409 ``cancelled``).
    """
    call_id = body.callId or uuid.uuid4().hex
    if ctx.busy(call_id):
        raise ApiError(409, "call-exists", f"a call with id {call_id!r} is already running; use another callId")
    with anyio.CancelScope() as scope:
        ctx.begin_call(call_id, scope)
        try:
            result = await ctx.host.call_tool(name, body.arguments, timeout=body.timeout)
        finally:
            ctx.end_call(call_id)
        return result.to_json() | {"callId": call_id}
    raise ApiError(409, "cancelled", f"the call {call_id!r} was cancelled")


@router.post("/calls/{call_id}/cancel", summary="Cancel a running call")
async def cancel_call(ctx: Ctx, call_id: str) -> dict[str, str]:
    """Cancel a tool call in flight, by the ``callId`` it was made with (or the host's id from its events)."""
    if not ctx.cancel_call(call_id):
        raise ApiError(404, "call-not-found", f"no call {call_id!r} is running")
    return {"cancelled": call_id}
