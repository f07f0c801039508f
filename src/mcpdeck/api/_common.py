"""Helpers every router uses: the context, a server's JSON status, unknown-server errors."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request

from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._secrets import mask_url
from mcpdeck.status import ServerState, ServerStatus

__all__ = [
    "ApiContextDep",
    "ChangesConfig",
    "changing",
    "get_ctx",
    "require_server",
    "server_json",
    "until_disconnected",
]


async def get_ctx(request: Request) -> ApiContext:
    """The API's shared state (async: a sync dependency would cost a worker-thread hop a request)."""
    return request.app.state.ctx


ApiContextDep = Annotated[ApiContext, Depends(get_ctx)]
"""An endpoint's parameter for the API's shared state: ``ctx: ApiContextDep``."""


@contextmanager
def changing(ctx: ApiContext) -> Generator[None]:
    """While the host changes the config file (for ``ChangesConfig``, or around a part of an endpoint)."""
    # The host writes the file before (not atomically with) switching what runs; while such
    # a change is in flight the config follower holds off, so it never applies a half-made change.
    ctx.changing += 1
    try:
        yield
    finally:
        ctx.changing -= 1


async def _changing(request: Request) -> AsyncGenerator[None]:
    with changing(request.app.state.ctx):
        yield


ChangesConfig = Depends(_changing)
"""For endpoints that change the config file: ``dependencies=[ChangesConfig]``."""


async def until_disconnected(request: Request) -> None:
    """Return once the client has gone (it closed the connection): for a long wait it could abandon.

    Call it only once the body has been read (FastAPI has read it for a parsed body)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


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
