"""The JSON-RPC messages between the host and each server, kept for people to look at.

``Traffic`` holds a bounded ring of the last messages per server (``limit``, default
500), both directions, each with its time, its size and, for an answer, how long after
its request it came. Bodies longer than ``max_body`` characters are cut (the size says
how long they were). ``tapped(transport, traffic, server)`` wraps a transport's streams
so every message passes through ``Traffic.record``.

It costs nothing when it is off: a ``Host`` without ``traffic=`` wraps no stream. When it
is on, each message is serialised once more (for display) and appended to a deque; live
watchers (``watch()``) get each message as it is recorded.

Messages can carry anything a tool was given or returned (secrets included): they are
kept in memory only, never written to a file or a log.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal, Self

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from mcpdeck._sdk import ReadStream, Transport, TransportStreams, WriteStream
from mcpdeck._sdk.transports import StreamWrapper

__all__ = ["Traffic", "TrafficMessage", "tapped"]

Direction = Literal["out", "in"]
"""``out``: host → server; ``in``: server → host."""

_PENDING_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class TrafficMessage:
    """One JSON-RPC message as it passed.

    Attributes:
        seq: Its number, increasing across all servers (a watcher that reconnects asks for newer ones).
        server: The server it went to or came from.
        direction: ``out`` (to the server) or ``in`` (from it).
        at: When it passed (seconds since the epoch).
        kind: ``request``, ``notification``, ``response`` or ``error``.
        method: The method of a request or notification; for an answer, the method of the
            request it answers when that request passed here (else ``None``).
        id: The JSON-RPC id of a request or answer.
        elapsed: For an answer, seconds since its request passed the other way.
        size: The length of the whole message as JSON text.
        body: The message as JSON text, cut to ``max_body`` characters.
        truncated: Whether ``body`` was cut.
    """

    seq: int
    server: str
    direction: Direction
    at: float
    kind: str
    method: str | None
    id: str | int | None
    elapsed: float | None
    size: int
    body: str
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        """Its JSON form (camelCase keys)."""
        return {
            "seq": self.seq,
            "server": self.server,
            "direction": self.direction,
            "at": self.at,
            "kind": self.kind,
            "method": self.method,
            "id": self.id,
            "elapsed": self.elapsed,
            "size": self.size,
            "body": self.body,
            "truncated": self.truncated,
        }


class Traffic:
    """The recent JSON-RPC messages of every server, in memory.

    Args:
        limit: Messages kept per server (the oldest go first).
        max_body: Characters of a message's JSON text kept for display.
    """

    def __init__(self, limit: int = 500, max_body: int = 16_384):
        if limit < 1 or max_body < 1:
            raise ValueError("limit and max_body must be at least 1")
        self.limit = limit
        self.max_body = max_body
        self._rings: dict[str, deque[TrafficMessage]] = {}
        self._pending: dict[tuple[str, Direction, str | int], tuple[float, str]] = {}
        self._seq = itertools.count(1)
        self._watchers: set[MemoryObjectSendStream[TrafficMessage]] = set()

    def record(self, server: str, direction: Direction, message: SessionMessage) -> None:
        """Keep one message (called by the tap for every message that passes)."""
        now = time.time()
        inner: Any = message.message
        method: str | None = getattr(inner, "method", None)
        request_id: str | int | None = getattr(inner, "id", None)
        elapsed: float | None = None
        if method is not None:
            kind = "request" if request_id is not None else "notification"
            if request_id is not None:
                pending = self._pending
                if len(pending) >= _PENDING_LIMIT:  # answers that never came: forget the oldest
                    del pending[next(iter(pending))]
                pending[(server, direction, request_id)] = (now, method)
        else:
            kind = "error" if getattr(inner, "error", None) is not None else "response"
            if request_id is not None:
                asked = self._pending.pop((server, "in" if direction == "out" else "out", request_id), None)
                if asked is not None:
                    elapsed, method = now - asked[0], asked[1]
        text = inner.model_dump_json(by_alias=True, exclude_unset=True)
        size = len(text)
        cut = size > self.max_body
        entry = TrafficMessage(
            seq=next(self._seq),
            server=server,
            direction=direction,
            at=now,
            kind=kind,
            method=method,
            id=request_id,
            elapsed=elapsed,
            size=size,
            body=text[: self.max_body] if cut else text,
            truncated=cut,
        )
        ring = self._rings.get(server)
        if ring is None:
            ring = self._rings[server] = deque(maxlen=self.limit)
        ring.append(entry)
        for watcher in tuple(self._watchers):
            with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                watcher.send_nowait(entry)

    def recent(self, server: str | None = None, *, after: int = 0, limit: int | None = None) -> list[TrafficMessage]:
        """The kept messages, oldest first: of one server or of all, newer than ``after``, the last ``limit``."""
        if server is not None:
            messages = [m for m in self._rings.get(server, ()) if m.seq > after]
        else:
            messages = sorted((m for ring in self._rings.values() for m in ring if m.seq > after), key=lambda m: m.seq)
        return messages[-limit:] if limit is not None and limit >= 0 else messages

    def clear(self, server: str | None = None) -> None:
        """Forget the kept messages of one server, or of all."""
        if server is None:
            self._rings.clear()
        else:
            self._rings.pop(server, None)

    @contextmanager
    def watch(self, buffer: int = 1000) -> Generator[MemoryObjectReceiveStream[TrafficMessage]]:
        """Every message from now on, as it is recorded; past ``buffer`` unread ones, newer ones are dropped."""
        send, receive = anyio.create_memory_object_stream[TrafficMessage](buffer)
        self._watchers.add(send)
        try:
            yield receive
        finally:
            self._watchers.discard(send)
            send.close()
            receive.close()

    def close_watchers(self) -> None:
        """End every watcher's stream (the process is stopping)."""
        for send in tuple(self._watchers):
            send.close()


class _TappedRead(StreamWrapper[ReadStream[SessionMessage | Exception]]):
    __slots__ = ("_record", "_server")

    def __init__(self, inner: ReadStream[SessionMessage | Exception], traffic: Traffic, server: str):
        super().__init__(inner)
        self._record = traffic.record
        self._server = server

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if isinstance(item, SessionMessage):
            self._record(self._server, "in", item)
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        item = await self._inner.__anext__()
        if isinstance(item, SessionMessage):
            self._record(self._server, "in", item)
        return item


class _TappedWrite(StreamWrapper[WriteStream[SessionMessage]]):
    __slots__ = ("_record", "_server")

    def __init__(self, inner: WriteStream[SessionMessage], traffic: Traffic, server: str):
        super().__init__(inner)
        self._record = traffic.record
        self._server = server

    async def send(self, item: SessionMessage, /) -> None:
        self._record(self._server, "out", item)
        await self._inner.send(item)


@asynccontextmanager
async def tapped(transport: Transport, traffic: Traffic, server: str) -> AsyncGenerator[TransportStreams]:
    """Enter ``transport``; every message either way is recorded in ``traffic`` under ``server``."""
    async with transport as (read_stream, write_stream):
        yield _TappedRead(read_stream, traffic, server), _TappedWrite(write_stream, traffic, server)
