"""Every gateway face stops on SIGTERM within a bounded time, whatever its clients and servers do: here a client
subscribed to a resource whose server never answers ``resources/unsubscribe`` (``features``' ``note://stuck``),
then left without ending its session (HTTP) or stayed connected (stdio).

Each test starts the face as a real process and a real SDK client (or, over stdio, what Claude Desktop sends).
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import sys
import warnings
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client.streamable_http import streamable_http_client

from mcpdeck.server import read_state
from tests.gateway.support import Seen, client
from tests.helpers import ROOT, WAIT, cli_environment, descendants, kill, stdio_server, wait_gone
from tests.servers.features import STUCK

pytestmark = pytest.mark.anyio

STOPPED_WITHIN = 10.0
"""Seconds a face may take to exit after SIGTERM here (its own bound is 5 s; the machine may be loaded)."""
START = 2 * WAIT
"""Seconds a face may take to start (a fresh interpreter importing the SDK, on a machine that may be loaded)."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "claude-ai", "version": "1"},
    },
}


def _config(folder: Path) -> Path:
    path = folder / "mcp.json"
    servers = {"features": stdio_server("features", "--legacy")}
    path.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["mcp__*"]}}))
    return path


@asynccontextmanager
async def _started(folder: Path, *args: str, **env: str) -> AsyncGenerator[Process]:
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(_config(folder)), *args]
    environment = cli_environment(folder, MCPDECK_HISTORY="off", **env)
    process = await anyio.open_process(command, cwd=ROOT, env=environment)
    try:
        yield process
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


async def _line(stream: BufferedByteReceiveStream, pattern: str) -> str:
    while True:
        line = (await stream.receive_until(b"\n", 1 << 20)).decode()
        if pattern in line:
            return line


@asynccontextmanager
async def _subscribed(url: str, token: str) -> AsyncGenerator[None]:
    """An SDK client subscribed to the stuck resource, connected (its GET stream open) until the block ends;
    then it goes away without ``DELETE`` of its session."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with client(transport, Seen()) as c:
            with anyio.fail_after(WAIT), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # resources/subscribe is deprecated as of 2026-07-28
                await c.subscribe_resource(STUCK)  # pyright: ignore[reportDeprecated]
            yield


async def _stopped_by_sigterm(process: Process) -> None:
    servers = descendants(process.pid)
    assert servers, "no server was started"
    process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(STOPPED_WITHIN):
        await process.wait()
    assert process.returncode is not None, f"still running {STOPPED_WITHIN:g} s after SIGTERM"
    left = await wait_gone(servers)
    kill(left)
    assert not left, "its servers outlived it"


@pytest.mark.parametrize("left", [True, False], ids=["client-left", "client-connected"])
async def test_gateway_port_stops_whatever_a_subscribed_client_did(tmp_path: Path, left: bool) -> None:
    async with _started(tmp_path, "gateway", "--port", "0", MCPDECK_GATEWAY_TOKEN="stop-token") as process:
        assert process.stderr is not None
        with anyio.fail_after(START):
            said = await _line(BufferedByteReceiveStream(process.stderr), "mcpdeck gateway at ")
        async with _subscribed(said.split(" at ", 1)[1].strip(), "stop-token"):
            if not left:
                await _stopped_by_sigterm(process)
        if left:
            await _stopped_by_sigterm(process)


@pytest.mark.parametrize("left", [True, False], ids=["client-left", "client-connected"])
async def test_serve_stops_whatever_a_subscribed_gateway_client_did(tmp_path: Path, left: bool) -> None:
    async with _started(tmp_path, "serve", "--port", "0") as process:
        assert process.stdout is not None
        with anyio.fail_after(START):
            said = await _line(BufferedByteReceiveStream(process.stdout), "console: ")
        base = said.split("console: ", 1)[1].split()[0].split("/#", 1)[0].rstrip("/")
        state = read_state(tmp_path / "mcp.json")  # the token is in the state file (the link has a login code)
        assert state is not None
        async with _subscribed(f"{base}/mcp", state.token):
            if not left:
                await _stopped_by_sigterm(process)
        if left:
            await _stopped_by_sigterm(process)
    assert process.returncode == 0


@pytest.mark.parametrize("command", ["serve", "gateway"])
async def test_stdio_stops_while_its_client_holds_a_subscription(tmp_path: Path, command: str) -> None:
    """Claude Desktop quitting sends SIGTERM with the client still connected and subscribed."""
    async with _started(tmp_path, "--no-attach", command, "--stdio") as process:
        assert process.stdin is not None and process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(START):
            await process.stdin.send(json.dumps(INITIALIZE).encode() + b"\n")
            await _line(lines, '"id":0')
        with anyio.fail_after(WAIT):
            await process.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            subscribe: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe"}
            subscribe["params"] = {"uri": STUCK}
            await process.stdin.send(json.dumps(subscribe).encode() + b"\n")
            answer = json.loads(await _line(lines, '"id":1'))
        assert answer.get("result") == {}, answer
        await _stopped_by_sigterm(process)


def _refused(port: int) -> bool:
    """Whether the port takes no new connections (uvicorn closed its listener: the stop has begun)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


async def test_gateway_port_answers_a_request_still_arriving_when_it_stops_and_logs_no_error(tmp_path: Path) -> None:
    """A request whose body is still on its way when SIGTERM comes is one in flight: it is answered in the stop's
    grace, by session managers that outlive the HTTP server (they were stopped first: the SDK answered 500 and
    logged "Task group is not initialized")."""
    async with _started(tmp_path, "gateway", "--port", "0", MCPDECK_GATEWAY_TOKEN="stop-token") as process:
        assert process.stderr is not None
        errors = BufferedByteReceiveStream(process.stderr)
        with anyio.fail_after(START):
            said = await _line(errors, "mcpdeck gateway at ")
        url = said.split(" at ", 1)[1].strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        body = json.dumps(INITIALIZE).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer stop-token\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        with anyio.fail_after(START):
            async with await anyio.connect_tcp("127.0.0.1", port) as first:  # the profile's manager is made
                await first.send(head + body)
                assert (await first.receive()).startswith(b"HTTP/1.1 200")
            stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(head)  # the headers now, the body once the stop has begun
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(WAIT):
                while not await anyio.to_thread.run_sync(_refused, port):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                await stream.send(body)
                answer = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while b"\r\n\r\n" not in answer:
                        answer += await stream.receive()
        with anyio.fail_after(STOPPED_WITHIN):
            await process.wait()
            rest = await _rest(process.stderr)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert "Task group is not initialized" not in rest
    assert "Exception in ASGI application" not in rest


async def _rest(stream: Any) -> str:
    text = b""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while True:
            text += await stream.receive()
    return text.decode(errors="replace")
