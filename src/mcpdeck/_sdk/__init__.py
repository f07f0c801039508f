"""Everything of mcpdeck that touches the SDK's private parts, in one place.

mcpdeck pins ``mcp`` exactly. What here imports a private module of the SDK (``mcp.*._*``), overrides
or calls a private method, reads a private attribute or replaces a module's function is pinned to
that version: when the SDK moves, this package is where to look, and ``tests/test_sdk_contract.py``
names each private member it relies on (docs/architecture.md, "The SDK and its pins", lists them).
Nothing outside this package reaches into the SDK (``auth``'s OAuth flow excepted: see that table).

- ``transports``: what every transport of a server shares (the watched read stream, ``StreamWrapper``, the
  stdio ends, pipe reading, the size bound's and unreadable answer's errors), on the SDK's
  ``Transport`` and stream protocols;
- ``child_process``: a stdio server's child process and its pipes;
- ``stdio``: mcpdeck's own stdio transport;
- ``http_transports``: the SDK's streamable HTTP transport with a bound on answers and a DELETE that
  always goes; SSE on the SDK's HTTP client;
- ``streamable_server``: the gateway's streamable HTTP sessions (a call's result as one JSON body);
- ``spans``: the SDK's client spans left out when they go nowhere;
- ``oauth``: the SDK's redirect-following ``httpx2.Auth`` base;
- here: the SDK's private transport and stream types, and the connection of a server-side session.
"""

from __future__ import annotations

from typing import Any

from mcp.client._transport import Transport, TransportStreams
from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = ["ReadStream", "Transport", "TransportStreams", "WriteStream", "session_connection"]


def session_connection(session: Any) -> Any:
    """The SDK's per-client ``Connection`` behind a server-side session (``ServerSession._connection``): its
    ``state`` dict and ``exit_stack`` last as long as the client's connection, which the gateway keeps each
    client on. (The SDK gives it publicly only on ``Context.connection``, not on the low-level request context.)"""
    return session._connection  # pyright: ignore[reportPrivateUsage]
