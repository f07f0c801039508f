"""``/healthz`` and ``/readyz``, the load balancer's questions, on ``serve``'s app: answered without a token or a
``Host`` header; ready only with every server settled, the store answering, and the process not stopping."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from psycopg import sql

from mcpdeck import Host
from mcpdeck.api import ApiContext
from mcpdeck.config import ConfigStore
from mcpdeck.server._app import build_app
from mcpdeck.store import History
from tests.helpers import ROOT, WAIT, serve_asgi, stdio_server
from tests.postgres import Postgres

pytestmark = pytest.mark.anyio

TOKEN = "health-token-" + "x" * 32
HANG = {"command": sys.executable, "args": ["-m", "tests.servers.hang"], "cwd": str(ROOT), "startupTimeout": 300}


@asynccontextmanager
async def app_of(
    folder: Path, servers: dict[str, Any], history: History | None
) -> AsyncGenerator[tuple[str, ApiContext]]:
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    store = ConfigStore(config)
    async with Host(store=store, log_dir=folder / "logs", wait=False) as host:
        context = ApiContext(host=host, store=store, history=history, replica="r7")
        app = build_app(context, token=TOKEN, hosts={"only.this.name:1"})
        async with serve_asgi(app) as url:
            yield url, context


async def ask(url: str, path: str) -> httpx2.Response:
    """``GET path`` as a health check sends it: no token, and a Host header that names nothing of ours."""
    async with httpx2.AsyncClient(base_url=url, timeout=WAIT) as client:
        return await client.get(path, headers={"Host": "checker.internal"})


async def test_ready_once_every_server_has_settled_and_not_while_stopping(tmp_path: Path) -> None:
    servers = {"basic": stdio_server("basic"), "slow": HANG}
    async with app_of(tmp_path, servers, None) as (url, context):
        alive = await ask(url, "/healthz")
        assert (alive.status_code, alive.json()) == (200, {"status": "alive", "replica": "r7"})
        with anyio.fail_after(WAIT):
            await context.host.wait_settled("basic")
        waiting = await ask(url, "/readyz")  # `slow` never answers its first connect
        assert waiting.status_code == 503
        assert waiting.json()["waiting"] == ["1 server(s) still connecting for the first time"]
        await context.host.remove_server("slow", save=False)
        ready = await ask(url, "/readyz")
        assert (ready.status_code, ready.json()) == (200, {"ready": True, "replica": "r7"})
        refused = await ask(url, "/api/servers")  # everything else stays behind the guard
        assert refused.status_code == 421  # its Host names no allowed host
        context.stop()
        stopping = await ask(url, "/readyz")
        assert (stopping.status_code, stopping.json()["waiting"]) == (503, ["the process is stopping"])


async def test_not_ready_when_the_store_cannot_be_reached(tmp_path: Path, postgres: Postgres) -> None:
    with postgres.database() as store_url, History(store_url, replica="r7") as history:
        async with app_of(tmp_path, {}, history) as (url, _):
            ready = await ask(url, "/readyz")
            assert (ready.status_code, ready.json()) == (200, {"ready": True, "replica": "r7"})
            name = store_url.rsplit("/", 1)[1]
            with await anyio.to_thread.run_sync(lambda: postgres_admin(postgres)) as admin:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
            gone = await ask(url, "/readyz")
            assert gone.status_code == 503
            (why,) = gone.json()["waiting"]
            assert why.startswith(("the store cannot be reached", "the store did not answer"))
            alive = await ask(url, "/healthz")  # alive all the same: a restart would not bring the store back
            assert alive.status_code == 200


def postgres_admin(postgres: Postgres) -> Any:
    import psycopg

    return psycopg.connect(postgres.url(), autocommit=True)
