"""A streamable HTTP session the host is done with is ended on the server (HTTP DELETE), quickly.

Against a real streamable HTTP server on 127.0.0.1 that hands out sessions (the handshake
era) and counts the ones still live.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck import Host, ServerState
from tests.helpers import HandshakeOnly, serve_asgi
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


async def test_a_server_that_never_answers_the_delete_holds_up_the_exit_at_most_two_seconds(log_dir: Path) -> None:
    counter = SessionCounter(HandshakeOnly(basic.build_server().streamable_http_app()), stall_delete=True)
    async with serve_asgi(counter) as base:
        host = Host({"s": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir)
        async with host:
            assert host.servers["s"].state is ServerState.CONNECTED
            started = time.perf_counter()
        took = time.perf_counter() - started
        assert counter.deletes == 1
        assert 1.5 < took < 4, took
