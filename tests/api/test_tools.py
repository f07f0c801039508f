"""``/api/tools``, calls with progress and cancel over the event stream, ``/api/events``."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from tests.api.conftest import Api
from tests.helpers import WAIT
from tests.support.api_events import events_of

pytestmark = pytest.mark.anyio


async def test_tools_are_listed_filtered_by_server_and_text(api: Api) -> None:
    every = (await api.client.get("/api/tools")).json()
    assert {t["server"] for t in every} == {"basic", "inproc"}
    basic = (await api.client.get("/api/tools", params={"server": "basic"})).json()
    assert {t["server"] for t in basic} == {"basic"}
    assert basic == [t for t in every if t["server"] == "basic"]  # `mcpdeck tools --json` shape
    found = (await api.client.get("/api/tools", params={"q": "INTEGERS"})).json()
    assert [t["name"] for t in found] == ["mcp__basic__add", "mcp__inproc__add"]
    unknown = await api.client.get("/api/tools", params={"server": "nope"})
    assert unknown.status_code == 404


async def test_a_tool_s_schema(api: Api) -> None:
    tool = (await api.client.get("/api/tools/mcp__basic__add")).json()
    assert tool["inputSchema"]["required"] == ["a", "b"]
    assert tool["tool"] == "add"
    missing = await api.client.get("/api/tools/mcp__basic__nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "tool-not-found"


async def test_a_call_answers_the_result_as_the_cli_prints_it(api: Api) -> None:
    answer = await api.client.post("/api/tools/mcp__inproc__add/call", json={"arguments": {"a": 2, "b": 3}})
    body = answer.json()
    assert answer.status_code == 200
    assert body["content"] == [{"type": "text", "text": "5"}]
    assert body["isError"] is False
    failing = (await api.client.post("/api/tools/mcp__basic__fail/call", json={"arguments": {"message": "no"}})).json()
    assert failing["isError"] is True
    bad = await api.client.post("/api/tools/mcp__basic__add/call", json={"arguments": {"a": "x"}})
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid-arguments"
    assert bad.json()["error"]["message"].startswith("invalid arguments for mcp__basic__add: ")
    stats = (await api.client.get("/api/servers/basic")).json()["status"]
    assert (stats["calls"], stats["errors"]) == (1, 1)


async def test_a_call_s_progress_comes_on_the_event_stream_under_its_call_id(api: Api) -> None:
    seen: list[dict[str, Any]] = []
    opened = anyio.Event()

    async def watch() -> None:
        async for event in events_of(api.client, opened=opened):
            if event.get("requestId") == "call-1":
                seen.append(event)
                if event["type"] == "ToolCallFinished":
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(WAIT):
            await opened.wait()
        answer = await api.client.post(
            "/api/tools/mcp__basic__slow_progress/call",
            json={"arguments": {"steps": 3, "delay": 0.01}, "callId": "call-1"},
        )
        assert answer.json()["callId"] == "call-1"
    kinds = [e["type"] for e in seen]
    assert kinds[0] == "ToolCallStarted"
    assert kinds.count("ToolCallProgress") == 3
    assert kinds[-1] == "ToolCallFinished"
    progress = [e for e in seen if e["type"] == "ToolCallProgress"]
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert progress[0]["message"] == "step 1 of 3"
    assert seen[0]["arguments"] == {"steps": 3, "delay": 0.01}
    assert {"at", "callId", "server", "name"} <= set(seen[0])


async def test_a_running_call_is_cancelled_by_its_id(api: Api) -> None:
    answers: list[httpx2.Response] = []
    opened, started = anyio.Event(), anyio.Event()

    async def watch() -> None:
        async for event in events_of(api.client, opened=opened):
            if event["type"] == "ToolCallStarted" and event["requestId"] == "long":
                started.set()
                return

    async def call() -> None:
        answers.append(
            await api.client.post(
                "/api/tools/mcp__basic__sleep/call", json={"arguments": {"seconds": 30}, "callId": "long"}
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(WAIT):
            await opened.wait()
        tg.start_soon(call)
        with anyio.fail_after(WAIT):
            await started.wait()
        busy = await api.client.post(
            "/api/tools/mcp__basic__echo/call", json={"arguments": {"text": "x"}, "callId": "long"}
        )
        assert busy.status_code == 409
        cancelled = await api.client.post("/api/calls/long/cancel")
        assert cancelled.json() == {"cancelled": "long"}
    assert answers[0].status_code == 409
    assert answers[0].json()["error"]["code"] == "cancelled"
    nothing = await api.client.post("/api/calls/long/cancel")
    assert nothing.status_code == 404
    assert (await api.client.post("/api/tools/mcp__basic__echo/call", json={"arguments": {"text": "ok"}})).json()[
        "content"
    ][0]["text"] == "ok"


async def test_the_event_stream_carries_typed_server_events(api: Api) -> None:
    seen: list[dict[str, Any]] = []
    opened = anyio.Event()

    async def watch() -> None:
        async for event in events_of(api.client, opened=opened):
            seen.append(event)
            if event["type"] == "ServerStatusChanged" and event["state"] == "connected":
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(WAIT):
            await opened.wait()
        await api.client.post("/api/servers/basic/reconnect")
    states = [(e["server"], e["previous"], e["state"]) for e in seen if e["type"] == "ServerStatusChanged"]
    assert states == [("basic", "connected", "connecting"), ("basic", "connecting", "connected")]
    assert all(e["at"].endswith("+00:00") for e in seen)
