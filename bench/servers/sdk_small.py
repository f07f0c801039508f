"""A small server on the SDK itself (``MCPServer``, stdio): three small tools, protocol 2026-07-28.

For the memory figures (``python -m bench.footprint``): what a connection costs with a
server of today's SDK, which ``mcp.Client`` (and so mcpdeck) reaches with the 2026-07-28
protocol, a ``subscriptions/listen`` stream open for its tool list changes, while a bare
``ClientSession`` speaks the ``initialize`` handshake to it. Run it as a module from the
repository root (``python -m bench.servers.sdk_small``): run by path, this folder's
``http.py`` would stand in for the standard library's ``http``. With ``--http`` it serves
streamable HTTP on a free port of 127.0.0.1 instead, and prints its URL first (``python -m bench.era``).
It speaks both protocol eras, as ``MCPServer`` does.
"""

from __future__ import annotations

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk-small")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def upper(text: str) -> str:
    """The text in capitals."""
    return text.upper()


async def _serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as uvicorn's own sockets are
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", access_log=False)
    await uvicorn.Server(config).serve([sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        anyio.run(_serve_http)
    else:
        server.run("stdio")
