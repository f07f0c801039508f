"""Transports for one server, built on the SDK's, with an end-of-stream signal.

The SDK tells a pending request that the connection closed, but nothing tells an idle
host. ``watched`` wraps a transport's read side and sets an event when it ends, so the
supervisor learns at once that an HTTP stream dropped. (mcpdeck's own stdio transport,
``_stdio``, reports the end of its read side itself, with no wrapper.)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import anyio
import httpx2
from mcp.client._transport import Transport, TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.message import SessionMessage

__all__ = ["http_transport", "sse_transport", "watched"]

_Item = SessionMessage | Exception


class _WatchedReadStream:
    """A read stream that reports its end (EOF or close) and transport errors."""

    __slots__ = ("_ended", "_inner", "_on_error")

    def __init__(self, inner: ReadStream[_Item], ended: anyio.Event, on_error: Callable[[Exception], None]):
        self._inner = inner
        self._ended = ended
        self._on_error = on_error

    async def receive(self) -> _Item:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise
        if isinstance(item, Exception):
            self._on_error(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _Item:
        # `receive` inlined: this runs for every message, and one coroutine less is measurable.
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            self._ended.set()
            raise StopAsyncIteration from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise
        if isinstance(item, Exception):
            self._on_error(item)
        return item

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


@asynccontextmanager
async def watched(
    transport: Transport, ended: anyio.Event, on_error: Callable[[Exception], None]
) -> AsyncGenerator[TransportStreams]:
    """Enter ``transport``; ``ended`` is set when its read side ends."""
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, ended, on_error), write_stream


MAX_SSE_EVENT = 1024 * 1024 * 1024
"""The largest SSE event accepted: a 1 GiB guard against a runaway stream. The SDK's
default (1 MiB) fails any tool result over 1 MiB sent as an event, which real servers do."""


@asynccontextmanager
async def http_transport(
    url: str,
    headers: dict[str, str],
    on_error_status: Callable[[int, str], None] | None = None,
    *,
    auth: httpx2.Auth | None = None,
) -> AsyncGenerator[TransportStreams]:
    """Streamable HTTP with the given headers on every request.

    ``on_error_status(status, url)`` hears of every response with a status of 400 or more:
    the SDK turns most of them into a generic JSON-RPC error, and a user needs the status.
    With an ``auth`` (OAuth), a 401 and the authorization server's answers are its business,
    and its own errors say what to do.
    """
    endpoint = httpx2.URL(url).copy_with(query=None, fragment=None)
    async with create_mcp_http_client(headers=headers or None, auth=auth) as client:
        if on_error_status is not None:
            report = on_error_status

            async def hook(response: httpx2.Response) -> None:
                status = response.status_code
                if status < 400:  # every response passes here: the cheap test first
                    return
                if auth is None or (
                    status != 401 and response.request.url.copy_with(query=None, fragment=None) == endpoint
                ):
                    report(status, str(response.request.url))

            client.event_hooks["response"].append(hook)
        async with streamable_http_client(url, http_client=client, max_sse_event_size=MAX_SSE_EVENT) as streams:
            yield streams


def sse_transport(url: str, headers: dict[str, str], *, auth: httpx2.Auth | None = None) -> Transport:
    """The legacy HTTP+SSE transport."""
    return sse_client(url, headers=headers or None, auth=auth)
