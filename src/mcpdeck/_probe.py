"""Which protocol era a server speaks: a short bound on the SDK's ``server/discover`` probe, and its verdict.

The SDK's ``Client`` (mode ``auto``) first sends ``server/discover`` and falls back to the
``initialize`` handshake on any JSON-RPC error, but it waits up to 10 s for an answer, and
servers built on SDK 1.2 to 1.6 never answer a method they do not know. ``ProbeWatch`` wraps a
transport and watches that one request: if no answer comes within ``bound`` seconds it hands
the SDK an error in its place, so the SDK's own fallback sends ``initialize`` on the same
connection. A slow-starting modern server loses nothing by this: it answers ``initialize``
or says which versions it speaks (-32022), and the SDK probes again.

After the probe the wrappers pass every message straight through (no extra frame per message).

The verdict (``understood``) says whether the server answered the probe, and if not, why
(``reason``): a timeout, its error, or the pipe closing (the case where a stdio child must be
started again, with the handshake).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import CoroutineType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.client._transport import Transport, TransportStreams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from mcpdeck._transports import Around

__all__ = ["DISCOVER", "PROBE_BOUND", "ProbeWatch"]

DISCOVER = "server/discover"
PROBE_BOUND = 0.75
"""Seconds a server has to answer ``server/discover`` before the handshake is tried (stdio, SSE)."""
_NOT_ANSWERED = -32001  # REQUEST_TIMEOUT: any JSON-RPC error makes the SDK fall back to the handshake

_Item = SessionMessage | Exception


class ProbeWatch:
    """Watches one connection's ``server/discover``; see the module docstring.

    Attributes:
        understood: None until the probe is settled; True when the server answered it (even
            late, or with -32022: the server knows the method); False when it did not.
        reason: Why not, in words, after "the server": "did not answer server/discover within
            0.75 s", "answered server/discover with MCP error -32601: Method not found", "closed
            the connection on server/discover".
        closed: The connection ended while the probe waited for its answer.
    """

    def __init__(
        self,
        bound: float | None,
        *,
        on_sent: Callable[[], None] | None = None,
        on_refused: Callable[[], None] | None = None,
    ):
        """Watch with ``bound`` seconds for the answer (None: the SDK's own 10 s).

        ``on_sent`` hears when the probe goes out; ``on_refused`` when the server answers it
        with an error, before the SDK sees that answer (and sends ``initialize``).
        """
        self._bound = bound
        self._on_sent = on_sent
        self._on_refused = on_refused
        self._id: types.RequestId | None = None
        self._deadline = float("inf")  # until the probe goes out
        self._scope: anyio.CancelScope | None = None  # the read now waiting, to bound once the probe is out
        self._watching = True  # until finish(): the probe's answer may still come
        self._injected = False
        self.understood: bool | None = None
        self.reason: str | None = None
        self.closed = False

    def wrap(self, transport: Transport) -> Transport:
        """``transport`` with its probe watched."""
        return self._wrapped(transport)

    @asynccontextmanager
    async def _wrapped(self, transport: Transport) -> AsyncGenerator[TransportStreams]:
        async with transport as (read_stream, write_stream):
            yield _Reader(read_stream, self), _Writer(write_stream, self)

    def finish(self) -> None:
        """The connect is over: pass everything straight through from now on."""
        self._watching = False

    # ----- called by the wrappers ---------------------------------------------------------

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method == DISCOVER and self._id is None:
            self._id = message.id
            if self._bound is not None:
                self._deadline = anyio.current_time() + self._bound
                if self._scope is not None:
                    self._scope.deadline = self._deadline
            if self._on_sent is not None:
                self._on_sent()

    def waiting(self) -> bool:
        return self._watching

    def sending(self) -> bool:
        return self._watching and self._id is None

    async def receive(self, inner: Callable[[], Awaitable[_Item]]) -> _Item:
        """The next item, or a stand-in error for the probe when its bound passes first."""
        if self.understood is None and not self._injected:
            # The session's read loop is already waiting here when the probe goes out: `sent`
            # then sets this scope's deadline.
            with anyio.CancelScope(deadline=self._deadline) as scope:
                self._scope = scope
                try:
                    return self._seen(await self._next(inner))
                finally:
                    self._scope = None
            self._injected = True
            self.understood = False
            self.reason = f"did not answer {DISCOVER} within {self._bound:g} s"
            error = types.ErrorData(code=_NOT_ANSWERED, message=f"no answer to {DISCOVER} within {self._bound:g} s")
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=self._id, error=error))
        return self._seen(await self._next(inner))

    async def _next(self, inner: Callable[[], Awaitable[_Item]]) -> _Item:
        try:
            return await inner()
        except (StopAsyncIteration, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if self.understood is None:
                self.understood, self.closed = False, True
                self.reason = f"closed the connection on {DISCOVER}"
            raise

    def _seen(self, item: _Item) -> _Item:
        if isinstance(item, Exception):
            return item
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id != self._id:
            return item
        if isinstance(message, types.JSONRPCResponse) or message.error.code == types.UNSUPPORTED_PROTOCOL_VERSION:
            self.understood, self.reason = True, None  # (late, after a stand-in: the server is modern, just slow)
        elif self.understood is None:
            self.understood = False
            self.reason = f"answered {DISCOVER} with MCP error {message.error.code}: {message.error.message}"
            if self._on_refused is not None:
                self._on_refused()
        return item


class _Reader(Around[ReadStream[_Item]]):
    """The read side: bounded while the probe waits, then the inner stream's own ``__anext__``."""

    __slots__ = ("_probe",)

    def __init__(self, inner: ReadStream[_Item], probe: ProbeWatch):
        super().__init__(inner)
        self._probe = probe

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> _Item:
        if self._probe.waiting():
            return await self._probe.receive(self._inner.receive)
        return await self._inner.receive()

    def __anext__(self) -> CoroutineType[Any, Any, _Item]:
        # Not `async`: after the probe, the inner stream's own coroutine is the one awaited.
        if self._probe.waiting():
            return self._probe.receive(self._inner.__anext__)
        return self._inner.__anext__()

    def __aiter__(self) -> Self:
        return self


class _Writer(Around[WriteStream[SessionMessage]]):
    """The write side: notes the probe when it goes out."""

    __slots__ = ("_probe",)

    def __init__(self, inner: WriteStream[SessionMessage], probe: ProbeWatch):
        super().__init__(inner)
        self._probe = probe

    def send(self, item: SessionMessage, /) -> CoroutineType[Any, Any, None]:
        if self._probe.sending():
            self._probe.sent(item)
        return self._inner.send(item)
