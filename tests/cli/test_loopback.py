"""The attached CLI's small HTTP/1.1 client against a real uvicorn server, and against a TCP server that
closes a kept-alive connection (as uvicorn does after 5 idle seconds)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncGenerator, Generator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcpdeck.cli._loopback import Connection, ProtocolError
from tests.helpers import WAIT, serve_asgi

pytestmark = pytest.mark.anyio


async def _json(request: Request) -> Response:
    assert request.client is not None
    return JSONResponse({"body": (await request.body()).decode(), "port": request.client.port})


async def _lines(request: Request) -> Response:
    async def body() -> AsyncGenerator[bytes]:
        for n in range(3):
            yield f"line {n}\n".encode()
        yield b"no end"

    return StreamingResponse(body(), media_type="text/plain")


async def _empty(request: Request) -> Response:
    return Response(status_code=204)


APP = Starlette(
    routes=[Route("/json", _json, methods=["POST", "GET"]), Route("/lines", _lines), Route("/empty", _empty)]
)


async def test_answers_with_a_length_in_chunks_and_without_a_body_on_one_connection() -> None:
    async with serve_asgi(APP) as url:
        port = int(url.rsplit(":", 1)[1])

        def talk() -> tuple[dict[str, Any], str | None, list[bytes], int, dict[str, Any]]:
            conn = Connection("127.0.0.1", port, timeout=WAIT)
            try:
                first = conn.request("POST", "/json", b'{"a": 1}', {"Content-Type": "application/json"})
                answer = json.loads(first.read())
                streamed = conn.request("GET", "/lines", None, {})
                lines = [streamed.readline() for _ in range(5)]
                empty = conn.request("GET", "/empty", None, {})
                last = json.loads(conn.request("GET", "/json", None, {}).read())
                return answer, streamed.headers.get("transfer-encoding"), lines, empty.status, last
            finally:
                conn.close()

        with anyio.fail_after(WAIT):
            answer, encoding, lines, empty, last = await anyio.to_thread.run_sync(talk)
    assert answer["body"] == '{"a": 1}'
    assert encoding == "chunked"
    assert lines == [b"line 0\n", b"line 1\n", b"line 2\n", b"no end", b""]
    assert empty == 204
    assert last == {"body": "", "port": answer["port"]}  # every request went over the first connection


@contextmanager
def closing_server() -> Generator[tuple[int, list[bytes]]]:
    """A TCP server that answers one request per connection and then closes it; what it was sent."""
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        for n in range(2):
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                received.append(data.split(b"\r\n", 1)[0])
                body = f'{{"n": {n}}}'.encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    thread = threading.Thread(target=serve, daemon=True)
    with listener:
        thread.start()
        yield listener.getsockname()[1], received
        thread.join(WAIT)


def test_a_connection_closed_while_idle_is_opened_again_and_the_request_sent_once_more() -> None:
    with closing_server() as (port, received):
        conn = Connection("127.0.0.1", port, timeout=WAIT)
        try:
            assert conn.request("GET", "/one", None, {}).read() == b'{"n": 0}'
            assert conn.request("POST", "/two", b"{}", {}).read() == b'{"n": 1}'
        finally:
            conn.close()
    assert received == [b"GET /one HTTP/1.1", b"POST /two HTTP/1.1"]


def test_an_answer_that_is_not_http_is_an_error_not_a_retry() -> None:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    with listener:
        thread.start()
        conn = Connection("127.0.0.1", listener.getsockname()[1], timeout=WAIT)
        with pytest.raises(ProtocolError, match=r"not an HTTP/1\.1 answer"):
            conn.request("GET", "/", None, {})
        conn.close()
        thread.join(WAIT)
