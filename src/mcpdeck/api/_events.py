"""``/api/events``: every typed host event as server-sent events, and the event → JSON mapping.

Each event is one SSE message: ``event: <type>`` and ``data: <JSON>``, where the JSON is
the event dataclass with camelCase keys and a ``type`` field (its class name, e.g.
``ServerStatusChanged``). Tool-call events of a call made through the API also carry
``requestId``, the ``callId`` the call was made with. In a fleet on PostgreSQL, another replica's
events come too (``RemoteEvent``), as that replica said them, with ``"remote": true`` and its
``replica`` id. A comment line is sent every 15 s
so proxies and browsers keep the stream open; it ends when the process stops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import anyio
from fastapi import APIRouter
from starlette.responses import StreamingResponse

from mcpdeck.api._common import ApiContextDep
from mcpdeck.api._context import ApiContext
from mcpdeck.api._respond import dumps
from mcpdeck.events import Event, RemoteEvent

__all__ = ["event_json", "router", "sse"]

router = APIRouter(tags=["events"])
HEARTBEAT = 15.0


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def event_json(event: Event, ctx: ApiContext | None = None) -> dict[str, Any]:
    """An event as JSON: its fields in camelCase and ``type``; another replica's as it said it, marked ``remote``
    with its ``replica``."""
    if isinstance(event, RemoteEvent):
        return {**event.data, "type": event.kind, "replica": event.replica, "remote": True}
    data: dict[str, Any] = {"type": type(event).__name__}
    for item in dataclasses.fields(event):
        if item.metadata.get("json", True):  # a call's result itself is left out (it can be megabytes)
            data[_camel(item.name)] = _value(getattr(event, item.name))
    call_id = data.get("callId")
    if ctx is not None and isinstance(call_id, str):
        data["requestId"] = ctx.request_id_of(call_id)
    return data


def sse(kind: str, data: Any) -> bytes:
    """One server-sent event."""
    return f"event: {kind}\ndata: {dumps(data)}\n\n".encode()


def stream_response(stream: AsyncIterator[bytes]) -> StreamingResponse:
    """An event-stream answer of ``stream``."""
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


@router.get(
    "/events",
    summary="Stream host events (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."}},
)
async def events(ctx: ApiContextDep) -> StreamingResponse:
    """Every host event as it happens: server status, tools/resources/prompts changed, tool calls and
    their progress, resource updates, server log messages, config changes and reload failures."""

    async def stream() -> AsyncIterator[bytes]:
        with ctx.feed() as feed:
            yield b": connected\n\n"  # subscribed: from here on, nothing is missed
            while True:
                event: Event | None = None
                with anyio.move_on_after(HEARTBEAT):  # no cancel scope is open across a yield
                    try:
                        event = await feed.receive()
                    except anyio.EndOfStream:  # the process is stopping
                        return
                if event is None:
                    yield b": keep-alive\n\n"
                    continue
                data = event_json(event, ctx)
                yield sse(data["type"], data)

    return stream_response(stream())
