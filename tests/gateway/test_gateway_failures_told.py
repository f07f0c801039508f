"""What an MCP client of the gateway is told when something goes wrong: a server crashing mid-call, a call
refused for want of someone to ask (with advice a gateway user can follow), a bad profile edit (which breaks
only that profile), an approval accepted without a decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from mcpdeck import Host
from mcpdeck.gateway import Gateway
from tests.gateway.support import Seen, client, served_gateway
from tests.helpers import WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio


async def test_a_server_crashing_mid_call_is_a_tool_error_that_names_it(log_dir: Path) -> None:
    """docs/gateway.md: host-side problems (the server is down ...) are tool error results saying so.
    The client must not get the SDK's bare ``Connection closed`` (-32000), which names no server."""
    servers = {"basic": stdio_server("basic"), "other": stdio_server("basic")}
    async with served_gateway(log_dir, servers) as served:
        with anyio.fail_after(WAIT):
            async with client(served.url(), Seen()) as c:
                crashed = await c.call_tool("mcp__basic__crash", {})
                other = await c.call_tool("mcp__other__echo", {"text": "still here"})
    assert crashed.is_error
    text = crashed.content[0]
    assert isinstance(text, types.TextContent)
    assert "basic" in text.text and "crash" in text.text
    assert not other.is_error


async def test_a_call_refused_for_want_of_someone_to_ask_gives_advice_a_gateway_user_can_follow(
    log_dir: Path,
) -> None:
    """Neither ``serve --stdio`` nor ``gateway`` takes ``--yes``: the refusal must not tell the person to use it.
    (A call no rule covers is the client's to approve: an ``ask`` rule is what needs someone to ask.)"""
    servers = {"basic": stdio_server("basic")}
    async with served_gateway(log_dir, servers, permissions={"ask": ["mcp__basic__echo"]}) as served:
        with anyio.fail_after(WAIT):
            async with client(served.url(), Seen(), elicitation=False, name="cursor") as c:
                refused = await c.call_tool("mcp__basic__echo", {"text": "hi"})
    assert refused.is_error
    text = refused.content[0]
    assert isinstance(text, types.TextContent)
    assert "cursor 1.0 cannot be asked" in text.text
    assert "--yes" not in text.text, text.text


async def test_one_malformed_profile_does_not_take_the_other_profiles_down(tmp_path: Path) -> None:
    """A typo in a profile someone adds must not break the clients of every other profile, nor answer them
    with the JSON-RPC code 0 (which is no error code at all)."""
    config = tmp_path / "mcp.json"
    doc: dict[str, Any] = {
        "mcpServers": {"basic": stdio_server("basic"), "other": stdio_server("basic")},
        "permissions": {"allow": ["mcp__*"]},
        "profiles": {"good": {"servers": ["basic"], "prefix": False}},
    }
    config.write_text(json.dumps(doc))
    async with (
        Host.from_file(config, log_dir=tmp_path / "logs") as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
    ):
        with anyio.fail_after(WAIT):
            async with client(f"{base}/mcp/good", Seen()) as c:
                assert "echo" in {tool.name for tool in (await c.list_tools()).tools}
                doc["profiles"]["typo"] = {"servers": ["basic", "other"], "prefix": False}
                config.write_text(json.dumps(doc))
                try:
                    names = {tool.name for tool in (await c.list_tools()).tools}
                except MCPError as error:
                    pytest.fail(f"the good profile broke: code {error.code}: {error.message}")
    assert "echo" in names


async def test_an_approval_accepted_without_a_decision_is_not_reported_as_declined(log_dir: Path) -> None:
    """A client that answers the gate's form with ``accept`` and no ``decision`` did not decline; the refusal
    should say what was missing, not "the user declined: ... answered accept"."""
    servers = {"basic": stdio_server("basic")}
    async with served_gateway(log_dir, servers, permissions={"ask": ["mcp__basic__echo"]}) as served:
        with anyio.fail_after(WAIT):
            async with client(served.url(), Seen(), answer={}) as c:
                refused = await c.call_tool("mcp__basic__echo", {"text": "hi"})
    assert refused.is_error
    text = refused.content[0]
    assert isinstance(text, types.TextContent)
    assert "declined" not in text.text and "decision" in text.text, text.text
