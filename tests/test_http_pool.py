"""The HTTP client's pool asks whether an idle connection was closed by reading its socket, and only that.

With calls in flight the pool holds several connections, and on every pass (two per request) it
asks each idle one whether the server closed it. Against real servers on 127.0.0.1: a streamable
HTTP server on the SDK (2026-07-28, 32 calls in flight then calls one by one), and a bare HTTP/1.1
server that closes a kept connection, which the pool must notice.
"""

from __future__ import annotations

import select
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
import anyio.to_thread
import httpcore2
import httpx2
import pytest
from anyio._backends._asyncio import SocketStream

from mcpdeck import Host
from mcpdeck._sdk.http_transports import _probed_pool  # pyright: ignore[reportPrivateUsage]
from tests.helpers import WAIT, serve_asgi
from tests.servers import basic

pytestmark = pytest.mark.anyio


class _TableCounter:
    """Counts how often anyio builds a TCP stream's table of attributes (``extra_attributes``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.count = 0
        built = SocketStream.extra_attributes

        def counted(stream: SocketStream) -> Any:
            self.count += 1
            return built.__get__(stream)

        monkeypatch.setattr(SocketStream, "extra_attributes", property(counted))


async def test_idle_connections_are_asked_about_without_anyio_s_attribute_table(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = _TableCounter(monkeypatch)
    async with serve_asgi(basic.build_server().streamable_http_app()) as base:
        with anyio.fail_after(WAIT):
            config = {"type": "http", "url": f"{base}/mcp", "protocol": "modern"}
            async with Host({"s": config}, log_dir=log_dir) as host:
                assert host.servers["s"].protocol_version == "2026-07-28"

                async def call(n: int) -> None:
                    assert (await host.call_tool("mcp__s__echo", {"text": f"call {n}"})).text() == f"call {n}"

                async with anyio.create_task_group() as tg:  # several connections in the pool
                    for n in range(32):
                        tg.start_soon(call, n)
                before = tables.count
                for n in range(20):  # each request's passes ask about the idle connections
                    await call(n)
                assert tables.count == before


def _wait_readable(sock: socket.socket) -> None:
    """Until ``sock`` is readable (at most ``WAIT`` seconds)."""
    select.select([sock], [], [], WAIT)


@asynccontextmanager
async def _closing_server() -> AsyncGenerator[tuple[int, list[anyio.abc.SocketStream]]]:
    """A bare HTTP/1.1 server: answers each request on a kept connection; the test closes them."""
    connections: list[anyio.abc.SocketStream] = []

    async def serve(stream: anyio.abc.SocketStream) -> None:
        connections.append(stream)
        try:
            async with stream:
                await answer(stream)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def answer(stream: anyio.abc.SocketStream) -> None:
        while True:
            data = await stream.receive()
            if b"\r\n\r\n" in data:
                await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port: int = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield port, connections
        tg.cancel_scope.cancel()


async def test_a_connection_the_server_closed_is_not_used_again() -> None:
    with anyio.fail_after(WAIT):
        async with _closing_server() as (port, connections), _probed_pool(httpx2.AsyncClient()) as client:
            url = f"http://127.0.0.1:{port}/"
            assert (await client.get(url)).text == "ok"
            assert len(connections) == 1
            await connections[0].aclose()  # the server ends the kept connection
            pool = cast(httpcore2.AsyncConnectionPool, client._transport._pool)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportPrivateUsage]
            kept = cast(httpcore2.AsyncNetworkStream, pool.connections[0]._connection._network_stream)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportPrivateUsage]
            sock = cast(socket.socket, kept.get_extra_info("socket"))
            # its end has reached the client (the event loop holds the socket: asked from a thread)
            await anyio.to_thread.run_sync(_wait_readable, sock)
            assert kept.get_extra_info("is_readable") is True
            assert (await client.get(url)).text == "ok"  # on a new connection, not on the closed one
            assert len(connections) == 2
