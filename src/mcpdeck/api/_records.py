"""``/api/servers/{name}/logs`` (tail and follow), ``/api/history``, ``/api/permissions``, ``/api/host``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Query
from starlette.responses import StreamingResponse

from mcpdeck._util.log_tail import last_lines, read_new
from mcpdeck._util.version import __version__
from mcpdeck.api._common import ApiContextDep, ChangesConfig, require_server
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._events import sse, stream_response
from mcpdeck.api._models import (
    ConversationOut,
    ConversationsOut,
    HistoryCallOut,
    HistoryOut,
    HostOut,
    LogOut,
    PermissionsIn,
    PermissionsOut,
)
from mcpdeck.history import History, ToolCallRecord
from mcpdeck.permissions import PermissionRules, parse_permissions

__all__ = ["router"]

router = APIRouter()
FOLLOW_INTERVAL = 0.25
"""Seconds between looks at a followed log file."""


# ----- logs ----------------------------------------------------------------------------------


def _log_path(ctx: ApiContext, name: str) -> Path:
    status = require_server(ctx, name)
    if status.log_path is not None:
        return status.log_path
    if status.transport == "in-process":
        raise ApiError(404, "no-log", f"{name!r} runs in-process; it has no log file")
    raise ApiError(404, "no-log", f"no log yet for {name!r}; it is written when the server starts")


@router.get("/servers/{name}/logs", response_model=LogOut, tags=["logs"], summary="Tail a server's log")
async def tail_log(ctx: ApiContextDep, name: str, lines: int = Query(default=50, ge=0, le=100_000)) -> dict[str, Any]:
    """The last lines of the server's log: its stderr, its MCP log messages, the host's notes (``mcpdeck logs``)."""
    path = _log_path(ctx, name)
    return {"server": name, "path": str(path), "lines": await anyio.to_thread.run_sync(last_lines, path, lines)}


@router.get(
    "/servers/{name}/logs/follow",
    tags=["logs"],
    summary="Follow a server's log (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "One `line` event per log line."}},
)
async def follow_log(
    ctx: ApiContextDep, name: str, lines: int = Query(default=50, ge=0, le=100_000)
) -> StreamingResponse:
    """The last ``lines`` lines, then every new line as it is written: one ``line`` event each, ``{"line": ...}``."""
    path = _log_path(ctx, name)

    async def stream() -> AsyncIterator[bytes]:
        yield b": connected\n\n"
        for line in await anyio.to_thread.run_sync(last_lines, path, lines):
            yield sse("line", {"server": name, "line": line})
        offset, _ = await anyio.to_thread.run_sync(read_new, path, 0)
        partial = b""
        while not ctx.shutdown.is_set():
            await anyio.sleep(FOLLOW_INTERVAL)
            offset, data = await anyio.to_thread.run_sync(read_new, path, offset)
            if not data:
                continue
            *complete, partial = (partial + data).split(b"\n")
            for line in complete:
                yield sse("line", {"server": name, "line": line.decode("utf-8", "replace")})

    return stream_response(stream())


# ----- history -------------------------------------------------------------------------------


def _history(ctx: ApiContext) -> History:
    if ctx.history is None:
        raise ApiError(404, "history-off", "history is off ($MCPDECK_HISTORY=off)")
    return ctx.history


@router.get("/history/calls", response_model=HistoryOut, tags=["history"], summary="Tool calls")
async def history_calls(
    ctx: ApiContextDep,
    limit: int = Query(default=50, ge=1, le=10_000),
    server: str | None = None,
    status: Literal["running", "ok", "tool-error", "error", "denied", "interrupted"] | None = None,
    q: str | None = Query(default=None, description="Only calls whose tool name holds this text."),
    replica: str | None = Query(default=None, description="Only the calls of this replica (`serve --replica-id`)."),
) -> dict[str, Any]:
    """Tool calls of every replica on the store, newest first, with who approved each and the replica that
    made it (``mcpdeck history --json``); the filters apply before ``limit``."""
    db = _history(ctx)

    def read() -> tuple[list[ToolCallRecord], int]:
        calls = db.tool_calls(limit=limit, server=server, status=status, text=q, replica=replica)
        return calls, db.count_tool_calls(server=server, status=status, text=q, replica=replica)

    calls, total = await anyio.to_thread.run_sync(read)
    return {"path": db.where, "total": total, "toolCalls": [c.to_json() for c in calls]}


@router.get("/history/calls/{call_id}", response_model=HistoryCallOut, tags=["history"], summary="One tool call")
async def history_call(ctx: ApiContextDep, call_id: str) -> dict[str, Any]:
    """One call by its id (``callId`` in the list), with ``result``: the start of its result as text, as the
    history keeps it (``RESULT_CHARS``; absent for a call that failed, or one recorded before results were)."""
    db = _history(ctx)
    found = await anyio.to_thread.run_sync(lambda: db.tool_call(call_id))
    if found is None:
        raise ApiError(404, "call-not-found", f"no call {call_id!r} in {db.where}")
    return {"path": db.where, "toolCall": found.to_json()}


@router.get("/history/conversations", response_model=ConversationsOut, tags=["history"], summary="Conversations")
async def history_conversations(ctx: ApiContextDep, limit: int = Query(default=30, ge=1, le=10_000)) -> dict[str, Any]:
    """Conversations, newest first (``mcpdeck history --conversations --json``)."""
    db = _history(ctx)
    found = await anyio.to_thread.run_sync(lambda: db.conversations(limit=limit))
    return {"path": db.where, "conversations": found}


@router.get(
    "/history/conversations/{conversation}", response_model=ConversationOut, tags=["history"], summary="A conversation"
)
async def history_conversation(ctx: ApiContextDep, conversation: int) -> dict[str, Any]:
    """One conversation's messages (``mcpdeck history --conversation ID --json``)."""
    db = _history(ctx)
    messages = await anyio.to_thread.run_sync(lambda: db.messages(conversation))
    if not messages:
        raise ApiError(404, "conversation-not-found", f"no conversation {conversation} in {db.where}")
    return {"path": db.where, "id": conversation, "messages": messages}


# ----- permissions ---------------------------------------------------------------------------


def _rules_json(rules: PermissionRules, problem: str | None) -> dict[str, Any]:
    return {"allow": list(rules.allow), "ask": list(rules.ask), "deny": list(rules.deny), "problem": problem}


@router.get("/permissions", response_model=PermissionsOut, tags=["permissions"], summary="Read the rules")
async def get_permissions(ctx: ApiContextDep) -> dict[str, Any]:
    """The ``permissions`` rules in force (``allow`` / ``ask`` / ``deny`` patterns)."""
    gate = ctx.host.permissions
    return _rules_json(gate.rules, gate.problem)


@router.put(
    "/permissions",
    response_model=PermissionsOut,
    tags=["permissions"],
    summary="Replace the rules",
    dependencies=[ChangesConfig],
)
async def put_permissions(ctx: ApiContextDep, body: PermissionsIn) -> dict[str, Any]:
    """Check the new rules, save them to the config file's ``permissions`` object, and apply them."""
    section = {kind: patterns for kind, patterns in body.model_dump().items() if patterns}
    rules = parse_permissions({"permissions": section})
    if ctx.store is not None:

        def change(doc: dict[str, Any]) -> None:
            if section:
                doc["permissions"] = section
            else:
                doc.pop("permissions", None)

        store = ctx.store
        await anyio.to_thread.run_sync(lambda: store.edit(change))
    gate = ctx.host.permissions
    gate.rules, gate.problem = rules, None
    return _rules_json(rules, None)


# ----- the process ---------------------------------------------------------------------------


def _host_json(ctx: ApiContext) -> dict[str, Any]:
    problems = {key or "": value for key, value in ctx.problems().items()}
    return {
        "version": __version__,
        "pid": os.getpid(),
        "config": str(ctx.store.path) if ctx.store is not None else None,
        "startedAt": ctx.started_at.isoformat(),
        "enabled": ctx.host.enabled,
        "problems": problems,
        "replica": ctx.replica,
    }


@router.get("/host", response_model=HostOut, tags=["host"], summary="The process")
async def host_info(ctx: ApiContextDep) -> dict[str, Any]:
    """Version, pid, config file, the global switch, and what the last config edit could not apply."""
    return _host_json(ctx)


@router.post(
    "/host/{switch}", response_model=HostOut, tags=["host"], summary="The global switch", dependencies=[ChangesConfig]
)
async def host_switch(ctx: ApiContextDep, switch: Literal["enable", "disable"]) -> dict[str, Any]:
    """Turn every server off (``disable``: saved as ``mcpEnabled: false``) or on again."""
    await ctx.host.set_enabled(switch == "enable")
    return _host_json(ctx)
