"""The floors ``bench.gateway`` measures the gateway against still forward a call, as the gateway does.

``bench/servers/sdk_proxy.py`` is the simplest gateway the SDK makes, alone, on mcpdeck's stdio
pipes (``--pipes``) or over streamable HTTP (``--port``). If it stopped forwarding, the benchmark
would compare the gateway with nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import pytest
from bench.gateway import EVERYTHING, ROOT
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("extra", [[], ["--pipes"]], ids=["sdk-alone", "on-mcpdecks-pipes"])
async def test_the_floor_lists_and_calls_the_servers_tools_under_the_gateways_names(extra: list[str]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bench.servers.sdk_proxy", *extra, "everything", str(EVERYTHING)],
        cwd=str(ROOT),
        env=dict(os.environ),
    )
    with anyio.fail_after(60):
        await _lists_and_calls(params)


async def test_the_http_floor_serves_them_over_streamable_http() -> None:
    cmd = [sys.executable, "-m", "bench.servers.sdk_proxy", "--port", "0", "everything", str(EVERYTHING)]
    with anyio.fail_after(60):
        async with await anyio.open_process(cmd, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            assert process.stdout is not None
            printed = b""
            while not printed.endswith(b"\n"):  # the address, printed once it listens
                printed += await process.stdout.receive()
            url = printed.decode().strip()
            assert url.startswith("http://127.0.0.1:")
            try:
                await _lists_and_calls(url)
            finally:
                process.terminate()
            assert await process.wait() is not None


async def _lists_and_calls(target: Any) -> None:
    async with Client(target, mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "mcp__everything__echo" in names
        assert all(name.startswith("mcp__everything__") for name in names)
        for i in range(3):  # more than one, so that the pipes are used again after the first answer
            result = await client.call_tool("mcp__everything__echo", {"message": f"hello {i}"})
            assert not result.is_error
            assert [block.model_dump()["text"] for block in result.content] == [f"Echo: hello {i}"]
