"""The SDK's client spans are dropped in a gateway process only when they go nowhere (no tracer provider),
and requests and their errors still travel the same way then."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CALLS = """
import anyio, mcp_types as types
from mcp import Client, MCPError
from mcp.server import Server
from mcp.shared import jsonrpc_dispatcher
from mcpdeck.gateway._spans import drop_idle_client_spans

async def call_tool(ctx, params):
    if params.name != "echo":
        raise MCPError(code=-32602, message=f"Unknown tool: {params.name}")
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.arguments["m"])])

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema={"type": "object"})])

async def main():
    before = jsonrpc_dispatcher.otel_span
    dropped = drop_idle_client_spans()
    async with Client(Server("s", on_list_tools=list_tools, on_call_tool=call_tool), mode="legacy") as client:
        result = await client.call_tool("echo", {"m": "hi"})
        try:
            await client.call_tool("nope", {})
            error = None
        except MCPError as e:
            error = (e.error.code, e.error.message)
    print(dropped, jsonrpc_dispatcher.otel_span is before, result.content[0].text, error)

anyio.run(main)
"""


def _run(prelude: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", prelude + _CALLS], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_a_tracer_provider_the_client_spans_are_dropped_and_calls_and_errors_still_travel() -> None:
    assert _run("") == "True False hi (-32602, 'Unknown tool: nope')"


def test_a_program_that_traces_keeps_the_client_spans() -> None:
    prelude = "from opentelemetry import trace\ntrace.set_tracer_provider(trace.NoOpTracerProvider())\n"
    assert _run(prelude) == "False True hi (-32602, 'Unknown tool: nope')"
