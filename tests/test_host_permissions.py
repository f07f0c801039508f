"""The permission gate as the host applies it: ``call_tool(..., check_permission=True)``."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from mcpdeck import ConfigStore, Host, PermissionDeniedError
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted, current_conversation
from mcpdeck.history import History
from mcpdeck.permissions import Approval, ApprovalRequest

pytestmark = pytest.mark.anyio


def recording_server(calls: list[tuple[str, dict[str, Any]]]) -> MCPServer:
    """A server whose tools note every call that reaches them."""
    server = MCPServer("notes")

    @server.tool()
    def write(text: str) -> str:
        calls.append(("write", {"text": text}))
        return f"wrote {text}"

    @server.tool()
    def read() -> str:
        calls.append(("read", {}))
        return "contents"

    return server


class Approver:
    def __init__(self, *answers: Approval):
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Approval:
        self.asked.append(request)
        return self.answers.pop(0)


async def test_without_an_approver_an_ask_is_denied_and_never_reaches_the_server(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(10):
        async with Host({"notes": recording_server(calls)}, log_dir=tmp_path) as host:
            with pytest.raises(PermissionDeniedError) as caught:
                await host.call_tool("mcp__notes__write", {"text": "x"}, check_permission=True)
            assert caught.value.approved_by == "no-approver"
            assert "--yes" not in str(caught.value) and "to permissions.allow" in str(caught.value)
            # the user's own call needs no gate
            result = await host.call_tool("mcp__notes__write", {"text": "y"})
    assert result.text() == "wrote y"
    assert calls == [("write", {"text": "y"})]


async def test_the_approver_is_asked_and_its_answer_is_on_the_events(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    approver = Approver(Approval.deny("not now"), Approval.session())
    seen: list[Event] = []
    with anyio.fail_after(10):
        async with Host({"notes": recording_server(calls)}, log_dir=tmp_path, approve=approver) as host:
            host.events.on(seen.append)
            with pytest.raises(PermissionDeniedError, match="the user declined: not now"):
                await host.call_tool("mcp__notes__write", {"text": "a"}, check_permission=True)
            await host.call_tool("mcp__notes__write", {"text": "b"}, check_permission=True)
            await host.call_tool("mcp__notes__write", {"text": "c"}, check_permission=True)
    assert calls == [("write", {"text": "b"}), ("write", {"text": "c"})]
    assert [(r.name, r.server, r.arguments) for r in approver.asked] == [
        ("mcp__notes__write", "notes", {"text": "a"}),
        ("mcp__notes__write", "notes", {"text": "b"}),
    ]
    finished = [e for e in seen if isinstance(e, ToolCallFinished)]
    assert [(e.approved_by, e.is_error) for e in finished] == [
        ("denied-by-user", True),
        ("user-session", False),
        ("user-session", False),
    ]
    started = [e for e in seen if isinstance(e, ToolCallStarted)]
    assert [e.approved_by for e in started] == ["denied-by-user", "user-session", "user-session"]


async def test_rules_come_from_the_config_file(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {},
                "permissions": {"deny": ["mcp__notes__write"]},
            }
        )
    )
    store = ConfigStore(config)
    host = Host({"notes": recording_server(calls)}, store=store, log_dir=tmp_path, yes=True)
    with anyio.fail_after(10):
        async with host:
            with pytest.raises(PermissionDeniedError, match="denied by the rule 'mcp__notes__write'"):
                await host.call_tool("mcp__notes__write", {"text": "x"}, check_permission=True)
            read = await host.call_tool("mcp__notes__read", check_permission=True)
    assert read.text() == "contents"
    assert calls == [("read", {})]


async def test_auto_approve_of_a_running_server_config_lets_calls_through(tmp_path: Path) -> None:
    from tests.helpers import stdio_server

    spec = stdio_server("basic") | {"autoApprove": ["echo"]}
    with anyio.fail_after(20):
        async with Host({"basic": spec}, log_dir=tmp_path) as host:
            result = await host.call_tool("mcp__basic__echo", {"text": "hi"}, check_permission=True)
            with pytest.raises(PermissionDeniedError):
                await host.call_tool("mcp__basic__add", {"a": 1, "b": 2}, check_permission=True)
    assert result.text() == "hi"


async def test_a_broken_permissions_object_closes_the_gate_but_not_the_host(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "permissions": {"alow": ["mcp__notes"]}}))
    host = Host({"notes": recording_server(calls)}, store=ConfigStore(config), log_dir=tmp_path, yes=True)
    with anyio.fail_after(10):
        async with host:
            with pytest.raises(PermissionDeniedError, match="unknown key 'alow'"):
                await host.call_tool("mcp__notes__read", check_permission=True)
            assert (await host.call_tool("mcp__notes__read")).text() == "contents"
    assert calls == [("read", {})]


async def test_rules_given_in_code_replace_the_files(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    host = Host({"notes": recording_server(calls)}, log_dir=tmp_path, permissions={"allow": ["mcp__notes__*"]})
    with anyio.fail_after(10):
        async with host:
            await host.call_tool("mcp__notes__write", {"text": "ok"}, check_permission=True)
    assert calls == [("write", {"text": "ok"})]


async def test_history_files_calls_under_their_conversation_with_who_approved(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    approver = Approver(Approval.once(), Approval.deny())
    with History(tmp_path / "history.sqlite3") as history:
        conversation = history.start_conversation(model="openai:test", title="notes", key="conv-1")
        with anyio.fail_after(10):
            notes = {"notes": recording_server(calls)}
            async with Host(notes, log_dir=tmp_path, approve=approver, history=history) as host:
                token = current_conversation.set("conv-1")
                try:
                    await host.call_tool("mcp__notes__write", {"text": "kept"}, check_permission=True)
                    with pytest.raises(PermissionDeniedError):
                        await host.call_tool("mcp__notes__write", {"text": "refused"}, check_permission=True)
                finally:
                    current_conversation.reset(token)
                await host.call_tool("mcp__notes__read")
        records = history.tool_calls()  # waits for the writes queued before it
        assert history.path is not None
        with contextlib.closing(sqlite3.connect(history.path)) as db:
            linked = db.execute("SELECT call_id FROM tool_calls WHERE conversation_id = ?", (conversation,)).fetchall()
    by_args = {json.dumps(r.arguments): r for r in records}
    assert (by_args['{"text": "kept"}'].status, by_args['{"text": "kept"}'].approved_by) == ("ok", "user-once")
    refused = by_args['{"text": "refused"}']
    assert (refused.status, refused.approved_by) == ("denied", "denied-by-user")
    assert (by_args["{}"].status, by_args["{}"].approved_by) == ("ok", None)
    assert len(linked) == 2
    assert calls == [("write", {"text": "kept"}), ("read", {})]


async def test_a_pattern_with_spaces_around_it_closes_the_gate_saying_why(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"permissions": {"allow": ["mcp__notes"], "deny": ["mcp__notes__write "]}}))
    with anyio.fail_after(10):
        async with Host({"notes": recording_server(calls)}, store=ConfigStore(path), log_dir=tmp_path) as host:
            for tool in ("mcp__notes__write", "mcp__notes__read"):
                with pytest.raises(PermissionDeniedError) as caught:
                    await host.call_tool(tool, {"text": "x"} if tool.endswith("write") else {}, check_permission=True)
                assert "the permission rules cannot be read" in str(caught.value)
                assert "'mcp__notes__write ' has spaces around it" in str(caught.value)
    assert calls == []
