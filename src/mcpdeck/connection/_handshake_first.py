"""The SDK's ``Client`` in mode ``auto``, made to open with the ``initialize`` handshake.

The SDK's ``Client`` (mode ``auto``) probes ``server/discover`` (protocol 2026-07-28) first and
falls back to the ``initialize`` handshake when the probe is answered with an error. mcpdeck wants
the handshake first: only that era has a back-channel, and a server built on today's SDK asks its
questions over it (``ctx.elicit``, sampling, roots in the middle of a call); on 2026-07-28 those
fail inside the server (``NoBackChannelError``), since the 2026-07-28 era carries questions only
as ``InputRequiredResult`` rounds.

``HandshakeFirst`` wraps a transport and answers the SDK's first probe itself, without sending it,
so the SDK's own fallback sends ``initialize``. A server that speaks only 2026-07-28 refuses that
with -32022 naming its versions, and the SDK then probes ``server/discover`` on the same
connection: that second probe goes out. No other ``server/discover`` reaches a server, so an old
server that stays silent on an unknown method or dies of it never sees one.

Once the connect is over (``finish``) the wrappers pass every message straight through.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import CoroutineType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import METHOD_NOT_FOUND

from mcpdeck._sdk import ReadStream, Transport, TransportStreams, WriteStream
from mcpdeck._sdk.transports import StreamWrapper

__all__ = ["DISCOVER", "HandshakeFirst"]

DISCOVER = "server/discover"

_Item = SessionMessage | Exception


class HandshakeFirst:
    """Answers one connection's first ``server/discover`` probe in the server's place; see the module docstring.

    Attributes:
        refusal: The server's error answer to ``initialize``, if it gave one.
    """

    def __init__(self) -> None:
        self._watching = True  # until finish()
        self._skipped = False  # the first probe was answered here
        self._answer: SessionMessage | None = None  # that answer, until the reader hands it to the SDK
        self._waiting: anyio.CancelScope | None = None  # the read waiting for the server meanwhile
        self._initialize: types.RequestId | None = None
        self.refusal: types.ErrorData | None = None

    def wrap(self, transport: Transport) -> Transport:
        """``transport`` with its first probe answered here."""
        return self._wrapped(transport)

    @asynccontextmanager
    async def _wrapped(self, transport: Transport) -> AsyncGenerator[TransportStreams]:
        async with transport as (read_stream, write_stream):
            yield _Reader(read_stream, self), _Writer(write_stream, self)

    def finish(self) -> None:
        """The connect is over: pass everything straight through from now on."""
        self._watching = False

    # ----- called by the wrappers ---------------------------------------------------------

    def watching(self) -> bool:
        return self._watching

    def keeps(self, item: SessionMessage) -> bool:
        """Whether ``item``, on its way to the server, is the probe to answer here instead."""
        message = item.message
        if not isinstance(message, types.JSONRPCRequest):
            return False
        if message.method == "initialize":
            self._initialize = message.id
        if message.method != DISCOVER or self._skipped:
            return False
        self._skipped = True
        error = types.ErrorData(code=METHOD_NOT_FOUND, message="mcpdeck opens with the initialize handshake")
        self._answer = SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
        if self._waiting is not None:
            self._waiting.cancel()  # the read loop is waiting for the server: hand it the answer instead
        return True

    async def receive(self, inner: Callable[[], Awaitable[_Item]]) -> _Item:
        """The next item: the probe's answer when there is one, else the server's next message."""
        if self._answer is None and not self._skipped:
            with anyio.CancelScope() as scope:
                self._waiting = scope
                try:
                    return self._seen(await inner())
                finally:
                    self._waiting = None
        answer, self._answer = self._answer, None
        return answer if answer is not None else self._seen(await inner())

    def _seen(self, item: _Item) -> _Item:
        if isinstance(item, SessionMessage):
            message = item.message
            if isinstance(message, types.JSONRPCError) and message.id == self._initialize and message.id is not None:
                self.refusal = message.error
        return item


class _Reader(StreamWrapper[ReadStream[_Item]]):
    """The read side: the probe's answer while the connect lasts, then the inner stream's own ``__anext__``."""

    __slots__ = ("_first",)

    def __init__(self, inner: ReadStream[_Item], first: HandshakeFirst):
        super().__init__(inner)
        self._first = first

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> _Item:
        if self._first.watching():
            return await self._first.receive(self._inner.receive)
        return await self._inner.receive()

    def __anext__(self) -> CoroutineType[Any, Any, _Item]:
        # Not `async`: after the connect, the inner stream's own coroutine is the one awaited.
        if self._first.watching():
            return self._first.receive(self._inner.__anext__)
        return self._inner.__anext__()

    def __aiter__(self) -> Self:
        return self


class _Writer(StreamWrapper[WriteStream[SessionMessage]]):
    """The write side: the first probe stays here."""

    __slots__ = ("_first",)

    def __init__(self, inner: WriteStream[SessionMessage], first: HandshakeFirst):
        super().__init__(inner)
        self._first = first

    def send(self, item: SessionMessage, /) -> CoroutineType[Any, Any, None]:
        # Not `async`: after the connect, the inner stream's own coroutine is the one awaited.
        if self._first.watching() and self._first.keeps(item):
            return _kept()
        return self._inner.send(item)


async def _kept() -> None:
    """What sending the probe that stays here comes to."""
