"""A small server on the SDK itself (``MCPServer``, stdio): three small tools, protocol 2026-07-28.

For the memory figures (``python -m bench.footprint``): what a connection costs with a
server of today's SDK, which ``mcp.Client`` (and so mcpdeck) reaches with the 2026-07-28
protocol, a ``subscriptions/listen`` stream open for its tool list changes, while a bare
``ClientSession`` speaks the ``initialize`` handshake to it. Run it as a module from the
repository root (``python -m bench.servers.sdk_small``): run by path, this folder's
``http.py`` would stand in for the standard library's ``http``.
"""

from __future__ import annotations

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


if __name__ == "__main__":
    server.run("stdio")
