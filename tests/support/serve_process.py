"""A real ``mcpdeck serve`` process for a test: started on port 0 for a config of servers, its state, a client
of its API."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from tests.helpers import ROOT, WAIT, descendants, kill


@dataclass
class Serving:
    process: Process
    config: Path
    state: dict[str, Any]
    output: list[str]

    def client(self) -> httpx2.AsyncClient:
        headers = {"Authorization": f"Bearer {self.state['token']}"}
        return httpx2.AsyncClient(base_url=self.state["url"], headers=headers, timeout=WAIT)


def environment(folder: Path, **extra: str) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "MCPDECK_STATE_DIR": str(folder / "state"),
        "MCPDECK_LOG_DIR": str(folder / "logs"),
        "MCPDECK_HISTORY": "off",
        "NO_COLOR": "1",
        **extra,
    }


@asynccontextmanager
async def serving(
    folder: Path,
    servers: dict[str, Any],
    *args: str,
    env: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
) -> AsyncGenerator[Serving]:
    """Start ``mcpdeck serve --port 0`` for a config of ``servers`` (``env``: more variables for it; ``settings``:
    more keys of the config file); yield once it has printed its URL."""
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers, **(settings or {})}))
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "serve", "--port", "0", *args]
    with (folder / "stderr.txt").open("wb") as errors:
        process = await anyio.open_process(command, env=environment(folder, **(env or {})), cwd=ROOT, stderr=errors)
    output: list[str] = []
    try:
        assert process.stdout is not None
        with anyio.fail_after(WAIT):
            async for chunk in TextReceiveStream(process.stdout):
                output.append(chunk)
                if "Press Ctrl-C" in "".join(output):
                    break
        state_files = list((folder / "state").glob("*.json"))
        assert len(state_files) == 1
        state = json.loads(state_files[0].read_text())
        yield Serving(process, config, state, output)
    finally:
        if process.returncode is None:
            kill(descendants(process.pid) | {process.pid})
        await process.aclose()


async def wait_connected(client: httpx2.AsyncClient, name: str) -> dict[str, Any]:
    """The server's status once it is connected: listen to the events first, then look, then wait."""
    with anyio.fail_after(WAIT):
        async with client.stream("GET", "/api/events") as events:
            lines = events.aiter_lines()
            assert await anext(lines) == ": connected"
            while True:
                answer = await client.get(f"/api/servers/{name}")  # 404 until the follower adds it
                if answer.status_code == 200 and answer.json()["status"]["state"] == "connected":
                    return answer.json()["status"]
                while (
                    not (line := await anext(lines)).startswith("data: ") or json.loads(line[6:]).get("server") != name
                ):
                    pass


async def rest_of_output(process: Process) -> str:
    assert process.stdout is not None
    text = ""
    async for chunk in TextReceiveStream(process.stdout):
        text += chunk
    return text
