"""What a connected server's tools cost the host: answers are let go once handed on, each tool is kept small.

Against the benchmark's real servers (``bench/servers/line.py`` over stdio and
``bench/servers/http.py`` over streamable HTTP, both with the realistic ``--filler`` tools
of ~1.1 KB of JSON each), measured with ``gc`` and ``tracemalloc``, which count exactly and
do not depend on the machine's load.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from bench.servers.line import BASE_TOOLS, tool_definitions
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import JSONRPCResponse

from mcpdeck import Host
from tests.helpers import ROOT, WAIT

pytestmark = pytest.mark.anyio

LINE_SERVER = ROOT / "bench" / "servers" / "line.py"


def _stdio(filler: int) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(LINE_SERVER), "--filler", str(filler)]}


@asynccontextmanager
async def _http_server(filler: int) -> AsyncGenerator[str]:
    """The benchmark's HTTP server with ``filler`` filler tools; yields its base URL."""
    command = [sys.executable, "-S", "-m", "bench.servers.http", "--filler", str(filler)]
    async with await anyio.open_process(command, cwd=ROOT, stderr=None) as process:
        assert process.stdout is not None
        try:
            with anyio.fail_after(WAIT):
                first = ""
                async for text in TextReceiveStream(process.stdout):
                    first += text
                    if "\n" in first:
                        break
            assert first.startswith("PORT "), first
            yield f"http://127.0.0.1:{int(first.split()[1])}"
        finally:
            process.terminate()


def _answers_holding(names: set[str]) -> list[JSONRPCResponse]:
    """Live JSON-RPC responses whose result still lists exactly the tools ``names``."""
    gc.collect()
    held: list[JSONRPCResponse] = []
    for obj in gc.get_objects():
        if type(obj) is JSONRPCResponse:
            tools = obj.result.get("tools")
            if (
                isinstance(tools, list)
                and {cast(dict[str, Any], t).get("name") for t in cast(list[Any], tools)} == names
            ):
                held.append(obj)
    return held


@pytest.mark.parametrize(
    ("transport", "filler"),
    [
        ("stdio", 19),  # 23 tools, ~22 KB: one read of the pipe holds the whole answer
        ("stdio", 196),  # 200 tools, ~220 KB: the answer comes in many reads
        ("http", 19),  # one SSE event
        ("http-json", 19),  # one JSON body
    ],
)
async def test_a_servers_tool_list_is_let_go_once_the_catalog_has_it(
    transport: str, filler: int, tmp_path: Path
) -> None:
    names = {tool["name"] for tool in tool_definitions(filler)}
    async with _server_spec(transport, filler) as spec:
        with anyio.fail_after(WAIT):
            async with Host({"big": spec}, log_dir=tmp_path) as host:
                assert {tool.original_name for tool in host.catalog} == names
                # The session's read loop still holds the last message it read; its result must be gone.
                assert _answers_holding(names) == []


@asynccontextmanager
async def _server_spec(transport: str, filler: int) -> AsyncGenerator[dict[str, Any]]:
    """The config of the benchmark's server with ``filler`` filler tools over ``transport``."""
    if transport == "stdio":
        yield _stdio(filler)
        return
    async with _http_server(filler) as base:
        yield {"type": "http", "url": f"{base}/mcp-json" if transport == "http-json" else f"{base}/mcp"}


async def _traced_growth(host: Host, name: str, filler: int) -> int:
    """Traced bytes the host keeps for one more stdio server with ``filler`` filler tools."""
    gc.collect()
    before = tracemalloc.take_snapshot()
    with anyio.fail_after(WAIT):
        await host.add_server(name, _stdio(filler), save=False)
    gc.collect()
    after = tracemalloc.take_snapshot()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def _json_size(filler: int) -> int:
    return sum(len(json.dumps(tool, separators=(",", ":"))) for tool in tool_definitions(filler))


async def test_each_further_tool_costs_at_most_twice_its_json(tmp_path: Path) -> None:
    # Issue #14's goal: each tool kept once, at most 2x the size of its JSON. The slope between a
    # server of 4 tools and one of 23 (the size of many real servers: one read of the pipe) and
    # one of 100 (many reads), after a first server has paid for imports and first use.
    async with Host({"first": _stdio(19)}, log_dir=tmp_path) as host:
        tracemalloc.start()
        try:
            growth = {filler: await _traced_growth(host, f"s{filler}", filler) for filler in (0, 19, 96)}
        finally:
            tracemalloc.stop()
        assert len(host.catalog) == 23 + len(BASE_TOOLS) + 19 + len(BASE_TOOLS) + 96 + len(BASE_TOOLS)
    for low, high in ((0, 19), (19, 96)):
        per_tool = (growth[high] - growth[low]) / (high - low)
        json_per_tool = (_json_size(high) - _json_size(low)) / (high - low)
        assert per_tool <= 2 * json_per_tool, (low, high, per_tool, json_per_tool, growth)


async def _bare_session_growth(stack: AsyncExitStack, servers: int, base: int) -> int:
    """Traced bytes a bare SDK ``ClientSession`` (kept with its ``list_tools()`` result) keeps per stdio server."""
    kept: list[object] = []

    async def connect() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-S", str(LINE_SERVER), "--base", str(base)])
        read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        kept.append((session, (await session.list_tools()).tools))

    await connect()  # imports and first use
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(servers):
            await connect()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename")) // servers


async def _host_growth(host: Host, servers: int, base: int) -> int:
    spec = {"command": sys.executable, "args": ["-S", str(LINE_SERVER), "--base", str(base)]}
    await host.add_server("first", spec, save=False)  # imports and first use
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for n in range(servers):
            await host.add_server(f"s{n}", spec, save=False)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename")) // servers


async def test_a_connected_server_costs_no_more_than_a_bare_sdk_session(tmp_path: Path) -> None:
    # Issue #14's goal for the fixed cost of a connection: a server of 3 small tools costs the
    # host at most 1.1x what it costs a bare ClientSession that keeps its tool list (the line
    # server speaks the initialize handshake, as the bare session does).
    with anyio.fail_after(4 * WAIT):
        async with AsyncExitStack() as stack:
            bare = await _bare_session_growth(stack, 4, base=3)
        async with Host({}, log_dir=tmp_path) as host:
            mcpdeck = await _host_growth(host, 4, base=3)
    assert mcpdeck <= 1.1 * bare, (mcpdeck, bare)
