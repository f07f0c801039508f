"""A streamable HTTP session the host is done with is ended on the server (HTTP DELETE), quickly.

Against a real streamable HTTP server on 127.0.0.1 that hands out sessions (the handshake
era) and counts the ones still live.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck import Host, ServerState
from tests.helpers import WAIT, HandshakeOnly, serve_asgi
from tests.servers import basic

pytestmark = pytest.mark.anyio


class SessionCounter:
    """An ASGI wrapper that counts the sessions the server opened and the ones a DELETE ended.

    With ``stall_delete`` a DELETE is never answered (a server that hangs on it).
    """

    def __init__(self, app: ASGIApp, *, stall_delete: bool = False):
        self._app = app
        self._stall_delete = stall_delete
        self.opened: set[str] = set()
        self.ended: set[str] = set()
        self.deletes = 0

    @property
    def live(self) -> set[str]:
        """Sessions opened and not ended."""
        return self.opened - self.ended

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        session = next((v.decode() for k, v in scope["headers"] if k == b"mcp-session-id"), None)
        if scope["method"] == "DELETE":
            self.deletes += 1
            if self._stall_delete:
                await anyio.sleep_forever()

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                status: int = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        self.opened.add(value.decode())
                if scope["method"] == "DELETE" and session is not None and 200 <= status < 300:
                    self.ended.add(session)
            await send(message)

        await self._app(scope, receive, record)


async def test_sessions_are_ended_on_disconnect_reconnect_and_host_exit(log_dir: Path) -> None:
    counter = SessionCounter(HandshakeOnly(basic.build_server().streamable_http_app()))
    async with serve_asgi(counter) as base:
        async with Host({"s": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir) as host:
            assert host.servers["s"].state is ServerState.CONNECTED
            assert len(counter.live) == 1
            first = set(counter.live)
            assert (await host.reconnect("s")).state is ServerState.CONNECTED
            assert len(counter.live) == 1 and counter.live != first  # the old one was ended, a new one opened
            assert (await host.disconnect("s")).state is ServerState.STOPPED
            assert counter.live == set()
            assert (await host.reconnect("s")).state is ServerState.CONNECTED
            assert len(counter.live) == 1
        assert counter.live == set()
        assert len(counter.opened) == 3


async def test_a_server_that_never_answers_the_delete_holds_up_the_exit_only_until_the_delete_s_limit(
    log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    counter = SessionCounter(HandshakeOnly(basic.build_server().streamable_http_app()), stall_delete=True)
    async with serve_asgi(counter) as base:
        host = Host({"s": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir)
        with caplog.at_level(logging.INFO, logger="mcpdeck._sdk.http_transports"), anyio.fail_after(WAIT):
            async with host:  # the DELETE is never answered: an exit that waited for it would never end
                assert host.servers["s"].state is ServerState.CONNECTED
        assert counter.deletes == 1  # it was sent, and waited for up to END_SESSION_TIMEOUT
        assert "did not answer the DELETE that ends its session in time" in caplog.text


class ConnectionCounter:
    """An ASGI wrapper that notes the TCP connection (the client's address and port) of every POST."""

    def __init__(self, app: ASGIApp):
        self._app = app
        self.posts: list[tuple[str, int]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            host, port = scope["client"]
            self.posts.append((host, port))
        await self._app(scope, receive, send)


async def test_calls_answered_with_sse_streams_share_one_connection(log_dir: Path) -> None:
    # A handshake-era SDK server answers each POST with an SSE stream. The SDK closes that
    # stream once the answer has come, before its end, which costs the connection: one new
    # TCP connection per call. The host reads the stream's end first and keeps it.
    counter = ConnectionCounter(HandshakeOnly(basic.build_server().streamable_http_app()))
    async with serve_asgi(counter) as base:
        with anyio.fail_after(WAIT):
            async with Host({"s": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir) as host:
                before = len(counter.posts)
                for n in range(10):
                    result = await host.call_tool("mcp__s__echo", {"text": f"call {n}"})
                    assert result.text() == f"call {n}"
                calls = counter.posts[before:]
    assert len(calls) == 10
    assert len(set(calls)) == 1, calls
