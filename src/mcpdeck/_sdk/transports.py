"""What every transport of a server shares: an end-of-stream signal, size bounds, the unreadable.

The SDK tells a pending request that the connection closed, but nothing tells an idle
host. ``watched`` wraps a transport's read side and sets an event when it ends, so the
supervisor learns at once that an HTTP stream dropped. (mcpdeck's own stdio transport,
``_stdio``, reports the end of its read side itself, with no wrapper.) The streamable HTTP
and SSE transports themselves are in ``_http_transports``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

import anyio
import mcp_types as types
import pydantic_core
from mcp.client._transport import Transport, TransportStreams
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCResponse,
)
from pydantic import ValidationError

__all__ = [
    "TOO_DEEP",
    "EndSignal",
    "MessageTooLargeError",
    "NotAMessageError",
    "PipeReading",
    "StreamEnd",
    "StreamWrapper",
    "parse_message",
    "size_text",
    "unreadable_reason",
    "watched",
]

logger = logging.getLogger(__name__)

_Item = SessionMessage | Exception


def parse_message(line: bytes | bytearray) -> SessionMessage:
    """The JSON-RPC message one line of a stdio stream holds (a server's, or a gateway client's).

    Raises ``ValueError`` (pydantic's errors included) or ``RecursionError`` when it holds none.
    """
    # Parse first (jiter refuses nesting past ~200 levels), then validate: for a small message
    # this is as fast as pydantic's JSON validator for a small message and several times faster
    # for a big one (bench/RESULTS.md). Strings are not cached: pydantic's global string cache
    # would otherwise keep up to 16k of every server's names and descriptions alive (what that
    # costs per server: ``python -m bench.footprint``).
    return SessionMessage(
        types.jsonrpc_message_adapter.validate_python(pydantic_core.from_json(line, cache_strings=False), by_name=False)
    )


class PipeReading(asyncio.Protocol):
    """What the event loop's pipe transport reads, handed to ``arrived`` as it comes (``b""``: the end), with
    no stream in between; ``failed`` hears why reading failed, if it did."""

    def __init__(self, arrived: Callable[[bytes], None], failed: Callable[[Exception], None]):
        self._arrived = arrived
        self._failed = failed

    def data_received(self, data: bytes) -> None:
        self._arrived(data)

    def eof_received(self) -> bool:
        self._arrived(b"")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self._failed(exc)
        self._arrived(b"")


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_Inner = TypeVar("_Inner", bound=_Closable)


class EndSignal(Protocol):
    """What a transport sets when its read side ends (an ``anyio.Event``, or a connection's ``Flag``)."""

    def set(self) -> None: ...


class StreamEnd:
    """One end of a hand-made stream: closing it (or leaving ``async with``) only marks it ``closed``;
    the stream's own read or write checks the mark."""

    __slots__ = ("closed",)

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        self.closed = True
        return None


class StreamWrapper(Generic[_Inner]):
    """A stream around another (``_inner``): closing it, or leaving ``async with``, closes the inner one.

    The wrappers that watch, tap or probe a transport's streams are one of these each.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: _Inner) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


def size_text(size: int) -> str:
    """A byte count for people: ``128 MiB``, ``1.5 KiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} bytes"


class MessageTooLargeError(Exception):
    """A server sent one message larger than the limit; the stdio transport ends the session on it."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"the server sent a message larger than {size_text(limit)}, mcpdeck's limit for one message; "
            'if it is legitimate, raise "maxMessageSize" (bytes) in its config'
        )


class NotAMessageError(ValueError):
    """A server sent something that is not a JSON-RPC message: ``text`` is (the start of) it,
    ``where`` what it came in ("a line on stdout", "an SSE event")."""

    def __init__(self, text: str, reason: str, where: str = "a line on stdout"):
        self.text = text
        self.reason = reason
        self.where = where
        super().__init__(f"{where} that is not an MCP message ({reason}): {text}")


TOO_DEEP = "it is nested too deeply to read"


def unreadable_reason(error: ValueError | RecursionError) -> str:
    """Why a message could not be read, in one short phrase (no validation dump); ``TOO_DEEP`` for nesting."""
    if isinstance(error, RecursionError) or "recursion limit" in str(error):
        return TOO_DEEP
    if isinstance(error, ValidationError):
        kinds = {e["type"] for e in error.errors()}
        return "it is not valid JSON" if "json_invalid" in kinds else "it is JSON but not a JSON-RPC message"
    return "it is not valid JSON"


def held_result(item: SessionMessage | Exception) -> JSONRPCResponse | None:
    """The response whose result the SDK's read loop would keep alive after handing it on, if ``item`` is one.

    The session's read loop keeps the last message it read in a local until the next one
    arrives, and a response's ``result`` is the raw JSON of the answer: a tool list of
    1000 tools (~5 MB as Python objects) or a 5 MB tool result would stay in memory for as
    long as the server is quiet. The loop hands ``result`` to the waiting caller while it
    dispatches, so once it asks for the next message the response's own reference can go:
    read streams call ``let_go`` on it then (``python -m bench.footprint`` shows the gain).
    """
    if isinstance(item, SessionMessage) and type(item.message) is JSONRPCResponse:
        return item.message
    return None


def let_go(response: JSONRPCResponse) -> None:
    """Drop a handed-on response's reference to its result (the caller holds its own)."""
    response.result = {}


class _WatchedReadStream(StreamWrapper[ReadStream[_Item]]):
    """A read stream that reports its end (EOF or close) and transport errors."""

    __slots__ = ("_ended", "_held", "_on_error")

    def __init__(self, inner: ReadStream[_Item], ended: EndSignal, on_error: Callable[[Exception], None]):
        super().__init__(inner)
        self._ended = ended
        self._on_error = on_error
        self._held: JSONRPCResponse | None = None  # the last response handed on (see ``held_result``)

    async def receive(self) -> _Item:
        if self._held is not None:
            let_go(self._held)
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise
        if isinstance(item, Exception):
            self._on_error(item)
        self._held = held_result(item)
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _Item:
        # `receive` inlined: this runs for every message, and one coroutine less is measurable.
        if self._held is not None:
            let_go(self._held)
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                self._ended.set()
                raise StopAsyncIteration from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._ended.set()
                raise
            if not isinstance(item, Exception):
                self._held = held_result(item)
                return item
            # Reported here, once; the session would only hand it to the message handler again.
            self._on_error(item)


@asynccontextmanager
async def watched(
    transport: Transport, ended: EndSignal, on_error: Callable[[Exception], None]
) -> AsyncGenerator[TransportStreams]:
    """Enter ``transport``; ``ended`` is set when its read side ends."""
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, ended, on_error), write_stream
