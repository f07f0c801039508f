"""``/api/traffic``: the JSON-RPC messages between the host and its servers (the console's traffic pane).

``GET /api/servers/{name}/traffic`` and ``GET /api/traffic`` read the recent messages kept
in memory (``Host.traffic``); ``GET /api/traffic/stream`` sends each new message as a
server-sent event ``message`` while someone listens. Messages are shown as they passed,
tool arguments and results included: the console is the user's own. Nothing here is
written to a file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Query
from starlette.responses import StreamingResponse

from mcpdeck.api._common import ApiContextDep, require_server
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._events import HEARTBEAT, sse, stream_response
from mcpdeck.api._models import TrafficOut
from mcpdeck.traffic import Traffic, TrafficMessage

__all__ = ["router"]

router = APIRouter(tags=["traffic"])

After = Annotated[int, Query(ge=0, description="Only messages with a larger `seq` (to catch up after a gap).")]
Limit = Annotated[int, Query(ge=1, le=5000, description="At most this many, the newest.")]


def _traffic(ctx: ApiContext) -> Traffic:
    traffic = ctx.host.traffic
    if traffic is None:
        raise ApiError(404, "not-found", "this host does not record traffic; it is recorded by `mcpdeck serve`")
    return traffic


def _out(traffic: Traffic, messages: list[TrafficMessage]) -> TrafficOut:
    return TrafficOut(limit=traffic.limit, maxBody=traffic.max_body, messages=[m.to_json() for m in messages])


@router.get("/servers/{name}/traffic", summary="A server's recent JSON-RPC messages")
async def server_traffic(ctx: ApiContextDep, name: str, after: After = 0, limit: Limit = 500) -> TrafficOut:
    """The messages kept for one server, oldest first, both directions, with timing."""
    require_server(ctx, name)
    traffic = _traffic(ctx)
    return _out(traffic, traffic.recent(name, after=after, limit=limit))


@router.get("/traffic", summary="Every server's recent JSON-RPC messages")
async def all_traffic(ctx: ApiContextDep, after: After = 0, limit: Limit = 500) -> TrafficOut:
    """The messages kept for every server, oldest first (by `seq`)."""
    traffic = _traffic(ctx)
    return _out(traffic, traffic.recent(after=after, limit=limit))


@router.get(
    "/traffic/stream",
    summary="Stream JSON-RPC messages as they pass (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."}},
)
async def traffic_stream(ctx: ApiContextDep, server: str | None = None) -> StreamingResponse:
    """Each message (event `message`, data as in `GET /api/traffic`) from now on; of one server with `server`."""
    if server is not None:
        require_server(ctx, server)
    traffic = _traffic(ctx)

    async def stream() -> AsyncIterator[bytes]:
        with traffic.watch() as feed:
            yield b": connected\n\n"
            while not ctx.shutdown.is_set():
                message: TrafficMessage | None = None
                with anyio.move_on_after(HEARTBEAT):
                    try:
                        message = await feed.receive()
                    except anyio.EndOfStream:
                        return
                if message is None:
                    yield b": keep-alive\n\n"
                elif server is None or message.server == server:
                    yield sse("message", message.to_json())

    return stream_response(stream())
