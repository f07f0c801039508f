"""The agent loop, end to end: a real provider SDK against a scripted wire server, real MCP servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from mcpdeck import Host
from mcpdeck.agent import (
    Agent,
    AgentError,
    AgentEvent,
    ModelTurn,
    RunFinished,
    TextChunk,
    ToolCallDone,
    ToolCallRequested,
    ToolProgress,
    ToolsFound,
    tool,
)
from mcpdeck.errors import ProviderError
from mcpdeck.events import ToolCallFinished
from mcpdeck.history import History
from mcpdeck.permissions import Approval, ApprovalRequest
from tests.helpers import WAIT, stdio_server
from tests.llm.scripted import Call, Fail, Received, Reply, ScriptedServer, Step, serve_scripted

pytestmark = pytest.mark.anyio

APIS = ["openai", "openai-responses", "anthropic", "gemini"]
READ_ONLY = types.ToolAnnotations(read_only_hint=True)


class Barrier:
    """Lets its callers through only once ``parties`` of them are waiting at the same time."""

    def __init__(self, parties: int):
        self.parties = parties
        self.arrived = 0
        self.event = anyio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.event.set()
        await self.event.wait()


@dataclass
class Notes:
    """What the notes server saw."""

    log: list[str] = field(default_factory=list[str])
    barrier: Barrier = field(default_factory=lambda: Barrier(2))


def notes_server(notes: Notes) -> MCPServer:
    server = MCPServer("notes")

    @server.tool()
    def write(text: str) -> str:
        """Write a note."""
        notes.log.append(f"write {text}")
        return f"wrote {text}"

    @server.tool(annotations=READ_ONLY)
    async def look(tag: str) -> str:
        """Look at a note (waits until another look runs at the same time)."""
        notes.log.append(f"look {tag} start")
        await notes.barrier.wait()
        notes.log.append(f"look {tag} end")
        return f"saw {tag}"

    @server.tool()
    async def step(tag: str) -> str:
        """A step that changes something."""
        notes.log.append(f"step {tag} start")
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        notes.log.append(f"step {tag} end")
        return f"stepped {tag}"

    @server.tool(annotations=READ_ONLY)
    def big(size: int) -> str:
        """A long text."""
        return "x" * size

    @server.tool()
    async def block() -> str:
        """Never answers."""
        notes.log.append("block start")
        await anyio.sleep_forever()
        return "never"

    return server


@pytest.fixture
async def notes(tmp_path: Path) -> AsyncIterator[tuple[Host, Notes]]:
    record = Notes()
    host = Host({"notes": notes_server(record)}, log_dir=tmp_path, permissions={"allow": ["mcp__notes"]})
    async with host:
        yield host, record


async def collect(agent: Agent, prompt: str) -> list[AgentEvent]:
    with anyio.fail_after(WAIT):
        events = [event async for event in agent.run(prompt)]
    assert isinstance(events[-1], RunFinished)
    return events


def agent_for(host: Host, server: ScriptedServer, api: str = "openai", **options: Any) -> Agent:
    return Agent(host, model=f"{api}:scripted-model", api_key="test-key", base_url=server.base_url, **options)


def done(events: Sequence[AgentEvent]) -> list[ToolCallDone]:
    return [e for e in events if isinstance(e, ToolCallDone)]


def last_result(request: Received) -> str:
    return request.tool_results[-1][1]


@pytest.mark.parametrize("api", APIS)
async def test_a_call_reaches_its_server_and_the_answer_streams_back(notes: tuple[Host, Notes], api: str) -> None:
    host, record = notes
    script: list[Step] = [
        Reply(text="Let me write that.", tool_calls=[Call("mcp__notes__write", {"text": "milk"})]),
        lambda request: Reply(text=f"Done: {last_result(request)}.", chunks=4),
    ]
    async with serve_scripted(api, script) as server, agent_for(host, server, api, system="Be brief.") as agent:
        events = await collect(agent, "Note: buy milk")
    assert record.log == ["write milk"]
    chunks = [e.text for e in events if isinstance(e, TextChunk)]
    assert len(chunks) >= 4
    assert "".join(chunks).endswith("Done: wrote milk.")
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.reason, finished.steps, finished.text) == ("done", 2, "Done: wrote milk.")
    assert finished.usage.input_tokens == 22  # 11 per scripted turn
    first, second = server.requests
    assert first.system == "Be brief."
    assert first.model == "scripted-model"
    assert {"mcp__notes__write", "list_mcp_resources", "read_mcp_resource"} <= set(first.tool_names)
    assert "search_tools" not in first.tool_names
    assert [text for _, text in second.tool_results] == ["wrote milk"]
    # the conversation keeps the whole exchange for the next run
    assert len(agent.messages) >= 4


async def test_read_only_calls_run_side_by_side_and_the_others_in_order(notes: tuple[Host, Notes]) -> None:
    host, record = notes
    calls = [
        Call("mcp__notes__look", {"tag": "a"}),
        Call("mcp__notes__look", {"tag": "b"}),  # waits for a: only passes if both run at once
        Call("mcp__notes__step", {"tag": "c"}),
        Call("mcp__notes__step", {"tag": "d"}),
        Call("mcp__notes__write", {"text": "e"}),
    ]
    script: list[Step] = [Reply(tool_calls=calls), Reply(text="all done")]
    async with serve_scripted("openai", script) as server:
        async with agent_for(host, server) as agent:
            events = await collect(agent, "go")
    assert record.log[:4] in (
        ["look a start", "look b start", "look a end", "look b end"],
        ["look a start", "look b start", "look b end", "look a end"],
    )
    assert record.log[4:] == ["step c start", "step c end", "step d start", "step d end", "write e"]
    # results go back in the order the model asked, each with its own call id
    request = server.requests[1]
    sent_ids = [c.id for e in events if isinstance(e, ModelTurn) for c in e.tool_calls]
    assert [call_id for call_id, _ in request.tool_results] == sent_ids
    assert [text for _, text in request.tool_results] == ["saw a", "saw b", "stepped c", "stepped d", "wrote e"]
    requested = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [e.read_only for e in requested] == [True, True, False, False, False]
    assert {e.server for e in requested} == {"notes"}


async def test_the_step_limit_ends_a_run_that_keeps_calling_tools(notes: tuple[Host, Notes]) -> None:
    host, record = notes
    script: list[Step] = [Reply(tool_calls=[Call("mcp__notes__write", {"text": str(i)})]) for i in range(5)]
    async with serve_scripted("openai", script) as server:
        async with agent_for(host, server, max_steps=2) as agent:
            events = await collect(agent, "loop")
    assert len(server.requests) == 2
    assert record.log == ["write 0", "write 1"]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.reason, finished.steps) == ("max_steps", 2)
    assert not [e for e in events if isinstance(e, AgentError)]
    # the turn's calls were answered, so the conversation can go on
    assert server.requests[1].tool_results[-1][1] == "wrote 0"
    assert agent.messages[-1]["role"] == "tool"


async def test_a_result_over_the_cap_is_cut_with_a_note(notes: tuple[Host, Notes]) -> None:
    host, _ = notes
    script: list[Step] = [Reply(tool_calls=[Call("mcp__notes__big", {"size": 10_000})]), Reply(text="long")]
    async with serve_scripted("anthropic", script) as server:
        async with agent_for(host, server, "anthropic", max_result_tokens=100) as agent:
            events = await collect(agent, "big")
    (call,) = done(events)
    assert call.cut == 10_000 - 400
    assert call.result.size == 10_000  # the event keeps the whole result; the model gets the cut text
    sent = last_result(server.requests[1])
    assert sent.startswith("x" * 400 + "\n\n[... 9,600 of 10,000 characters cut")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_denied_call_never_reaches_the_server_and_the_model_is_told(tmp_path: Path, api: str) -> None:
    record = Notes()
    host = Host(
        {"notes": notes_server(record)},
        log_dir=tmp_path,
        permissions={"allow": ["mcp__notes"], "deny": ["mcp__notes__write"]},
    )
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__notes__write", {"text": "secret"}), Call("mcp__notes__step", {"tag": "ok"})]),
        lambda request: Reply(text=" | ".join(text for _, text in request.tool_results)),
    ]
    async with host, serve_scripted(api, script) as server:
        async with agent_for(host, server, api) as agent:
            events = await collect(agent, "try")
    assert record.log == ["step ok start", "step ok end"]
    denied, allowed = done(events)
    assert (denied.denied, denied.approved_by, denied.result.is_error) == (True, "denied-by-rule", True)
    assert (allowed.denied, allowed.approved_by) == (False, "rule")
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert "Permission denied for mcp__notes__write: denied by the rule 'mcp__notes__write' | " in final.text
    assert final.text.endswith("| stepped ok")


async def test_the_approver_decides_what_the_rules_leave_open(tmp_path: Path) -> None:
    record = Notes()
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.once() if request.arguments.get("text") == "yes" else Approval.deny("not that one")

    host = Host({"notes": notes_server(record)}, log_dir=tmp_path, approve=approve)
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__notes__write", {"text": "yes"}), Call("mcp__notes__write", {"text": "no"})]),
        Reply(text="ok"),
    ]
    async with host, serve_scripted("openai", script) as server:
        async with agent_for(host, server) as agent:
            events = await collect(agent, "write")
    assert record.log == ["write yes"]
    assert [r.arguments for r in asked] == [{"text": "yes"}, {"text": "no"}]
    assert [(d.approved_by, d.denied) for d in done(events)] == [("user-once", False), ("denied-by-user", True)]
    assert "the user declined: not that one" in server.requests[1].tool_results[1][1]


@pytest.mark.parametrize(("status", "words"), [(401, "refused the API key"), (500, "HTTP 500"), (429, "rate")])
async def test_a_provider_error_is_an_event_not_an_exception(
    notes: tuple[Host, Notes], status: int, words: str
) -> None:
    host, _ = notes
    async with (
        serve_scripted("openai", [Fail(status, retry_after=0)] * 3) as server,
        agent_for(host, server, max_retries=0) as agent,
    ):
        events = await collect(agent, "hello")
        (error,) = [e for e in events if isinstance(e, AgentError)]
        assert error.kind == "provider"
        assert words.lower() in error.message.lower()
        assert error.retryable == (status != 401)
        finished = events[-1]
        assert isinstance(finished, RunFinished) and finished.reason == "error"
        with anyio.fail_after(WAIT), pytest.raises(ProviderError):
            await agent.ask("again")


async def test_a_server_dying_mid_run_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__crash", {})]),
        lambda request: Reply(text=f"the tool said: {last_result(request)}"),
    ]
    host = Host({"basic": stdio_server("basic")}, log_dir=tmp_path, yes=True)
    async with host, serve_scripted("openai", script) as server:
        async with agent_for(host, server) as agent:
            events = await collect(agent, "crash it")
    errors = [e for e in events if isinstance(e, AgentError)]
    assert [(e.kind, e.tool) for e in errors] == [("tool", "mcp__basic__crash")]
    (call,) = done(events)
    assert call.result.is_error
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.reason == "done"
    assert finished.text.startswith("the tool said: Error: ")
    assert "basic" in finished.text


async def test_native_tools_run_beside_mcp_tools(notes: tuple[Host, Notes]) -> None:
    host, record = notes
    seen: list[int] = []

    @tool(read_only=True)
    def count_words(text: str, minimum: int = 1) -> int:
        """Count the words of a text.

        Args:
            text: The text.
            minimum: Words shorter than this are not counted.
        """
        seen.append(minimum)
        return len([w for w in text.split() if len(w) >= minimum])

    script: list[Step] = [
        Reply(
            tool_calls=[
                Call("count_words", {"text": "a bb ccc", "minimum": 2}),
                Call("mcp__notes__write", {"text": "2"}),
                Call("count_words", {"text": 5}),  # wrong type: the model is told, nothing runs
                Call("no_such_tool", {}),
                Call("count_words", '{"text": '),  # malformed JSON
            ]
        ),
        lambda request: Reply(text="\n".join(text for _, text in request.tool_results)),
    ]
    async with serve_scripted("openai", script) as server:
        async with agent_for(host, server, tools=[count_words]) as agent:
            events = await collect(agent, "count")
    assert seen == [2]
    assert record.log == ["write 2"]
    definitions = {t["function"]["name"]: t["function"] for t in server.requests[0].tools}
    assert definitions["count_words"]["parameters"]["properties"]["minimum"]["description"].startswith("Words shorter")
    texts = [text for _, text in server.requests[1].tool_results]
    assert texts[0] == "2"
    assert texts[1] == "wrote 2"
    assert "text" in texts[2] and done(events)[2].result.is_error
    assert "no tool named 'no_such_tool'" in texts[3]
    assert "not valid JSON" in texts[4]


async def test_tool_search_sends_only_what_was_found(notes: tuple[Host, Notes]) -> None:
    host, record = notes
    script: list[Step] = [
        Reply(tool_calls=[Call("search_tools", {"query": "write a note"})]),
        Reply(tool_calls=[Call("mcp__notes__write", {"text": "found"})]),
        Reply(text="written"),
    ]
    async with (
        serve_scripted("openai", script) as server,
        agent_for(host, server, tool_search=3, resource_tools=False) as agent,
    ):
        events = await collect(agent, "write found")
    first, second, third = server.requests
    assert first.tool_names == ["search_tools"]
    assert "mcp__notes__write" in second.tool_names
    assert len(second.tool_names) <= 1 + 5
    assert third.tool_names == second.tool_names
    (found,) = [e for e in events if isinstance(e, ToolsFound)]
    assert found.query == "write a note"
    assert found.names[0] == "mcp__notes__write"
    assert "mcp__notes__write" in last_result(second)  # the search result names it for the model
    assert record.log == ["write found"]
    assert agent.found == found.names


async def test_the_conversation_and_its_calls_are_recorded(notes: tuple[Host, Notes], tmp_path: Path) -> None:
    host, _ = notes
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__notes__write", {"text": "h"})]),
        Reply(text="one"),
        Reply(text="two"),
    ]
    with History(tmp_path / "history.sqlite3") as history:
        host.history = history
        async with (
            serve_scripted("anthropic", script) as server,
            agent_for(host, server, "anthropic", history=history) as agent,
        ):
            await collect(agent, "first question")
            await collect(agent, "second question")
        (conversation,) = history.conversations()
        messages = history.messages(conversation["id"])
        (call,) = history.tool_calls()
    assert (conversation["model"], conversation["title"]) == ("anthropic:scripted-model", "first question")
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert (call.name, call.status, call.approved_by) == ("mcp__notes__write", "ok", "rule")
    # the second run sent the first run's exchange along
    assert len(server.requests[2].messages) == 5


async def test_leaving_the_loop_early_cancels_the_run(notes: tuple[Host, Notes]) -> None:
    host, record = notes
    finished: list[ToolCallFinished] = []
    ended = anyio.Event()

    def on_event(event: object) -> None:
        if isinstance(event, ToolCallFinished):
            finished.append(event)
            ended.set()

    host.events.on(on_event)
    script: list[Step] = [Reply(tool_calls=[Call("mcp__notes__block", {})]), Reply(text="after")]
    async with serve_scripted("openai", script) as server, agent_for(host, server) as agent:
        with anyio.fail_after(WAIT):
            async for event in agent.run("block"):
                if isinstance(event, ToolCallRequested):
                    break
            await ended.wait()  # the call is cancelled, not left hanging
        assert finished[0].error == "cancelled"
        assert record.log == ["block start"]
        assert agent.messages == [agent.model.user_message("block")]  # the broken turn was dropped
        events = await collect(agent, "again")
    assert isinstance(events[-1], RunFinished) and events[-1].text == "after"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_server_that_answers_whole_json_to_a_stream_request_still_works(
    notes: tuple[Host, Notes], api: str
) -> None:
    host, record = notes
    script: list[Step] = [
        Reply(
            text="On it.", tool_calls=[Call("mcp__notes__write", {"text": "w"}), Call("mcp__notes__big", {"size": 3})]
        ),
        lambda request: Reply(text=f"Got {results_of(request)}"),
    ]
    async with serve_scripted(api, script, whole=True) as server, agent_for(host, server, api) as agent:
        events = await collect(agent, "whole")
    assert all(r.stream for r in server.requests)  # asked for a stream, got whole bodies
    assert record.log == ["write w"]
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["On it.", "Got wrote w | xxx"]
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.text == "Got wrote w | xxx"


def results_of(request: Received) -> str:
    return " | ".join(text for _, text in request.tool_results)


async def test_progress_streams_out_while_a_tool_runs(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__slow_progress", {"steps": 3, "delay": 0.01})]),
        Reply(text="finished"),
    ]
    host = Host({"basic": stdio_server("basic")}, log_dir=tmp_path, yes=True)
    async with host, serve_scripted("openai", script) as server, agent_for(host, server) as agent:
        events = await collect(agent, "work")
    kinds = [type(e).__name__ for e in events if isinstance(e, ToolCallRequested | ToolProgress | ToolCallDone)]
    assert kinds == ["ToolCallRequested", "ToolProgress", "ToolProgress", "ToolProgress", "ToolCallDone"]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]
    assert {p.name for p in progress} == {"mcp__basic__slow_progress"}
