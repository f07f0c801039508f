"""The gateway's streamable HTTP sessions: a request's answer as one JSON body when that is all it has.

The SDK's transport opens an SSE stream for every request a client POSTs (a priming event,
then the answer, each an event, behind sse-starlette's response and its four tasks). The
spec lets a server answer with either; most calls have nothing to send but their result, and
for them the stream is pure cost, a large share of the gateway's CPU per call over HTTP
(bench/RESULTS.md).

``GatewayTransport`` decides per call (``SHORT``), when the first message for it comes: the result
itself, within ``JSON_WINDOW`` seconds, is sent as an ``application/json`` body; anything
else first (progress, a log message, a question to the client) or nothing for that long opens
the SSE stream as the SDK does, priming event included, and the request goes on there. What
a client can do is unchanged: progress, logging, elicitation and sampling still travel on the
request's stream, and a long call still gets a stream it can resume (``Last-Event-ID``).
Every other message (``initialize``, lists, notifications, responses, a body that does not
parse) is handled by the SDK's own code.

``GatewaySessionManager`` is the SDK's session manager making its sessions with this transport.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from uuid import uuid4

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    SSEEvent,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

__all__ = ["JSON_WINDOW", "SHORT", "GatewaySessionManager", "GatewayTransport"]

logger = logging.getLogger(__name__)

SHORT = frozenset({"tools/call", "resources/read", "prompts/get", "completion/complete"})
"""The requests that may be answered in JSON: the ones a server behind answers, on the path of every
call. The rest (lists, ping, subscriptions, ...) are streamed as the SDK does, which the conformance
suite grades higher (its ``server-sse-multiple-streams`` counts a JSON answer as neutral)."""
JSON_WINDOW = 1.0
"""Seconds a request's answer may take and still come back as one JSON body; a slower request
gets its SSE stream (headers and priming event) after this long."""


class GatewayTransport(StreamableHTTPServerTransport):
    """The SDK's server transport, answering a request in JSON when its answer is the only message."""

    async def _handle_post_request(self, scope: Scope, request: Request, receive: Receive, send: Send) -> None:
        message = await self._plain_request(request)
        if message is None:  # not a request the short way can take: the SDK's own handling
            await super()._handle_post_request(scope, request, receive, send)
            return
        if not await self._validate_request_headers(request, send):
            return
        writer = self._read_stream_writer
        assert writer is not None  # connect() runs before any request reaches the transport
        protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        request_id = str(message.id)
        # Minted before the request is dispatched, as the SDK does, so that it precedes in the
        # event store every message of this request: a stream resumed from it misses nothing.
        priming = await self._mint_priming_event(request_id, protocol_version)
        streams = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = streams
        try:
            # The session's loop may have stopped reading while this request was on its way (the gateway
            # shutting down cancels it before the transport is marked terminated): the send then fails.
            await writer.send(self._create_session_message(message, request, request_id, protocol_version))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._clean_up_memory_streams(request_id)
            await self._ended_response(scope, receive, send)
            return
        first: EventMessage | None = None
        closed = False
        with anyio.move_on_after(JSON_WINDOW):
            try:
                first = await streams[1].receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                closed = True
        if first is not None and isinstance(first.message, JSONRPCResponse | JSONRPCError):
            await self._clean_up_memory_streams(request_id)
            await self._create_json_response(first.message)(scope, receive, send)
            return
        if closed:  # the session ended (or the stream was closed on purpose) before any answer
            await self._clean_up_memory_streams(request_id)
            if priming is None:
                await self._ended_response(scope, receive, send)
                return
        await self._stream(request_id, streams, priming, first, closed, scope, receive, send)

    async def _ended_response(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The answer to a request whose session ended before it was answered, as the SDK gives it."""
        await self._create_error_response(
            "Session terminated before the request completed", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
        )(scope, receive, send)

    async def _plain_request(self, request: Request) -> JSONRPCRequest | None:
        """The request this POST carries, if it is one the short way handles: a valid request of ``SHORT``,
        from a client that takes both JSON and SSE, in a session that is set up."""
        if self.is_json_response_enabled or self._read_stream_writer is None:
            return None
        has_json, has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        if not (has_json and has_sse) or content_type.split(";")[0].strip().lower() != "application/json":
            return None
        try:
            message = jsonrpc_message_adapter.validate_python(
                pydantic_core.from_json(await request.body()), by_name=False
            )
        except ValueError:  # the SDK answers it (and a validation error is a ValueError)
            return None
        if not isinstance(message, JSONRPCRequest) or message.method not in SHORT:
            return None
        return message

    async def _stream(
        self,
        request_id: str,
        streams: tuple[MemoryObjectSendStream[EventMessage], MemoryObjectReceiveStream[EventMessage]],
        priming: SSEEvent | None,
        first: EventMessage | None,
        ended: bool,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """Answer as the SDK does: an SSE stream of the priming event, then the request's messages
        (``ended``: only the priming event, for a client to resume the stream from)."""
        events, events_out = anyio.create_memory_object_stream[SSEEvent](0)
        self._sse_stream_writers[request_id] = events

        async def write() -> None:
            try:
                for event in (priming, self._create_event_data(first) if first is not None else None):
                    if event is not None:
                        await events.send(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client left, or the stream was closed
                pass
            if ended:
                events.close()
                return
            await self._run_sse_writer(request_id, events, streams[1], None)

        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
            **({MCP_SESSION_ID_HEADER: self.mcp_session_id} if self.mcp_session_id else {}),
        }
        try:
            await EventSourceResponse(content=events_out, data_sender_callable=write, headers=headers)(
                scope, receive, send
            )
        finally:  # the same whether write() ran or not (a response that failed to start): nothing stays registered
            events.close()
            await events_out.aclose()
            self._sse_stream_writers.pop(request_id, None)
            await self._clean_up_memory_streams(request_id)


class GatewaySessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with ``GatewayTransport`` for each new session.

    With a ``replica`` id, session ids are ``<replica>.<random>``: a load balancer routes a session's
    requests to the replica that holds it by that prefix (the session lives in this process's memory).
    """

    replica: str | None = None
    """This process's replica id, the session ids' prefix (None: no prefix)."""

    @property
    def open_sessions(self) -> int:
        """The sessions it holds now (until a client's DELETE, or the session's end)."""
        return len(self._server_instances)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = GatewayTransport(
            mcp_session_id=f"{self.replica}.{uuid4().hex}" if self.replica else uuid4().hex,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        session_id = transport.mcp_session_id
        assert session_id is not None
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport
