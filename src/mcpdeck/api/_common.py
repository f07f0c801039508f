"""Helpers every router uses: the context, a server's JSON status, unknown-server errors."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request

from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._secrets import mask_url
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["Changing", "Ctx", "get_ctx", "require_server", "server_json"]


async def get_ctx(request: Request) -> ApiContext:
    """The API's shared state (async: a sync dependency would cost a worker-thread hop a request)."""
    return request.app.state.ctx


Ctx = Annotated[ApiContext, Depends(get_ctx)]


async def _changing(request: Request) -> AsyncGenerator[None]:
    # The host writes the file before (not atomically with) switching what runs; while such
    # a request is in flight the config follower holds off, so it never applies a half-made change.
    ctx: ApiContext = request.app.state.ctx
    ctx.changing += 1
    try:
        yield
    finally:
        ctx.changing -= 1


Changing = Depends(_changing)
"""For endpoints that change the config file: ``dependencies=[Changing]``."""


def server_json(ctx: ApiContext, status: ServerStatus) -> dict[str, Any]:
    """``ServerStatus.to_json()`` (as ``mcpdeck list --json``), the URL's query masked, plus counts and uptime."""
    data = status.to_json()
    if status.transport not in ("stdio", "in-process"):
        data["target"] = mask_url(status.target)
    stats = ctx.stats.get(status.name)
    connected = status.state is ServerState.CONNECTED and status.connected_at is not None
    data["uptime"] = (
        (datetime.now(UTC) - status.connected_at).total_seconds() if connected and status.connected_at else None
    )
    data["calls"] = stats.calls if stats else 0
    data["errors"] = stats.errors if stats else 0
    data["lastCallAt"] = stats.last_call_at.isoformat() if stats and stats.last_call_at else None
    return data


def _where(ctx: ApiContext) -> str:
    return f" in {ctx.store.path}" if ctx.store is not None else ""


def require_server(ctx: ApiContext, name: str) -> ServerStatus:
    """The status of a configured server, or a 404 that says so (as the CLI words it)."""
    status = ctx.host.servers.get(name)
    if status is None:
        raise ApiError(404, "server-not-found", f"no server named {name!r}{_where(ctx)}")
    return status
