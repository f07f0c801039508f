"""A server built on today's SDK asks its questions through the gateway, and the client that made the call answers.

The asking server (``tests/servers/asking.py``) asks over the back-channel (``ctx.elicit``,
``ctx.session.create_message``) and, with ``Resolve`` markers, by the era's own means. It is
behind the gateway over stdio and over streamable HTTP; the SDK ``Client`` in front speaks the
handshake era or 2026-07-28 (the gateway then hands it the questions as input-required rounds).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError

from tests.gateway.support import Seen, client, served_gateway
from tests.helpers import WAIT, serve_asgi, stdio_server
from tests.servers.asking import build_app

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def upstream(transport: str) -> AsyncGenerator[dict[str, Any]]:
    """The asking server's config, over ``transport``."""
    if transport == "stdio":
        yield stdio_server("asking")
        return
    async with serve_asgi(build_app()) as base:
        yield {"type": "http", "url": f"{base}/mcp"}


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.parametrize("modern", [False, True], ids=["handshake-client", "2026-client"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_servers_elicitation_and_sampling_reach_the_calling_client_and_its_answers_the_server(
    log_dir: Path, transport: str, modern: bool
) -> None:
    seen = Seen()
    async with upstream(transport) as config, served_gateway(log_dir, {"asking": config}, modern=modern) as served:
        async with client(served.url(), seen, answer={"name": "Ada"}, mode="auto" if modern else "legacy") as via:
            with anyio.fail_after(WAIT):
                version = via.protocol_version
                asked = await via.call_tool("mcp__asking__ask_name", {})
                sampled = await via.call_tool("mcp__asking__summarize", {"text": "a long story"})
                asked_by_marker = await via.call_tool("mcp__asking__ask_name_rounds", {})
                status = served.host.servers["asking"]
    assert (version >= "2026") is modern
    assert status.protocol_version == "2025-11-25"  # the gateway's host opened the server with the handshake
    assert json.loads(text(asked)) == json.loads(text(asked_by_marker)) == {"action": "accept", "data": {"name": "Ada"}}
    assert [e.message for e in seen.elicitations] == ["What is your name?"] * 2
    assert text(sampled) == "m: sampled by the client"
    [sampling] = seen.samplings
    first = sampling.messages[0].content
    assert isinstance(first, types.TextContent) and first.text == "Summarise: a long story"


async def test_a_servers_question_reaches_its_caller_while_another_clients_call_waits_on_the_same_server(
    log_dir: Path,
) -> None:
    """Two clients call the same handshake-era server at once: Bob's call waits for his answer to the gate's
    question (an ``ask`` rule), Ada's call makes the server ask her something. The question came in on the
    server's connection with two clients' calls noted on that server, so the gateway could not tell whose it
    was and the host declined it. Only Ada's request had reached the server: ``origin`` says it is hers."""
    rules = {"ask": ["mcp__asking__roots"]}  # what no rule covers, the calling client approves
    bob_asked, bob_may_answer = anyio.Event(), anyio.Event()

    async def bob_answers(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        bob_asked.set()
        await bob_may_answer.wait()
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    ada_seen = Seen()
    async with (
        upstream("stdio") as config,
        served_gateway(log_dir, {"asking": config}, permissions=rules) as served,
        client(served.url(), ada_seen, answer={"name": "Ada"}, name="ada") as ada,
        Client(
            served.url(), client_info=types.Implementation(name="bob", version="1"), elicitation_callback=bob_answers
        ) as bob,
    ):
        bobs: list[object] = []
        asked: types.CallToolResult | None = None
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:

                async def bob_calls() -> None:
                    try:
                        bobs.append(await bob.call_tool("mcp__asking__roots", {}))
                    except MCPError as error:  # (the server asks Bob for roots he does not have)
                        bobs.append(error)

                tg.start_soon(bob_calls)
                await bob_asked.wait()  # Bob's call is on the gate, noted as running on the server
                asked = await ada.call_tool("mcp__asking__ask_name", {})
                bob_may_answer.set()
    assert asked is not None and json.loads(text(asked)) == {"action": "accept", "data": {"name": "Ada"}}
    assert [e.message for e in ada_seen.elicitations] == ["What is your name?"]
    assert len(bobs) == 1  # and Bob's call went on once he answered
