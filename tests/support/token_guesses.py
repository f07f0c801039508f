"""Wrong tokens sent from many loopback addresses at once (for the guards that count guesses per address)."""

from __future__ import annotations

import anyio


async def guesses_from_many_addresses(url: str, path: str, count: int) -> list[int]:
    """``count`` requests with a wrong token, each from its own loopback address (127.0.x.y binds on Linux),
    as plain HTTP/1.1 over a socket (an HTTP client per address would cost more than the request)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    codes: list[int] = []
    for i in range(count):
        request = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer guess-{i}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        async with await anyio.connect_tcp(host, int(port), local_host=f"127.0.{1 + i // 250}.{1 + i % 250}") as stream:
            await stream.send(request + body)
            head = b""
            while b"\r\n" not in head:
                head += await stream.receive()
        codes.append(int(head.split()[1]))
    return codes
