"""The protocol era of one server's sessions: how each one opens.

``auto`` (the default) opens with the ``initialize`` handshake, the era with a back-channel, where
a server's questions in the middle of a call reach the host (``HandshakeFirst``: the SDK's own
``server/discover`` probe is answered in the server's place). A server that speaks only 2026-07-28
refuses the handshake naming its versions (-32022), and the SDK then probes ``server/discover`` on
the same connection; its questions come as ``InputRequiredResult`` rounds, which the SDK's client
answers through the host's handlers. ``handshake`` opens with the handshake alone; ``modern`` with
``server/discover`` alone, and fails a server that answers it with the handshake era.

A back-channel is worth its cost only where someone could answer what comes over it. Over streamable
HTTP, a session of the handshake era costs the SDK's server about half as much CPU again per request
as one of 2026-07-28 (stateful: each request handed to the session's task, its answer on an SSE
stream), and the client a quarter more. So ``auto`` over streamable HTTP, where nobody could answer a
server's question (no elicitation or sampling handler, no router, no roots offered: ``back_channel``
False), opens the way the SDK's own ``auto`` does: ``server/discover`` first, the handshake when the
server answers that with an error (a server of the handshake era over HTTP answers an unknown method;
it does not exit). Over stdio and SSE ``auto`` always opens with the handshake: an SDK 1.x stdio server
may exit on ``server/discover``, and over stdio the handshake era costs no more per call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Literal

from mcp import Client, MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpdeck._sdk import Transport
from mcpdeck.connection._context import ServerContext
from mcpdeck.connection._handshake_first import DISCOVER, HandshakeFirst
from mcpdeck.errors import ServerError, leaf_errors, protocol_error_text

__all__ = ["ClientFactory", "negotiated"]

logger = logging.getLogger(__name__)

ClientFactory = Callable[[Transport, Literal["auto", "legacy"]], Client]
"""Makes the SDK client of a session on a transport, in a mode."""


@asynccontextmanager
async def negotiated(
    context: ServerContext,
    make_client: ClientFactory,
    transport: Transport,
    *,
    http_refused: Callable[[], bool] | None = None,
    back_channel: bool = True,
) -> AsyncGenerator[Client]:
    """A client on ``transport``, its session opened the way the server's ``protocol`` says (see the module
    docstring). ``http_refused`` tells whether the server answered with an HTTP error status (then a refused
    request says nothing about its era). ``back_channel``: whether ``auto`` opens with the handshake, for a
    back-channel (False only over streamable HTTP, where nobody could answer a server's question)."""
    protocol = context.config.protocol
    if protocol == "handshake":
        async with make_client(transport, "legacy") as client:
            yield client
    elif protocol == "auto" and not back_channel:
        async with make_client(transport, "auto") as client:  # server/discover first, as the SDK's own auto
            yield client
    elif protocol == "modern":
        async with _modern(context, make_client(transport, "auto")) as client:
            yield client
    else:
        first = HandshakeFirst()
        entered = False
        try:
            async with make_client(first.wrap(transport), "auto") as client:
                entered = True
                first.finish()
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    note = (
                        f"the server refused the initialize handshake; connected with {DISCOVER} "
                        f"(protocol {client.protocol_version}): it can ask the host only by input-required rounds"
                    )
                    context.note(f"[mcpdeck] {note}")
                    logger.info("server %r: %s", context.name, note)
                yield client
        except Exception as error:
            refusal = first.refusal
            if entered or refusal is None or (http_refused is not None and http_refused()):
                raise
            text = protocol_error_text(refusal.code, refusal.message, "initialize")
            raise ServerError(
                context.name,
                f'refused the initialize handshake ({text}); if it speaks only protocol 2026-07-28, set "protocol": '
                '"modern" in its config',
            ) from error


@asynccontextmanager
async def _modern(context: ServerContext, client: Client) -> AsyncGenerator[Client]:
    entered = False
    try:
        async with client:
            entered = True
            version = client.protocol_version
            if version not in MODERN_PROTOCOL_VERSIONS:
                raise ServerError(
                    context.name,
                    f'speaks only the initialize handshake (protocol {version}) but its config says "protocol": '
                    '"modern"; set it to "auto" or "handshake"',
                )
            yield client
    except Exception as error:
        if entered or not any(isinstance(e, MCPError) and e.code == CONNECTION_CLOSED for e in leaf_errors(error)):
            raise
        raise ServerError(
            context.name,
            f'closed the connection on {DISCOVER}, which its config asks for ("protocol": "modern"); a server of the '
            'initialize handshake era may do that: set it to "auto" or "handshake"',
        ) from error
