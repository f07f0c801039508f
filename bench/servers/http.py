"""A near-free MCP server over streamable HTTP on 127.0.0.1: hand-written, standard library only.

The same ``Handler`` as the stdio line server, behind a minimal HTTP/1.1 server on
``asyncio.Protocol`` (keep-alive, ``Content-Length`` bodies). It costs a few tens of
microseconds per request, far below any client's, and the harness reads its CPU time so a
report can show it. Two endpoints:

- ``POST /mcp``: each request is answered with a ``text/event-stream`` body holding one
  ``message`` event per answer (what SDK servers do by default). A result larger than the
  SDK client's 1 MB SSE event cap shows what each client does with it.
- ``POST /mcp-json``: each request is answered with an ``application/json`` body.

Notifications and responses get ``202 Accepted``; ``GET`` gets ``405`` (no standalone
stream, which clients accept); ``DELETE`` ends nothing and gets ``200``. The initialize
answer carries an ``mcp-session-id``; later requests are not checked against it.

It speaks 2026-07-28 too, beside the handshake, as today's SDK servers do (the client
chooses): a request stamped with that era is answered as the SDK's server answers one,
with an ``application/json`` body on either endpoint (the SDK's server turns to SSE only for
a handler that sends notifications or runs long), and no session. ``subscriptions/listen``
gets an SSE stream (chunked) that stays open: the acknowledgment first, then
``notifications/tools/list_changed`` whenever ``touch_tools`` is called.

``--service-ms S`` makes it stand for a server that is busy S milliseconds with each request,
one request at a time (as a single-threaded server whose work is the bottleneck): each POST's
answer leaves S ms after the previous one left, or after it arrived if the server was idle. It
only waits, and costs no CPU for it, so on a shared machine it loads nothing; and with calls in
flight the client then gets its answers one at a time, as from real servers, which cost more
per request than a client does, and not in bursts as from a server that answers at once.

``python -S -m bench.servers.http [--port 0] [--service-ms 0]`` prints ``PORT <n>`` on its first line.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import sys
from collections.abc import Callable
from typing import Any

from bench.servers.line import TOOLS_CHANGED, Handler

__all__ = ["HttpProtocol", "serve"]

_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
_MAX_BODY = 64 * 1024 * 1024
_sessions = itertools.count(1)


class Pace:
    """When answers leave: at once, or one per ``service`` seconds (see ``--service-ms``)."""

    def __init__(self, service: float):
        self.service = service
        self._free_at = 0.0  # when the server is done with the requests it has been given

    def after_service(self, answer: Callable[..., None], *args: Any) -> None:
        loop = asyncio.get_running_loop()
        self._free_at = max(loop.time(), self._free_at) + self.service
        loop.call_at(self._free_at, answer, *args)


_listeners: dict[asyncio.Transport, object] = {}
"""The connections holding an open ``subscriptions/listen`` stream, and the id of the request that opened it."""


def _chunk(line: str) -> bytes:
    event = f"event: message\ndata: {line}\n\n".encode()
    return f"{len(event):x}\r\n".encode("latin-1") + event + b"\r\n"


class HttpProtocol(asyncio.Protocol):
    """One HTTP/1.1 connection (requests are answered in order; clients do not pipeline)."""

    def __init__(self, handler: Handler, pace: Pace):
        self._handler = handler
        self._pace = pace
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            _listeners.pop(self._transport, None)
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
            method, target, *_ = [*head[0].split(" "), "", ""]
            headers: dict[str, str] = {}
            for line in head[1:]:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if "chunked" in headers.get("transfer-encoding", "").lower() or length > _MAX_BODY:
                self._respond(400, "text/plain", b"chunked or oversized bodies are not supported", close=True)
                return
            if len(self._buffer) < end + 4 + length:
                return
            body = bytes(self._buffer[end + 4 : end + 4 + length])
            del self._buffer[: end + 4 + length]
            path = target.split("?", 1)[0]
            if method == "POST" and self._pace.service > 0:
                self._pace.after_service(self._request, method, path, body)
            else:
                self._request(method, path, body)

    def _respond(
        self, status: int, content_type: str | None, body: bytes, *, extra: str = "", close: bool = False
    ) -> None:
        transport = self._transport
        if transport is None:
            return
        head = f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}\r\nContent-Length: {len(body)}\r\n"
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        if close:
            head += "Connection: close\r\n"
        transport.write((head + extra + "\r\n").encode("latin-1") + body)
        if close:
            transport.close()

    def _request(self, method: str, path: str, body: bytes) -> None:
        if path not in ("/mcp", "/mcp-json"):
            self._respond(404, "text/plain", b"not found")
            return
        if method == "GET":
            self._respond(405, "text/plain", b"no standalone stream", extra="Allow: POST, DELETE\r\n")
            return
        if method == "DELETE":
            self._respond(200, None, b"")
            return
        if method != "POST":
            self._respond(405, "text/plain", b"method not allowed", extra="Allow: POST, DELETE\r\n")
            return
        try:
            message: Any = json.loads(body)
        except ValueError:
            self._respond(400, "text/plain", b"not JSON")
            return
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            self._respond(202, None, b"")  # a notification or a response to us
            return
        request: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
        extra = f"mcp-session-id: bench-{next(_sessions)}\r\n" if request["method"] == "initialize" else ""
        as_json = path == "/mcp-json"
        modern = self._handler.is_modern(request)
        if modern:
            self._modern(request)
            return

        def answer(lines: list[str]) -> None:
            if as_json:  # only the response itself: a JSON body has no room for notifications
                self._respond(200, "application/json", lines[-1].encode(), extra=extra)
            else:
                events = "".join(f"event: message\ndata: {line}\n\n" for line in lines)
                self._respond(200, "text/event-stream", events.encode(), extra=extra)

        def later(delay: float, line: str) -> None:
            asyncio.get_running_loop().call_later(delay, answer, [line])

        lines = self._handler.handle(request, later)
        if lines:
            answer(lines)

    def _modern(self, request: dict[str, Any]) -> None:
        """A 2026-07-28 request: one JSON answer, or an open listen stream; list changes go to the listeners."""
        transport = self._transport
        if request["method"] == "subscriptions/listen":
            if transport is not None:
                head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                transport.write(head.encode("latin-1") + _chunk(self._handler.listen_ack(request)))
                _listeners[transport] = request["id"]
            return

        def answer(lines: list[str]) -> None:
            for line in lines:
                if line == TOOLS_CHANGED:
                    for listener, listen_id in list(_listeners.items()):
                        listener.write(_chunk(Handler.on_listen_stream(line, listen_id)))
                else:
                    self._respond(200, "application/json", line.encode())

        def later(delay: float, line: str) -> None:
            asyncio.get_running_loop().call_later(delay, answer, [line])

        answer(self._handler.handle(request, later))


async def serve(port: int, filler: int, service: float = 0.0) -> None:
    """Serve until SIGTERM or SIGINT; print ``PORT <n>`` once listening."""
    loop = asyncio.get_running_loop()
    handler = Handler(filler, modern=True)
    pace = Pace(service)
    server = await loop.create_server(lambda: HttpProtocol(handler, pace), "127.0.0.1", port, backlog=256)
    bound: int = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {bound}\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A near-free MCP server over streamable HTTP.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--filler", type=int, default=0, help="add this many ~1 KB filler tools")
    parser.add_argument(
        "--service-ms", type=float, default=0.0, help="answer each POST this long after the previous answer"
    )
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port, args.filler, args.service_ms / 1000))


if __name__ == "__main__":
    main()
