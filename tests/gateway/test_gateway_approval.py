"""Who approves a call through the gateway: the calling client for what no rule covers (Claude Desktop,
Cursor and VS Code ask their user before each call), elicitation for an ``ask`` rule, never anyone for a
``deny``; and ``gateway.approval: "ask"`` to have the gateway ask about everything. Real SDK clients over
streamable HTTP, the conformance server behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from mcpdeck import Host
from mcpdeck.errors import ConfigError
from mcpdeck.gateway import Gateway
from mcpdeck.history import History
from tests.gateway.support import Seen, client, served_gateway
from tests.helpers import WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio

NO_PREFIX = {"conf": {"servers": ["conf"], "prefix": False}}


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_the_calling_client_approves_what_no_rule_covers_and_the_history_says_so(
    log_dir: Path, tmp_path: Path
) -> None:
    """A client set up from ``--print-client-config`` offers no elicitation and asks its own user before
    each call: with no rules at all, it can use the tools, resources and prompts; a ``deny`` still refuses."""
    history = History(tmp_path / "history.db")
    rules = {"deny": ["mcp__conf__test_error_handling"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX, history=history) as served:
        async with client(served.url("conf"), Seen(), elicitation=False, name="claude-ai") as desktop:
            with anyio.fail_after(WAIT):
                called = await desktop.call_tool("test_simple_text", {})
                read = await desktop.read_resource("test://static-text")
                prompt = await desktop.get_prompt("test_simple_prompt")
                denied = await desktop.call_tool("test_error_handling", {})
    records = {(r.tool, r.status, r.approved_by, r.caller) for r in history.tool_calls()}
    history.close()
    assert not called.is_error, _text(called)
    assert read.contents and prompt.messages
    assert denied.is_error and "denied by the rule 'mcp__conf__test_error_handling'" in _text(denied)
    assert ("test_simple_text", "ok", "client", "claude-ai 1.0 (via profile conf)") in records
    assert ("test_error_handling", "denied", "denied-by-rule", "claude-ai 1.0 (via profile conf)") in records


@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["handshake-client", "2026-client"])
async def test_an_ask_rule_asks_the_client_in_words_for_what_is_asked(log_dir: Path, mode: str) -> None:
    """On the handshake era the gate asks on the request's stream; a 2026-07-28 client (no back-channel) is
    asked in its call's next round."""
    rules = {"ask": ["mcp__conf__test_simple_text", "mcp__conf__resource:*", "mcp__conf__prompt:*"]}
    seen = Seen()
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), seen, answer={"decision": "once"}, mode=mode) as via:
            assert (via.protocol_version == "2026-07-28") is (mode == "auto")
            with anyio.fail_after(WAIT):
                called = await via.call_tool("test_simple_text", {})
                await via.read_resource("test://static-text")
                await via.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
                unruled = await via.call_tool("test_image_content", {})  # no rule: the client's own word
    assert not called.is_error and not unruled.is_error
    tool, resource, prompt = (e.message for e in seen.elicitations)
    assert tool.startswith("mcpdeck: run the tool 'test_simple_text' of server 'conf'") and "arguments {}" in tool
    assert resource.startswith("mcpdeck: read the resource test://static-text of server 'conf'")
    assert prompt.startswith("mcpdeck: get the prompt 'test_prompt_with_arguments' of server 'conf'")
    assert '"arg1": "a"' in prompt
    forms = [e for e in seen.elicitations if isinstance(e, types.ElicitRequestFormParams)]
    schemas = [json.dumps(e.requested_schema) for e in forms]
    assert "Allow this call?" in schemas[0] and "Allow this read?" in schemas[1] and "Allow this prompt?" in schemas[2]
    if mode == "legacy":  # "for the rest of this session" is offered only to a client that has a session
        assert "this tool" in schemas[0] and "this resource" in schemas[1] and "this prompt" in schemas[2]
    else:
        assert all('"session"' not in schema for schema in schemas), schemas


async def test_an_ask_rule_a_client_cannot_be_asked_about_is_refused_saying_why_and_what_to_change(
    log_dir: Path,
) -> None:
    rules = {"ask": ["mcp__conf__test_simple_text", "mcp__conf__prompt:*"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen(), elicitation=False, name="cursor") as cursor:
            with anyio.fail_after(WAIT):
                refused = await cursor.call_tool("test_simple_text", {})
                with pytest.raises(MCPError) as prompt:
                    await cursor.get_prompt("test_simple_prompt")
    text = _text(refused)
    assert refused.is_error
    assert "the rule 'mcp__conf__test_simple_text' in permissions.ask" in text, text
    assert "cursor 1.0 cannot be asked (it does not offer elicitation)" in text, text
    assert '"mcp__conf__test_simple_text" to permissions.allow' in text, text
    assert "declined" not in text and "--yes" not in text, text
    assert "cursor 1.0 cannot be asked" in prompt.value.message and "declined" not in prompt.value.message


async def test_a_refusal_names_the_client_that_answered_never_an_unasked_user(log_dir: Path) -> None:
    rules = {"ask": ["mcp__conf__test_simple_text"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen(), answer={"decision": "deny"}, name="refuser") as no:
            with anyio.fail_after(WAIT):
                refused = await no.call_tool("test_simple_text", {})
    assert refused.is_error
    assert "refused by refuser 1.0 (it answered deny)" in _text(refused), _text(refused)
    assert "the user" not in _text(refused)


async def test_approval_ask_has_the_gateway_ask_about_every_call_no_rule_allows(log_dir: Path) -> None:
    rules = {"allow": ["mcp__conf__test_image_content"]}
    seen = Seen()
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX, approval="ask") as served:
        async with client(served.url("conf"), seen, answer={"decision": "once"}) as asked:
            with anyio.fail_after(WAIT):
                first = await asked.call_tool("test_simple_text", {})
                allowed = await asked.call_tool("test_image_content", {})
        async with client(served.url("conf"), Seen(), elicitation=False, name="mute") as mute:
            with anyio.fail_after(WAIT):
                refused = await mute.call_tool("test_simple_text", {})
    assert not first.is_error and not allowed.is_error
    assert len(seen.elicitations) == 1
    text = _text(refused)
    assert refused.is_error and "mute 1.0 cannot be asked" in text, text
    assert "gateway.approval" in text, text


async def test_the_config_files_gateway_approval_is_the_default_and_an_edit_applies(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    doc: dict[str, Any] = {"mcpServers": {"basic": stdio_server("basic")}, "gateway": {"approval": "ask"}}
    config.write_text(json.dumps(doc))
    async with (
        Host.from_file(config, log_dir=tmp_path / "logs") as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
    ):
        async with client(f"{base}/mcp", Seen(), elicitation=False) as mute:
            with anyio.fail_after(WAIT):
                refused = await mute.call_tool("mcp__basic__echo", {"text": "hi"})
                doc["gateway"]["approval"] = "client"
                config.write_text(json.dumps(doc))
                assert host.config_store is not None
                host.config_store.document()  # the look at the file the gateway takes twice a second
                allowed = await mute.call_tool("mcp__basic__echo", {"text": "hi"})
    assert refused.is_error and "gateway.approval" in _text(refused)
    assert not allowed.is_error, _text(allowed)


async def test_a_gateway_approval_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "gateway": {"approval": "sometimes"}}))
    async with Host.from_file(config, log_dir=tmp_path / "logs") as host:
        with pytest.raises(ConfigError, match=r'gateway\.approval: .sometimes. is not a choice; write "client"'):
            Gateway(host)
