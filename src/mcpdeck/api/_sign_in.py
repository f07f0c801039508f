"""``POST /api/servers/{name}/sign-in``: the console's "Sign in" for a server that asks for OAuth.

The answer is an event stream: ``authorize`` with the URL to open (the user signs in there, in
a tab of their own browser, and the authorization server sends that tab back to mcpdeck's
listener on 127.0.0.1), then ``signed-in`` (what was granted, and the server's status once
reconnected with its new tokens) or ``error``. Closing the stream cancels the sign-in; a new
sign-in for the same server replaces one still waiting.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import urlsplit

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from mcp.shared.auth import AuthorizationCodeResult

from mcpdeck.api._common import ApiContextDep, require_server, server_json
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import status_of
from mcpdeck.api._events import HEARTBEAT, sse, stream_response
from mcpdeck.auth import AuthorizationError, CallbackListener
from mcpdeck.errors import MCPDeckError
from mcpdeck.sign_in import LOGIN_TIMEOUT, SignedIn, sign_in, signable

__all__ = ["router"]

router = APIRouter(tags=["servers"])
logger = logging.getLogger(__name__)

Item = tuple[str, dict[str, Any]]


class _StreamInteraction:
    """The browser hand-off through the stream: the URL goes to the console, which opens it."""

    def __init__(self, send: MemoryObjectSendStream[Item], timeout: float):
        self._send = send
        self._timeout = timeout

    async def redirect(self, server: str, authorization_url: str) -> None:
        # The URL comes from the server's metadata: only a web page may be opened from the console.
        if urlsplit(authorization_url).scheme not in ("http", "https"):
            raise AuthorizationError(server, "its authorization URL is not an http(s) address; it was not opened")
        await self._send.send(("authorize", {"server": server, "url": authorization_url}))

    async def callback(self, server: str, listener: CallbackListener) -> AuthorizationCodeResult:
        return await listener.wait(self._timeout)


def _granted(done: SignedIn) -> dict[str, Any]:
    return {
        "server": done.server,
        "authorized": done.authorized,
        "scopes": list(done.scopes),
        "expiresAt": done.expires_at.isoformat() if done.expires_at else None,
        "refreshable": done.refreshable,
        "tools": done.tool_count,
    }


async def _run(ctx: ApiContext, name: str, send: MemoryObjectSendStream[Item], timeout: float) -> None:
    interaction = _StreamInteraction(send, timeout)
    with send:
        try:
            server = signable(name, ctx.host.config_of(name))
            done = await sign_in(name, server, interaction, store=ctx.auth_store, log_dir=ctx.log_dir, timeout=timeout)
            status = ctx.host.servers[name] if server.disabled else await ctx.host.reconnect(name)
        except MCPDeckError as error:
            await send.send(("error", {"code": status_of(error)[1], "message": str(error)}))
            return
        await send.send(("signed-in", _granted(done) | {"status": server_json(ctx, status)}))


@router.post(
    "/servers/{name}/sign-in",
    summary="Sign in to a server that asks for OAuth (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "authorize, then signed-in or error."}},
)
async def sign_in_server(
    ctx: ApiContextDep,
    name: str,
    timeout: Annotated[float, Query(gt=0, le=3600, description="Seconds to wait for the browser.")] = LOGIN_TIMEOUT,
) -> StreamingResponse:
    """Start the authorization; open the ``authorize`` event's URL in a browser. Closing the stream cancels it."""
    require_server(ctx, name)
    signable(name, ctx.host.config_of(name))  # a 400 now, before the stream starts
    previous = ctx.sign_ins.pop(name, None)
    if previous is not None:
        previous.cancel()
    send, receive = anyio.create_memory_object_stream[Item](8)
    scope = anyio.CancelScope()
    ctx.sign_ins[name] = scope

    async def run() -> None:
        try:
            with scope:
                await _run(ctx, name, send, timeout)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the console closed the stream: nobody is waiting for the answer
        except Exception:  # the host's task group must not see it (it would close the host)
            logger.exception("the sign-in of %r failed", name)
        finally:
            if ctx.sign_ins.get(name) is scope:
                del ctx.sign_ins[name]

    ctx.host.start_task(run, name=f"mcpdeck sign-in {name}")

    async def stream() -> AsyncIterator[bytes]:
        try:
            with receive:
                yield b": connected\n\n"
                while True:
                    item: Item | None = None
                    with anyio.move_on_after(HEARTBEAT):
                        try:
                            item = await receive.receive()
                        except anyio.EndOfStream:
                            return
                    yield b": keep-alive\n\n" if item is None else sse(*item)
        finally:
            scope.cancel()

    return stream_response(stream())
