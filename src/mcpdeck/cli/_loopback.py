"""A small HTTP/1.1 client for the API of a ``serve`` on this machine: one keep-alive connection.

The attached CLI's every command pays for its imports: the standard library's ``http.client``
brings ``ssl`` and the ``email`` package (about 8 ms of a command's start on this machine,
more under load), and talks to nothing but a loopback port that answers plain HTTP/1.1. This
speaks that much: a request with a ``Content-Length`` body, an answer with a length, chunks
(the event streams) or none (read to the end).

A connection the server closed while it sat idle (uvicorn closes one after 5 s) is opened
again and the request sent once more, but only when nothing of an answer had come yet.
"""

from __future__ import annotations

import io
import socket

__all__ = ["Connection", "ProtocolError", "Response", "connect"]

_MAX_LINE = 65536


class ProtocolError(OSError):
    """The answer was not HTTP/1.1 as this client reads it."""


class _NoAnswer(ProtocolError):
    """The server closed the connection before any of an answer."""


class Response:
    """One answer: its status, its headers (lower-case names), and its body, whole or line by line."""

    def __init__(self, reader: io.BufferedReader, status: int, headers: dict[str, str], *, bodiless: bool):
        self.status = status
        self.headers = headers
        self._reader = reader
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._left: int | None = 0 if bodiless else (int(length) if length is not None and not self._chunked else None)
        self._buffer = b""
        self.done = bodiless or self._left == 0
        self.reusable = headers.get("connection", "").lower() != "close" and (self._chunked or self._left is not None)

    def _more(self) -> bytes:
        """The next piece of the body (b"" at its end)."""
        if self.done:
            return b""
        if self._chunked:
            size_line = self._reader.readline(_MAX_LINE)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"a bad chunk size line: {size_line[:40]!r}") from None
            if size == 0:
                while self._reader.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                self.done = True
                return b""
            piece = self._reader.read(size)
            self._reader.readline(_MAX_LINE)  # the CRLF after the chunk
        elif self._left is not None:
            piece = self._reader.read(min(self._left, 65536))
            self._left -= len(piece)
            self.done = self._left <= 0
        else:  # no length: the body runs to the end of the connection
            piece = self._reader.read1(65536)
            self.done = not piece
        if not piece and not self.done:
            raise ProtocolError("the connection closed in the middle of an answer")
        return piece

    def read(self) -> bytes:
        """The rest of the body."""
        parts = [self._buffer]
        self._buffer = b""
        while piece := self._more():
            parts.append(piece)
        return b"".join(parts)

    def readline(self) -> bytes:
        """The body's next line, with its line end (b"" at the end of the body)."""
        while b"\n" not in self._buffer:
            piece = self._more()
            if not piece:
                line, self._buffer = self._buffer, b""
                return line
            self._buffer += piece
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to ``host:port``; an IP address is connected to as it is, without a name lookup
    (``getaddrinfo`` would import the ``idna`` codec, and ``unicodedata`` with it, for nothing)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return sock
    return socket.create_connection((host, port), timeout=timeout)  # a name: look it up


class Connection:
    """One keep-alive connection to ``host:port`` (opened when first used)."""

    def __init__(self, host: str, port: int, timeout: float):
        self.host = host
        self.port = port
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._reader: io.BufferedReader | None = None
        self._last: Response | None = None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._sock is not None:
            self._sock.close()
        self._sock = self._reader = self._last = None

    def _open(self) -> tuple[socket.socket, io.BufferedReader]:
        sock = connect(self.host, self.port, self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no delayed-ACK wait between writes
        self._sock, self._reader = sock, sock.makefile("rb")
        return sock, self._reader

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Response:
        """Send a request; its answer once the status line and headers are in."""
        if self._last is not None and not (self._last.done and self._last.reusable):
            self.close()  # the last answer was not read to its end: its rest would be read as this one's
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(body or b'')}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        reused = self._sock is not None
        try:
            response = self._exchange(message, method)
        except (ConnectionError, _NoAnswer):
            if not reused:
                raise
            self.close()  # closed by the server while idle: once more, on a new connection
            response = self._exchange(message, method)
        self._last = response
        return response

    def _exchange(self, message: bytes, method: str) -> Response:
        sock, reader = (
            (self._sock, self._reader) if self._sock is not None and self._reader is not None else self._open()
        )
        sock.sendall(message)
        status_line = reader.readline(_MAX_LINE)
        if not status_line:
            raise _NoAnswer("the server closed the connection without an answer")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP/1.1 answer: {status_line[:40]!r}")
        headers: dict[str, str] = {}
        while (line := reader.readline(_MAX_LINE)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        status = int(parts[1])
        bodiless = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        return Response(reader, status, headers, bodiless=bodiless)
