"""Replicas of ``mcpdeck serve`` as real processes, for the fleet's tests: one config, one shared state
folder and the token ``MCPDECK_TOKEN`` gives, one at a time (``replica``) or several started at once and
ready (``fleet``); and a health check sent as raw bytes."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.helpers import ROOT, cli_environment, descendants, kill

__all__ = ["BALANCER", "START", "TOKEN", "Replica", "fleet", "raw_get", "ready", "replica"]

TOKEN = "fleet-token-" + "t" * 32
BALANCER = "mcp.balancer.test:8080"
START = 60.0
"""Seconds a replica gets to say it serves (a busy 2-core machine takes ~17 s for a bare serve)."""


@dataclass
class Replica:
    name: str
    process: Process
    url: str
    state: dict[str, Any]


@asynccontextmanager
async def replica(
    folder: Path, config: Path, name: str, *args: str, start: float = START, **env: str
) -> AsyncGenerator[Replica]:
    """``mcpdeck serve --port 0 ARGS`` with ``env`` (its replica id among them), its state in ``folder/state``;
    it must say it serves within ``start`` seconds."""
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "serve", "--port", "0", *args]
    environment = cli_environment(folder, MCPDECK_STATE_DIR=str(folder / "state"), MCPDECK_TOKEN=TOKEN, **env)
    environment["MCPDECK_LOG_DIR"] = str(folder / "logs" / name)
    process = await anyio.open_process(command, cwd=ROOT, env=environment)
    try:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(start):
            while not (await lines.receive_until(b"\n", 1 << 16)).startswith(b"mcpdeck serves"):
                pass
        (path,) = (folder / "state").glob(f"*.{name}.json")
        state = json.loads(path.read_text())
        yield Replica(name, process, state["url"], state)
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


async def ready(one: Replica) -> None:
    """Wait until the replica's ``/readyz`` answers 200 (its store reached, its servers settled)."""
    with anyio.fail_after(START):
        while (await anyio.to_thread.run_sync(raw_get, one.url, b"GET /readyz HTTP/1.0\r\n\r\n"))[0] != 200:  # noqa: ASYNC110
            await anyio.sleep(0.1)


@asynccontextmanager
async def fleet(
    folder: Path, config: Path, names: Sequence[str], *args: str, start: float = START, **env: str
) -> AsyncGenerator[dict[str, Replica]]:
    """The replicas ``names`` (``--replica-id NAME ARGS``), started at once and each ready, by name; all
    stopped at the end."""
    started: dict[str, Replica] = {}
    all_ready = anyio.Event()
    stop = anyio.Event()

    async def one(name: str) -> None:
        async with replica(folder, config, name, *args, "--replica-id", name, start=start, **env) as running:
            await ready(running)
            started[name] = running
            if len(started) == len(names):
                all_ready.set()
            await stop.wait()

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(one, name)
        await all_ready.wait()
        try:
            yield {name: started[name] for name in names}
        finally:
            stop.set()


def raw_get(url: str, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send ``request`` as it is (a health check's bytes) and read the whole answer: its status and JSON body."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)
