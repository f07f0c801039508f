"""``/api/servers/{name}/traffic``, ``/api/traffic`` and its live stream: the JSON-RPC messages as they passed."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcpdeck.traffic import Traffic
from tests.api.conftest import Api
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


async def test_a_call_s_request_and_answer_are_kept_with_timing(api: Api) -> None:
    await api.client.post("/api/tools/mcp__basic__echo/call", json={"arguments": {"text": "peekaboo"}})
    answer = await api.client.get("/api/servers/basic/traffic")
    assert answer.status_code == 200
    body = answer.json()
    assert body["limit"] == 500
    messages = body["messages"]
    assert {m["server"] for m in messages} == {"basic"}
    methods = [m["method"] for m in messages if m["direction"] == "out"]
    assert "tools/call" in methods  # the connect's own messages come first
    request = next(m for m in messages if m["method"] == "tools/call")
    assert request["kind"] == "request"
    params = json.loads(request["body"])["params"]
    assert (params["name"], params["arguments"]) == ("echo", {"text": "peekaboo"})
    reply = next(
        m for m in messages if m["direction"] == "in" and m["id"] == request["id"] and m["seq"] > request["seq"]
    )
    assert reply["kind"] == "response"
    assert reply["method"] == "tools/call"  # an answer is named by the request it answers
    assert reply["elapsed"] is not None and 0 <= reply["elapsed"] < WAIT
    assert "peekaboo" in reply["body"]
    assert [m["seq"] for m in messages] == sorted(m["seq"] for m in messages)
    # In-process servers have no transport to tap; the dead remote never got an answer.
    assert (await api.client.get("/api/servers/inproc/traffic")).json()["messages"] == []
    assert (await api.client.get("/api/servers/nope/traffic")).status_code == 404
    newer = (await api.client.get("/api/traffic", params={"after": request["seq"]})).json()["messages"]
    assert newer and all(m["seq"] > request["seq"] for m in newer)


async def test_messages_stream_live_to_a_watcher(api: Api) -> None:
    seen: list[dict[str, Any]] = []
    opened = anyio.Event()

    async def watch() -> None:
        async with api.client.stream("GET", "/api/traffic/stream", params={"server": "basic"}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():
                if line == ": connected":
                    opened.set()
                elif line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["direction"] == "in" and seen[-1]["kind"] == "response":
                        return

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await opened.wait()
            await api.client.post("/api/tools/mcp__inproc__add/call", json={"arguments": {"a": 1, "b": 1}})
            await api.client.post("/api/tools/mcp__basic__add/call", json={"arguments": {"a": 20, "b": 22}})
    assert [m["direction"] for m in seen] == ["out", "in"]
    assert seen[0]["method"] == "tools/call" and '"a":20' in seen[0]["body"]
    assert "42" in seen[1]["body"]


def test_the_ring_keeps_the_last_messages_and_cuts_long_bodies() -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    traffic = Traffic(limit=3, max_body=40)
    for i in range(5):
        traffic.record("s", "out", SessionMessage(JSONRPCNotification(jsonrpc="2.0", method=f"n/{i}")))
    assert [m.method for m in traffic.recent("s")] == ["n/2", "n/3", "n/4"]
    big = "x" * 1000
    traffic.record(
        "s", "out", SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params={"v": big}))
    )
    traffic.record("s", "in", SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=7, result={"v": big})))
    request, reply = traffic.recent("s")[-2:]
    assert request.truncated and len(request.body) == 40 and request.size > 1000
    assert reply.kind == "response" and reply.elapsed is not None and reply.elapsed >= 0
    assert traffic.recent("other") == []
    assert traffic.recent(limit=1) == [reply]
