"""A server whose output is hostile or broken: huge messages, deep nesting, stray lines on stdout.

``python -m tests.servers.hostile [--banner N]`` serves over stdio:

- ``--banner N`` prints N lines that are not JSON on stdout before serving;

Its tools write to stdout themselves, beside the SDK's own writer, so the host meets what a
broken server really sends:

- ``endless(megabytes)`` writes that many MiB of one line with no newline, then waits;
- ``deep(depth)`` answers with a result nested ``depth`` levels deep (written raw);
- ``stray(text)`` prints ``text`` as a line on stdout, then answers ``ok``.

``build_server()`` is the same server for streamable HTTP, where the tools answer normally:
``big(megabytes)`` returns that many MiB of text, ``nested(depth)`` a structured result
nested ``depth`` levels deep (the HTTP app is wrapped by tests to send such answers raw).
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

__all__ = ["build_server", "deep_answer"]

_MIB = 1024 * 1024
_wire = [1]  # the fd of the protocol's stdout (the SDK's stdio server points fd 1 at stderr while it serves)


def deep_answer(request_id: object, depth: int, *, id_last: bool = False) -> bytes:
    """A JSON-RPC answer to ``request_id`` whose structured content is nested ``depth`` levels deep.

    The id comes first (as the Python SDK writes it) or after the result (as some Node servers do).
    """
    result = f'"result": {{"content": [], "structuredContent": {{"x": {"[" * depth}{"]" * depth}, "id": 7}}}}'
    id_part = f'"id": {json.dumps(request_id)}'
    parts = [result, '"jsonrpc": "2.0"', id_part] if id_last else ['"jsonrpc": "2.0"', id_part, result]
    return ("{" + ", ".join(parts) + "}").encode()


def _write_raw(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(_wire[0], view) :]


def build_server(name: str = "hostile") -> MCPServer:
    """A new hostile server."""
    server = MCPServer(name)

    @server.tool()
    async def endless(megabytes: int) -> str:
        """Write this many MiB of one line with no newline to stdout, then wait."""
        chunk = b"x" * _MIB
        _write_raw(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "')
        for _ in range(megabytes):
            _write_raw(chunk)
        await anyio.sleep(60)
        return "never"

    @server.tool()
    async def deep(depth: int, ctx: Context, id_last: bool = False) -> str:
        """Answer this call with a result nested ``depth`` levels deep, written raw (the id first or last)."""
        _write_raw(deep_answer(ctx.request_context.request_id, depth, id_last=id_last) + b"\n")
        await anyio.sleep(60)  # the raw line was the answer; the SDK's own never comes
        return "never"

    @server.tool()
    def noisy(megabytes: float) -> str:
        """Write this many MiB of lines to stderr, then answer."""
        line = b"noise " * 20 + b"\n"
        for _ in range(int(megabytes * _MIB) // len(line)):
            os.write(2, line)
        os.write(2, b"noisy: done\n")
        return "done"

    @server.tool()
    def stray(text: str) -> str:
        """Print ``text`` as a line on stdout, then answer."""
        _write_raw(text.encode() + b"\n")
        return "ok"

    @server.tool()
    def big(megabytes: float) -> str:
        """Return this many MiB of text."""
        return "y" * int(megabytes * _MIB)

    @server.tool()
    def unsized() -> str:
        """Over HTTP, answered by the test's wrapper with a body too large and no length."""
        return "not wrapped"

    @server.tool()
    def nested(depth: int) -> dict[str, object]:
        """Return a structured result nested ``depth`` levels deep."""
        value: object = []
        for _ in range(depth):
            value = [value]
        return {"x": value}

    return server


if __name__ == "__main__":
    _wire[0] = os.dup(1)
    args = sys.argv[1:]
    if "--banner" in args:
        for n in range(int(args[args.index("--banner") + 1])):
            _write_raw(f"Welcome to the hostile server, line {n + 1}\n".encode())
    build_server().run("stdio")
