"""Fixtures: the real tool schemas and results of the npm reference servers, live and as a snapshot.

``real_catalog`` connects ``server-everything`` and ``server-filesystem`` once per session.
``snapshot`` is the same schemas saved in ``data/real_schemas.json`` for the pure tests; run
with ``MCPDECK_UPDATE_SNAPSHOT=1`` to rewrite it from the live servers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from mcpdeck import Host, ToolResult
from mcpdeck.catalog import Catalog
from tests.helpers import NODE_BIN, WAIT
from tests.providers.support import SNAPSHOT


@dataclass(frozen=True)
class RealServers:
    """What the reference servers gave: their catalog, some call results, and a folder they serve."""

    catalog: Catalog
    results: dict[str, ToolResult]
    root: Path


@pytest.fixture(scope="session")
def real(tmp_path_factory: pytest.TempPathFactory) -> RealServers:
    """The reference servers' catalog and results (connected once, in an event loop of its own)."""
    return anyio.run(_connect, tmp_path_factory)


async def _connect(tmp_path_factory: pytest.TempPathFactory) -> RealServers:
    root = tmp_path_factory.mktemp("fs-root")
    (root / "notes.txt").write_text("first line\n")
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("keep out")
    servers = {
        "everything": {"command": str(NODE_BIN / "mcp-server-everything")},
        "fs": {"command": str(NODE_BIN / "mcp-server-filesystem"), "args": [str(root)], "roots": False},
    }
    async with Host(servers, log_dir=tmp_path_factory.mktemp("logs")) as host:
        for name, status in host.servers.items():
            assert status.error is None, f"{name}: {status.error}"
        with anyio.fail_after(WAIT):
            results = {
                "echo": await host.call_tool("mcp__everything__echo", {"message": "hello"}),
                "image": await host.call_tool("mcp__everything__get-tiny-image", {}),
                "structured": await host.call_tool("mcp__everything__get-structured-content", {"location": "Chicago"}),
                "denied": await host.call_tool("mcp__fs__read_text_file", {"path": str(outside)}),
            }
        catalog = host.catalog
    if os.environ.get("MCPDECK_UPDATE_SNAPSHOT"):
        keys = ("name", "server", "tool", "description", "inputSchema")
        tools = [{key: tool.to_json()[key] for key in keys} for tool in catalog]
        SNAPSHOT.write_text(json.dumps(tools, indent=1, ensure_ascii=False) + "\n")
    return RealServers(catalog, results, root)
