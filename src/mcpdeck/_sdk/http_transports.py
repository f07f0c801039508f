"""Streamable HTTP and SSE transports for one server, built on the SDK's.

Streamable HTTP runs on the SDK's transport with three changes: one answer (a JSON body
or one SSE event) may be at most ``max_message`` bytes, and past it the request fails
with a clear error instead of the host buffering without end; an answer that cannot be
read (nested too deep, not JSON) fails its request with one clear sentence; and the
session is ended with an HTTP DELETE also when the connection is closed by cancellation
(a disconnect, a reconnect, the host's exit), shielded and bounded in time. And a POST
answered with an SSE stream keeps its connection for the next request (``_ReusableAnswer``):
the SDK alone opens a new TCP connection for every such call. And the HTTP client's pool asks
whether an idle connection was closed by the server without building anyio's whole table of
socket attributes each time (``_probed_pool``).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Self, cast

import anyio
import httpcore2
import httpx2
from anyio.streams.memory import MemoryObjectReceiveStream
from httpcore2._backends.anyio import AnyIOStream
from httpcore2._utils import is_socket_readable
from httpx2 import ServerSentEvent
from mcp.client._transport import Transport, TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import StreamableHTTPTransport, StreamWriter
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    RequestId,
)
from mcp_types import jsonrpc_message_adapter as _message_adapter

from mcpdeck._sdk.transports import MessageTooLargeError, NotAMessageError, StreamWrapper, unreadable_reason

__all__ = ["END_SESSION_TIMEOUT", "http_transport", "sse_transport"]

logger = logging.getLogger(__name__)

END_SESSION_TIMEOUT = 2.0
"""Seconds the HTTP DELETE that ends a streamable HTTP session may take."""


class _BoundedStreamableHTTP(StreamableHTTPTransport):
    """The SDK's streamable HTTP transport with a size bound on answers and a DELETE that always goes."""

    def __init__(self, url: str, max_message: int):
        # One SSE event is one message: the SDK's own bound on events is the limit. (Its default,
        # 1 MiB, would fail any tool result over 1 MiB sent as an event, which real servers do.)
        super().__init__(url, max_sse_event_size=max_message)
        self._max_message = max_message

    async def _handle_json_response(
        self, response: httpx2.Response, read_stream_writer: StreamWriter, *, request_id: RequestId
    ) -> None:
        limit = self._max_message
        declared = response.headers.get("content-length", "")
        chunks: list[bytes] = []
        size = 0
        too_large = declared.isdigit() and int(declared) > limit
        try:
            if not too_large:
                async for chunk in response.aiter_bytes():  # decoded bytes: a gzip bomb counts at its real size
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        too_large = True
                        break
            if too_large:
                await response.aclose()
                await self._fail(read_stream_writer, request_id, str(MessageTooLargeError(limit)), INTERNAL_ERROR)
                return
            # Joined once, as bytes: a growing bytearray copies as it grows, and pydantic-core reads
            # bytes faster (a big answer's time: bench/RESULTS.md, payload-http).
            message = _message_adapter.validate_json(b"".join(chunks), by_name=False)
        except (httpx2.StreamError, ValueError) as error:
            reason = unreadable_reason(error) if isinstance(error, ValueError) else str(error)
            await self._fail(read_stream_writer, request_id, f"the server's answer cannot be read: {reason}")
            return
        await read_stream_writer.send(SessionMessage(message))

    async def _handle_sse_event(
        self,
        sse: ServerSentEvent,
        read_stream_writer: StreamWriter,
        original_request_id: RequestId | None = None,
        resumption_callback: Callable[[str], Awaitable[None]] | None = None,
    ) -> bool:
        if sse.event != "message" or not sse.data:  # priming events and the unknown: as the SDK does
            return await super()._handle_sse_event(sse, read_stream_writer, original_request_id, resumption_callback)
        # As the SDK does, except that an event that cannot be read is one clear sentence (and no
        # traceback in the log): it fails the request it answers, or is reported if it answers none.
        try:
            message = _message_adapter.validate_json(sse.data, by_name=False)
        except ValueError as error:
            reason = unreadable_reason(error)
            if original_request_id is None:
                await read_stream_writer.send(NotAMessageError(sse.data[:300], reason, "an SSE event"))
                return False
            await self._fail(read_stream_writer, original_request_id, f"the server's answer cannot be read: {reason}")
            return True
        done = isinstance(message, JSONRPCResponse | JSONRPCError)
        if done and original_request_id is not None:
            message.id = original_request_id
        await read_stream_writer.send(SessionMessage(message))
        if sse.id and resumption_callback is not None:
            await resumption_callback(sse.id)
        return done

    async def _resolve_abandoned_request(
        self, read_stream_writer: StreamWriter, request_id: RequestId, message: str, *, code: int = CONNECTION_CLOSED
    ) -> None:
        # An SSE event over the bound fails only its request: the session itself is fine.
        if message.startswith("SSE stream failed") and f"exceeded the {self._max_message} byte limit" in message:
            message, code = str(MessageTooLargeError(self._max_message)), INTERNAL_ERROR
        await super()._resolve_abandoned_request(read_stream_writer, request_id, message, code=code)

    @staticmethod
    async def _fail(writer: StreamWriter, request_id: RequestId, message: str, code: int = PARSE_ERROR) -> None:
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
        await writer.send(SessionMessage(error))

    async def terminate_session(self, client: httpx2.AsyncClient) -> None:
        # The session usually ends by cancellation (disconnect, reconnect, the host's exit), which
        # would cancel the DELETE before it is sent, and the server would keep the session.
        with anyio.move_on_after(END_SESSION_TIMEOUT, shield=True) as scope:
            await super().terminate_session(client)
        if scope.cancelled_caught:
            logger.info("the server at %s did not answer the DELETE that ends its session in time", self.url)


_Task = Callable[..., Coroutine[Any, Any, None]]


class _Outgoing(StreamWrapper[MemoryObjectReceiveStream[SessionMessage]]):
    """The HTTP transport's side of the session's write stream: the messages, without their sender's context.

    Given a sender's context (``last_context``), the SDK's transport sends each message in a
    task group and a task of its own, run in that context; without one it sends from its own
    loop (a request's POST still runs in a task of its own). What that context would carry
    here is nothing mcpdeck uses: its timeouts are its own (the SDK's request clock, the one
    value the SDK reads there, has no budget), and servers' requests and notifications are
    not run in the caller's context either (``watched`` gives the session none). So the
    messages go without it (``mcp.Client``'s go with it), which saves client instructions on
    every call with calls in flight (``python -m bench.layers --instructions``: bench/RESULTS.md).
    """

    __slots__ = ()

    last_context: ClassVar[None] = None

    def __aiter__(self) -> Self:
        return self

    def __anext__(self) -> Awaitable[SessionMessage]:
        return self._inner.__anext__()  # not `async`: no frame of its own per message


@asynccontextmanager
async def _streamable_http(url: str, client: httpx2.AsyncClient, max_message: int) -> AsyncGenerator[TransportStreams]:
    """Streamable HTTP over ``client`` (which the caller owns), on ``_BoundedStreamableHTTP``.

    Plain memory streams, not the SDK's context streams: see ``_Outgoing``. (The read side's
    context would only be dropped by ``watched``, after a copy of it per message.)
    """
    transport = _BoundedStreamableHTTP(url, max_message)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_items = anyio.create_memory_object_stream[SessionMessage](0)
    write_reader = _Outgoing(write_items)
    # The SDK's signatures name its context streams; it uses only what these share with them.
    post_writer = cast(_Task, transport.post_writer)
    get_stream = cast(_Task, transport.handle_get_stream)
    async with read_writer, read_stream, write_stream, write_reader, anyio.create_task_group() as tg:

        def start_get_stream() -> None:
            tg.start_soon(get_stream, client, read_writer)

        tg.start_soon(post_writer, client, write_reader, read_writer, write_stream, start_get_stream, tg)
        try:
            yield read_stream, write_stream
        finally:
            await transport.terminate_session(client)  # shielded and bounded; nothing to do without a session
            tg.cancel_scope.cancel()


@asynccontextmanager
async def http_transport(
    url: str,
    headers: dict[str, str],
    on_error_status: Callable[[int, str], None] | None = None,
    *,
    auth: httpx2.Auth | None = None,
    max_message: int,
) -> AsyncGenerator[TransportStreams]:
    """Streamable HTTP with the given headers on every request.

    ``on_error_status(status, url)`` hears of every response with a status of 400 or more:
    the SDK turns most of them into a generic JSON-RPC error, and a user needs the status.
    With an ``auth`` (OAuth), a 401 and the authorization server's answers are its business,
    and its own errors say what to do. An answer larger than ``max_message`` bytes fails its
    request (see the module's docstring).
    """
    endpoint = httpx2.URL(url).copy_with(query=None, fragment=None)
    report = on_error_status
    async with _probed_pool(create_mcp_http_client(headers=headers or None, auth=auth)) as client:

        async def hook(response: httpx2.Response) -> None:
            status = response.status_code
            if status < 400:  # every response passes here: the cheap test first
                if status == 200 and response.request.method == "POST":
                    _reuse_after_answer(response)
                return
            if report is not None and (
                auth is None
                or (status != 401 and response.request.url.copy_with(query=None, fragment=None) == endpoint)
            ):
                report(status, str(response.request.url))

        client.event_hooks["response"].append(hook)
        async with _streamable_http(url, client, max_message) as streams:
            yield streams


_END_WAIT = 0.05
"""Seconds the end of a POST's SSE answer may take to arrive after the answer itself (see ``_ReusableAnswer``)."""
_END_BYTES = 64 * 1024


def _reuse_after_answer(response: httpx2.Response) -> None:
    """A POST answered with an SSE stream: let its connection be kept for the next request (``_ReusableAnswer``)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        response.stream = _ReusableAnswer(cast(httpx2.AsyncByteStream, response.stream))


class _ReusableAnswer(httpx2.AsyncByteStream):
    """The SSE stream a POST is answered with: when closed, its end is read first if it comes at once.

    The SDK closes a POST's SSE stream as soon as the answer's event has arrived, before the
    stream's end (the server ends it right after: the end of a ``Content-Length`` body, or the
    last chunk), and a connection closed in the middle of a body cannot be used again: every
    call then opens a new TCP connection (and TLS session). Reading what is left first (at most
    ``_END_BYTES``, for at most ``_END_WAIT`` seconds, in the POST's own task after the answer
    has been handed on) gives the connection back to the pool. A stream that does not end that
    soon is closed as before.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: httpx2.AsyncByteStream):
        self._inner = inner

    @property
    def elapsed(self) -> object:
        """What the stream ``httpx`` made says (``Response.elapsed`` reads it)."""
        return getattr(self._inner, "elapsed", None)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._inner.__aiter__()

    async def aclose(self) -> None:
        try:
            with anyio.move_on_after(_END_WAIT):
                left = _END_BYTES
                async for chunk in self._inner:
                    left -= len(chunk)
                    if left < 0:
                        break
        except httpx2.HTTPError:
            pass  # the connection failed: closing it is all there is left to do
        finally:
            await self._inner.aclose()


class _ProbedStream(AnyIOStream):
    """httpcore's anyio stream, whose "is the socket readable" answer reads the socket it keeps.

    Before it hands out an idle connection, and on every pass over its connections (two per
    request: one when a request comes, one when its response is closed), httpcore's pool asks
    each idle connection whether the server closed it (``has_expired``: the socket is readable).
    httpcore's own stream finds the socket for that through ``anyio``'s ``extra()``, which builds
    the stream's whole table of attributes each time, a ``getpeername`` syscall included: ~15 of
    the ~17 us a question costs here, where the question itself (one ``poll``) is ~2 us. With 32
    calls in flight the pool holds several idle connections and asks about each of them on every
    pass. The answer is the same: the same socket, polled the same way.
    """

    __slots__ = ("_socket",)

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        super().__init__(stream)
        self._socket = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        return super().get_extra_info(info)

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return _probed(await super().start_tls(ssl_context, server_hostname, timeout))


def _probed(stream: httpcore2.AsyncNetworkStream) -> httpcore2.AsyncNetworkStream:
    """``stream`` as a ``_ProbedStream`` if it is httpcore's anyio stream (asyncio), else as it is (trio)."""
    if type(stream) is AnyIOStream:
        return _ProbedStream(stream._stream)  # pyright: ignore[reportPrivateUsage]
    return stream


class _ProbedBackend(httpcore2.AsyncNetworkBackend):
    """The pool's network backend, whose connections are ``_ProbedStream``s."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _probed(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return _probed(await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _probed_pool(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client`` with ``_ProbedBackend`` under each of its connection pools (the default one, and a proxy's)."""
    transports = [client._transport, *client._mounts.values()]  # pyright: ignore[reportPrivateUsage]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if isinstance(pool, httpcore2.AsyncConnectionPool) and not isinstance(pool._network_backend, _ProbedBackend):  # pyright: ignore[reportPrivateUsage]
            pool._network_backend = _ProbedBackend(pool._network_backend)  # pyright: ignore[reportPrivateUsage]
    return client


def sse_transport(url: str, headers: dict[str, str], *, auth: httpx2.Auth | None = None) -> Transport:
    """The legacy HTTP+SSE transport."""
    return sse_client(url, headers=headers or None, auth=auth)
