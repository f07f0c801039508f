"""The basic test server: one of each kind of tool a host has to handle.

Run over stdio with ``python -m tests.servers.basic``, or in-process / over HTTP through
``build_server()`` (a fresh server each time: an HTTP app can only run once).
"""

from __future__ import annotations

import base64
import os

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

__all__ = ["INSTRUCTIONS", "LONG_TOOL", "ODD_TOOL", "PNG", "Forecast", "build_server"]

INSTRUCTIONS = "Use echo to repeat text and add to sum two integers."
ODD_TOOL = "tool.with spaces/and-dots"
"""A tool name with characters that cannot go in a catalog name."""
LONG_TOOL = "summarise_the_quarterly_report_for_the_whole_department"
"""Long enough that ``mcp__<server>__<name>`` exceeds 64 characters for any server name."""
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""


class Forecast(BaseModel):
    """A structured result."""

    city: str
    temperature: float
    conditions: list[str]


def build_server(name: str = "basic") -> MCPServer:
    """A new basic server."""
    server = MCPServer(name, instructions=INSTRUCTIONS, version="1.2.3")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(message: str) -> str:
        """Always fail with ``message`` (an error result for the model, not a protocol error)."""
        raise ToolError(message)

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait ``seconds``, then answer."""
        await anyio.sleep(seconds)
        return f"slept {seconds:g} s"

    @server.tool()
    async def slow_progress(steps: int, delay: float, ctx: Context) -> str:
        """Work for ``steps`` steps of ``delay`` seconds, reporting progress after each."""
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"done after {steps} steps"

    @server.tool()
    def crash() -> str:
        """Kill the server process at once (mid-call)."""
        os._exit(1)

    @server.tool()
    def image() -> Image:
        """A tiny PNG."""
        return Image(data=PNG, format="png")

    @server.tool()
    def structured(city: str = "Oslo") -> Forecast:
        """A forecast, as structured content."""
        return Forecast(city=city, temperature=-3.5, conditions=["snow", "wind"])

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable in the server's process ("" if unset)."""
        return os.environ.get(name, "")

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool called ``name`` and tell the client the tool list changed."""

        def added() -> str:
            return f"I am {name}"

        server.add_tool(added, name=name, description=f"Added at run time: {name}")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()  # to `subscriptions/listen` streams (2026-07-28)
        else:
            await ctx.session.send_tool_list_changed()  # a notification on the session (the handshake era)
        return f"added {name}"

    def odd() -> str:
        return "odd tool called"

    def long() -> str:
        return "long tool called"

    server.add_tool(odd, name=ODD_TOOL, description="A tool whose name needs sanitising.")
    server.add_tool(long, name=LONG_TOOL, description="A tool whose catalog name must be cut.")
    return server


if __name__ == "__main__":
    build_server().run()
