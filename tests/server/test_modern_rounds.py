"""``serve``'s gateway offers protocol 2026-07-28, and a server's question in the middle of such a client's call
survives a load balancer without affinity: the client's next round, sent to ANOTHER replica, goes on there
(PostgreSQL relays it to the replica holding the call) or ends at once with a clear error (SQLite; the holder
killed). Real ``serve`` processes (``tests/support/replicas.py``), a real PostgreSQL (``store_url``), the SDK's
client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import descendants, kill, stdio_server
from tests.support.replicas import START, TOKEN, raw_get, replica

LIMIT = 180.0
"""Seconds a whole test may take: two serve processes start slowly on a busy 2-core machine."""
WAIT = 30.0
"""Seconds one round may take (it is answered at once, or by a live replica in well under a second)."""
ANSWER: dict[str, str | int | float | bool | list[str] | None] = {"username": "ada", "email": "ada@example.com"}


def _config(folder: Path) -> Path:
    config = folder / "mcp.json"
    servers = {"conf": stdio_server("conformance_server")}
    config.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["mcp__conf"]}}))
    return config


async def _ready(url: str) -> None:
    with anyio.fail_after(START):
        while (await anyio.to_thread.run_sync(raw_get, url, b"GET /readyz HTTP/1.0\r\n\r\n"))[0] != 200:  # noqa: ASYNC110
            await anyio.sleep(0.1)


async def _unused(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("the rounds are driven by hand here")


@asynccontextmanager
async def modern_client(url: str, mode: str = "2026-07-28", **options: Any) -> AsyncGenerator[Client]:
    """An SDK client of a replica's gateway (``url`` is the replica's), in the 2026-07-28 mode, that can be
    asked questions (elicitation)."""
    options.setdefault("elicitation_callback", _unused)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode, **options) as client,
    ):
        yield client


async def _asked(client: Client) -> types.InputRequiredResult:
    """A call of ``test_elicitation``, made by hand: its first round ends with the server's question."""
    first = await client.session.call_tool(
        "mcp__conf__test_elicitation", {"message": "who are you?"}, allow_input_required=True
    )
    assert isinstance(first, types.InputRequiredResult), first
    (question,) = (first.input_requests or {}).values()
    assert isinstance(question, types.ElicitRequest) and question.params.message == "who are you?", question
    return first


async def _next_round(client: Client, first: types.InputRequiredResult) -> types.CallToolResult:
    (key,) = (first.input_requests or {}).keys()
    answer = types.ElicitResult(action="accept", content=ANSWER)
    return await client.session.call_tool(
        "mcp__conf__test_elicitation",
        {"message": "who are you?"},
        input_responses={key: answer},
        request_state=first.request_state,
    )


def test_serve_offers_2026_07_28_and_a_question_mid_call_is_answered_in_the_client_s_next_round(
    tmp_path: Path,
) -> None:
    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await _offered(tmp_path)

    anyio.run(bounded)


async def _offered(tmp_path: Path) -> None:
    asked: list[str] = []

    async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=ANSWER)

    store = str(tmp_path / "history.sqlite3")
    async with replica(tmp_path, _config(tmp_path), "r1", "--store", store, "--replica-id", "r1") as r1:
        await _ready(r1.url)
        # "auto": the client probes server/discover, and takes 2026-07-28 only if the gateway offers it
        async with modern_client(r1.url, mode="auto", elicitation_callback=on_elicit) as client:
            assert client.protocol_version == "2026-07-28"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"mcp__conf__test_simple_text", "mcp__conf__test_elicitation"} <= tools
            with anyio.fail_after(WAIT):
                simple = await client.call_tool("mcp__conf__test_simple_text", {})
                assert not simple.is_error and simple.content, simple
                # the server asks in the middle of the call; the SDK's client answers in its next round
                answered = await client.call_tool("mcp__conf__test_elicitation", {"message": "who are you?"})
            assert asked == ["who are you?"]
            assert not answered.is_error and "ada@example.com" in str(answered.content), answered
            # the state of a call waiting for its client names the replica that holds it
            first = await _asked(client)
            assert (first.request_state or "").startswith("r1."), first.request_state
            assert "ada@example.com" in str((await _next_round(client, first)).content)


def test_a_round_sent_to_another_replica_goes_on_or_fails_at_once_and_never_hangs(
    tmp_path: Path, store_url: str
) -> None:
    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await _other_replica(tmp_path, store_url)

    anyio.run(bounded)


async def _other_replica(tmp_path: Path, store_url: str) -> None:
    config = _config(tmp_path)
    flags = ("--store", store_url)
    async with (
        replica(tmp_path, config, "r1", *flags, "--replica-id", "r1") as r1,
        replica(tmp_path, config, "r2", *flags, "--replica-id", "r2") as r2,
    ):
        await _ready(r1.url)
        await _ready(r2.url)
        async with modern_client(r1.url) as on_r1, modern_client(r2.url) as on_r2:
            first = await _asked(on_r1)
            assert (first.request_state or "").startswith("r1."), first.request_state
            if store_url.startswith("postgresql"):
                # r2 relays the round to r1 over the store; r1's call goes on and its result comes back
                with anyio.fail_after(WAIT):
                    result = await _next_round(on_r2, first)
                assert not result.is_error and "ada@example.com" in str(result.content), result
                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with httpx2.AsyncClient(headers=headers, timeout=WAIT) as http:
                    listed = await http.get(f"{r2.url}/api/history/calls", params={"server": "conf", "limit": 50})
                calls = [c for c in listed.json()["toolCalls"] if c["tool"] == "test_elicitation"]
                assert [(c["replica"], c["status"]) for c in calls] == [("r1", "ok")], calls  # run once, on r1

                # r1 dies with a call waiting for its client: the round sent to r2 fails at once, clearly
                first = await _asked(on_r1)
                kill({r1.process.pid, *descendants(r1.process.pid)})
                await r1.process.wait()
                with anyio.fail_after(WAIT), pytest.raises(MCPError) as gone:
                    await _next_round(on_r2, first)
                assert "held by replica r1, which replica r2 cannot reach" in gone.value.message, gone.value.message
                assert "call the tool again" in gone.value.message
            else:
                # SQLite cannot relay: r2 says so at once
                with anyio.fail_after(WAIT), pytest.raises(MCPError) as lost:
                    await _next_round(on_r2, first)
                assert "held by replica r1" in lost.value.message, lost.value.message
                assert "the store is not PostgreSQL" in lost.value.message
                assert "call the tool again" in lost.value.message
