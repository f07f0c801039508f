"""One call path: an agent's native tool and a server's tool leave the same events and history records."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from mcpdeck import Host, PermissionDeniedError
from mcpdeck.agent import Agent, AgentEvent, RunFinished, ToolCallDone, ToolCallRequested, tool
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted, current_caller, current_conversation
from mcpdeck.history import History, ToolCallRecord
from mcpdeck.host._call_path import new_call_id
from mcpdeck.results import ToolResult
from tests.helpers import WAIT
from tests.llm.scripted import Call, Reply, Step, serve_scripted

pytestmark = pytest.mark.anyio


def notes_server() -> MCPServer:
    server = MCPServer("notes")

    @server.tool()
    def write(text: str) -> str:
        """Write a note."""
        return f"wrote {text}"

    return server


@tool
def shout(text: str) -> str:
    """Say a text loudly.

    Args:
        text: What to say.
    """
    return text.upper() + "!"


def set_fields(event: Event | ToolCallRecord) -> set[str]:
    """The fields an event or record carries a value in."""
    return {name for name, value in vars(event).items() if value is not None}


def of_call(events: list[Event], name: str) -> tuple[ToolCallStarted, ToolCallFinished]:
    started = [e for e in events if isinstance(e, ToolCallStarted) and e.name == name]
    finished = [e for e in events if isinstance(e, ToolCallFinished) and e.name == name]
    assert len(started) == len(finished) == 1, f"{name}: {started} {finished}"
    assert started[0].call_id == finished[0].call_id
    return started[0], finished[0]


@dataclass
class Run:
    """What a run that called ``shout`` and ``mcp__notes__write`` left behind."""

    agent: Agent
    events: list[AgentEvent]
    seen: list[Event]
    """The host's events."""
    records: dict[str, ToolCallRecord]
    """The history's records, by tool name."""


async def call_both(tmp_path: Path, permissions: dict[str, list[str]]) -> Run:
    """An agent run for a client (``current_caller``) that calls the native tool and the MCP tool, recorded."""
    seen: list[Event] = []
    script: list[Step] = [
        Reply(tool_calls=[Call("shout", {"text": "hi"}), Call("mcp__notes__write", {"text": "milk"})]),
        Reply(text="done"),
    ]
    token = current_caller.set("a client")  # who the run works for (the gateway sets it)
    try:
        with History(tmp_path / "history.sqlite3") as history:
            async with (
                Host({"notes": notes_server()}, log_dir=tmp_path, permissions=permissions, history=history) as host,
                serve_scripted("openai", script) as server,
            ):
                host.events.on(seen.append)
                agent = Agent(
                    host,
                    model="openai:scripted-model",
                    api_key="test-key",
                    base_url=server.base_url,
                    tools=[shout],
                    resource_tools=False,
                    history=history,
                )
                async with agent:
                    with anyio.fail_after(WAIT):
                        events = [event async for event in agent.run("go")]
            records = {record.name: record for record in history.tool_calls()}
    finally:
        current_caller.reset(token)
    assert isinstance(events[-1], RunFinished)
    return Run(agent, events, seen, records)


async def test_a_native_call_and_an_mcp_call_leave_the_same_events_and_history_records(tmp_path: Path) -> None:
    run = await call_both(tmp_path, {"allow": ["mcp__notes", "shout"]})
    agent, events, seen, records = run.agent, run.events, run.seen, run.records
    native_started, native_finished = of_call(seen, "shout")
    mcp_started, mcp_finished = of_call(seen, "mcp__notes__write")
    # the same fields are set on both, with values of the same meaning
    assert set_fields(native_started) == set_fields(mcp_started)
    assert set_fields(native_finished) == set_fields(mcp_finished)
    assert (native_started.server, native_started.tool, native_started.arguments) == ("", "shout", {"text": "hi"})
    assert (mcp_started.server, mcp_started.tool) == ("notes", "write")
    for started, finished, text in [
        (native_started, native_finished, "HI!"),
        (mcp_started, mcp_finished, "wrote milk"),
    ]:
        assert started.conversation == agent.conversation is not None
        assert started.caller == "a client"
        assert started.approved_by == finished.approved_by == "rule"
        assert (finished.is_error, finished.error, finished.result_size) == (False, None, len(text))
        assert 0 < finished.duration < WAIT
    # the agent's own events and the results carry the same timing and approval
    done = {e.name: e for e in events if isinstance(e, ToolCallDone)}
    for name, finished in [("shout", native_finished), ("mcp__notes__write", mcp_finished)]:
        assert done[name].result.duration == finished.duration
        assert done[name].result.approved_by == done[name].approved_by == "rule"
    # and the history files both alike
    native, mcp = records["shout"], records["mcp__notes__write"]
    assert set_fields(native) == set_fields(mcp)
    assert native.to_json().keys() == mcp.to_json().keys()
    assert [(r.status, r.approved_by, r.caller, r.call_id) for r in (native, mcp)] == [
        ("ok", "rule", "a client", native_started.call_id),
        ("ok", "rule", "a client", mcp_started.call_id),
    ]
    assert (native.server, native.result_size, native.duration) == ("", 3, native_finished.duration)


async def test_a_refused_native_call_is_on_the_record_as_a_refused_mcp_call_is(tmp_path: Path) -> None:
    run = await call_both(tmp_path, {"deny": ["mcp__notes", "shout"]})
    events, seen, records = run.events, run.seen, run.records
    done = {e.name: e for e in events if isinstance(e, ToolCallDone)}
    for name in ("shout", "mcp__notes__write"):
        started, finished = of_call(seen, name)
        assert started.approved_by == finished.approved_by == "denied-by-rule"
        assert finished.is_error
        assert finished.error is not None and finished.error.startswith(f"Permission denied for {name}")
        assert done[name].denied and done[name].result.is_error
        assert done[name].result.text() == finished.error  # what the model is told
        assert (records[name].status, records[name].approved_by) == ("denied", "denied-by-rule")
    assert set_fields(of_call(seen, "shout")[1]) == set_fields(of_call(seen, "mcp__notes__write")[1])


async def test_a_cancelled_native_call_ends_on_the_record(tmp_path: Path) -> None:
    finished: list[ToolCallFinished] = []
    ended = anyio.Event()
    entered = anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Never answers."""
        entered.set()
        await anyio.sleep_forever()
        return "never"

    def on_event(event: Event) -> None:
        if isinstance(event, ToolCallFinished):
            finished.append(event)
            ended.set()

    script: list[Step] = [Reply(tool_calls=[Call("wait_forever", {})])]
    async with Host({}, log_dir=tmp_path) as host, serve_scripted("openai", script) as server:
        host.events.on(on_event)
        agent = Agent(
            host, model="openai:scripted-model", api_key="test-key", base_url=server.base_url, tools=[wait_forever]
        )
        async with agent:
            with anyio.fail_after(WAIT):
                async for event in agent.run("wait"):
                    if isinstance(event, ToolCallRequested):
                        await entered.wait()
                        break
                await ended.wait()
    assert [(e.name, e.server, e.is_error, e.error, e.approved_by) for e in finished] == [
        ("wait_forever", "", True, "cancelled", "native")
    ]


async def test_call_native_is_open_to_programs_with_or_without_the_gate(tmp_path: Path) -> None:
    seen: list[Event] = []
    received: list[dict[str, Any]] = []

    async def run(arguments: dict[str, Any]) -> ToolResult:
        received.append(arguments)
        return await shout.call(arguments)

    async with Host({}, log_dir=tmp_path, permissions={"deny": ["shout"]}) as host:
        host.events.on(seen.append)
        token = current_conversation.set("talk")
        try:
            result = await host.call_native("shout", {"text": "a"}, run)
            with pytest.raises(PermissionDeniedError) as refused:
                await host.call_native("shout", {"text": "b"}, run, check_permission=True)
        finally:
            current_conversation.reset(token)
    assert received == [{"text": "a"}]  # the refused call never ran
    assert (result.name, result.server, result.tool, result.text(), result.approved_by) == (
        "shout",
        "",
        "shout",
        "A!",
        None,
    )
    assert refused.value.approved_by == "denied-by-rule"
    started = [e for e in seen if isinstance(e, ToolCallStarted)]
    ended = [e for e in seen if isinstance(e, ToolCallFinished)]
    assert [(e.arguments, e.conversation, e.approved_by) for e in started] == [
        ({"text": "a"}, "talk", None),
        ({"text": "b"}, "talk", "denied-by-rule"),
    ]
    assert [(e.is_error, e.result_size) for e in ended] == [(False, 2), (True, None)]
    assert ended[0].duration == result.duration


def test_call_ids_are_unique_and_later_calls_have_greater_ids() -> None:
    """The history's unique index on ``call_id`` stays append-only only if ids grow with time (a random
    id lands anywhere in it: a read from the file per call once the history outgrows SQLite's cache)."""
    earlier = [new_call_id() for _ in range(10_000)]
    time.sleep(0.002)  # the scenario, not a wait for anything: calls made later (ids count milliseconds)
    later = [new_call_id() for _ in range(1_000)]
    assert len(set(earlier + later)) == 11_000
    assert all(re.fullmatch(r"[0-9a-f]{32}", call_id) for call_id in earlier + later)
    assert min(later) > max(earlier)
    assert earlier == sorted(earlier, key=lambda call_id: call_id[:12])  # in time order, to the millisecond
