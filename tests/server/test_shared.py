"""What two replicas of ``mcpdeck serve`` on one config file and one PostgreSQL store share: an edit made through
one's API reaches the other's servers, and a client's approval "for this session" given on one holds on the
other for that client (its token and name) and for no other client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import stdio_server
from tests.postgres import Postgres
from tests.support.replicas import START, TOKEN, replica

LIMIT = 150.0
"""Seconds the whole test may take: two processes starting take longer than ``TEST_LIMIT`` on a busy machine."""
SEEN = 10.0
"""Seconds B gets to show A's edit: its follower looks every 0.5 s; far below the 90 s startup timeout of the
server that never answers, for which the follower used to wait before it looked again."""
ASKED = "mcp__basic__echo"


def test_an_edit_and_a_session_approval_made_on_one_replica_hold_on_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    async def bounded() -> None:
        with postgres.database() as store, anyio.fail_after(LIMIT):
            await _two_replicas(tmp_path, store)

    anyio.run(bounded)


def _client(
    url: str, name: str, asked: list[str], answer: str, mode: ConnectMode = "legacy"
) -> tuple[httpx2.AsyncClient, Client]:
    """An SDK client named ``name``, of the handshake era unless ``mode`` says otherwise (an approval "for this
    session" needs a session), that answers the gate's question with ``answer``."""

    async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": answer})

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    transport = streamable_http_client(f"{url}/mcp", http_client=http)
    info = types.Implementation(name=name, version="1.0")
    client = Client(transport, elicitation_callback=on_elicit, client_info=info, mode=mode)
    return http, client


async def _ready(client: Client) -> None:
    while ASKED not in {tool.name for tool in (await client.list_tools()).tools}:  # noqa: ASYNC110
        await anyio.sleep(0.1)  # `basic` is still starting on this replica


async def _call(url: str, name: str, answer: str, mode: ConnectMode = "legacy") -> tuple[bool, list[str]]:
    """One call of the asked-about tool by client ``name`` in a new session: whether it ran, and what it was asked."""
    asked: list[str] = []
    http, client = _client(url, name, asked, answer, mode)
    async with http, client:
        await _ready(client)
        result = await client.call_tool(ASKED, {"text": name})
    return not result.is_error, asked


async def _two_replicas(tmp_path: Path, store: str) -> None:
    config = tmp_path / "mcp.json"
    document: dict[str, Any] = {"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"ask": [ASKED]}}
    config.write_text(json.dumps(document))
    async with (
        replica(tmp_path, config, "a", "--store", store, "--replica-id", "a") as a,
        replica(tmp_path, config, "b", "--store", store, "--replica-id", "b") as b,
    ):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            # An editor adds a server that never answers; then a server is added through A's API.
            document["mcpServers"]["slow"] = stdio_server("hang", startupTimeout=90)
            config.write_text(json.dumps(document))
            added = await http.post(
                f"{a.url}/api/servers",
                json={"name": "late", "config": {"command": "no-such-command", "disabled": True}},
            )
            assert added.status_code == 201, added.text
            with anyio.fail_after(SEEN):
                while "late" not in {s["name"] for s in (await http.get(f"{b.url}/api/servers")).json()["servers"]}:  # noqa: ASYNC110
                    await anyio.sleep(0.05)

        # Alice allows the tool for her session on A; on B, in another session of hers, she is not asked again.
        asked_on_a: list[str] = []
        http, alice = _client(a.url, "alice", asked_on_a, "session")
        async with http, alice:
            with anyio.fail_after(START):
                await _ready(alice)
                assert not (await alice.call_tool(ASKED, {"text": "alice"})).is_error
                assert len(asked_on_a) == 1
                assert await _call(b.url, "alice", "deny") == (True, [])
                # Bob, under the same token, is asked on B (and refuses).
                ran, asked = await _call(b.url, "bob", "deny")
                assert not ran and len(asked) == 1
        # Her session on A ended: the approval went with it (B's session that used it ended too).
        with anyio.fail_after(START):
            ran, asked = await _call(b.url, "alice", "deny")
        assert not ran and len(asked) == 1
        # A 2026-07-28 client has no session: its "session" answer on A allows that call only; on B it is asked.
        with anyio.fail_after(START):
            ran, asked = await _call(a.url, "carol", "session", mode="auto")
            assert ran and len(asked) == 1
            ran, asked = await _call(b.url, "carol", "deny", mode="auto")
        assert not ran and len(asked) == 1
