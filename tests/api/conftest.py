"""The API served for real: a host on a config file, the whole app (guard included) under uvicorn
on 127.0.0.1, and an ``httpx2`` client that talks to it over TCP."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer

from mcpdeck import Host
from mcpdeck._observability.call_metrics import CallMetrics
from mcpdeck.api import ApiContext, ChatRoom
from mcpdeck.auth import TokenStore
from mcpdeck.config import ConfigStore
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.history import History, Redactor, secrets_of
from mcpdeck.server._app import build_app
from mcpdeck.traffic import Traffic
from tests.helpers import WAIT, stdio_server
from tests.servers.basic import build_server

SECRET = "s3cret-token-value-42"
"""A literal secret in the test config (basic's env); it must never appear in an answer."""
HEADER_SECRET = "hdr-secret-9f8e7d6c"


@dataclass
class Api:
    """A running API and a client with the token."""

    url: str
    port: int
    token: str
    host: Host
    ctx: ApiContext
    config: Path
    client: httpx2.AsyncClient

    def file(self) -> dict[str, Any]:
        """The config file as it is now."""
        return json.loads(self.config.read_text())


def write_config(path: Path, servers: dict[str, Any], **extra: Any) -> None:
    path.write_text(json.dumps({"mcpServers": servers, **extra}, indent=2))


def default_servers() -> dict[str, Any]:
    return {
        "basic": stdio_server("basic", env={"API_TOKEN": SECRET, "PLAIN": "x"}),
        "remote": {
            "url": f"http://127.0.0.1:9/mcp?key={HEADER_SECRET}",
            "headers": {"Authorization": f"Bearer {HEADER_SECRET}"},
        },
    }


@asynccontextmanager
async def running_api(
    folder: Path,
    servers: dict[str, Any] | None = None,
    *,
    in_process: bool | MCPServer = True,
    history: bool = True,
    auth_store: TokenStore | None = None,
    text: str | None = None,
    **extra: Any,
) -> AsyncGenerator[Api]:
    """Serve the API for a config of ``servers`` (default: basic over stdio, a dead remote, basic in-process),
    or for a config file of this ``text`` (its bytes as they are)."""
    config = folder / "mcp.json"
    if text is None:
        write_config(config, default_servers() if servers is None else servers, **extra)
    else:
        config.write_bytes(text.encode())
    store = ConfigStore(config)
    db = History(folder / "history.sqlite3", redactor=Redactor(secrets_of(store.read()))) if history else None
    token = "test-token-" + "x" * 32
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `serve` does (no 40 ms delayed ACKs)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port: int = sock.getsockname()[1]
    chats = ChatRoom()
    host = Host(  # as `mcpdeck serve` makes it
        store=store,
        log_dir=folder / "logs",
        traffic=Traffic(),
        approve=chats.asks.approve,
        elicitation=chats.asks.elicit,
        sampling=chats.sample,
        auth_store=auth_store,
    )
    with sock:
        async with host:
            if in_process:
                server = build_server("inproc") if in_process is True else in_process
                await host.add_server("inproc", server, save=False)
            ctx = ApiContext(host=host, store=store, history=db, chats=chats, auth_store=auth_store)
            ctx.metrics = CallMetrics()
            off = ctx.attach()
            host.history = db
            host.events.on(ctx.metrics.record, ToolCallStarted, ToolCallFinished)
            app = build_app(ctx, token=token, hosts={f"127.0.0.1:{port}", f"localhost:{port}"})
            server = uvicorn.Server(
                uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2)
            )
            url = f"http://127.0.0.1:{port}"
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=WAIT) as client:
                    try:
                        yield Api(url, port, token, host, ctx, config, client)
                    finally:
                        ctx.stop()
                        await chats.aclose()
                        server.should_exit = True
            off()
    if db is not None:
        db.close()


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with running_api(tmp_path) as running:
        yield running
