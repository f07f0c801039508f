"""The floors ``bench.gateway`` measures the gateway against still forward a call, as the gateway does.

``bench/servers/sdk_proxy.py`` is the simplest gateway the SDK makes, alone or on mcpdeck's stdio
pipes (``--pipes``). If it stopped forwarding, the benchmark would compare the gateway with nothing.
"""

from __future__ import annotations

import os
import sys

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
        async with Client(params, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "mcp__everything__echo" in names
            assert all(name.startswith("mcp__everything__") for name in names)
            for i in range(3):  # more than one, so that the pipes are used again after the first answer
                result = await client.call_tool("mcp__everything__echo", {"message": f"hello {i}"})
                assert not result.is_error
                assert [block.model_dump()["text"] for block in result.content] == [f"Echo: hello {i}"]
