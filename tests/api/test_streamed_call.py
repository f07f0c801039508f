"""A tool call whose answer is its own event stream (``Accept: text/event-stream``): progress, then the
result or the error; cancelled by its id or by closing the stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.api.conftest import Api, running_api
from tests.helpers import WAIT, stdio_server
from tests.llm.scripted import Reply, serve_scripted
from tests.support.api_events import events_of

pytestmark = pytest.mark.anyio

STREAM = {"Accept": "text/event-stream"}


async def call_events(api: Api, tool: str, body: dict[str, Any]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """``(event, data)`` of a streamed call, as they arrive."""
    async with api.client.stream("POST", f"/api/tools/{tool}/call", json=body, headers=STREAM) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                yield kind, json.loads(line[6:])


async def test_a_streamed_call_sends_each_progress_then_the_result_as_the_plain_call_answers_it(api: Api) -> None:
    body = {"arguments": {"steps": 3, "delay": 0.05}, "callId": "s1"}
    seen: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(WAIT):
        seen = [item async for item in call_events(api, "mcp__basic__slow_progress", body)]
    kinds = [kind for kind, _ in seen]
    assert kinds == ["progress", "progress", "progress", "result"]
    assert [data["progress"] for _, data in seen[:3]] == [1, 2, 3]
    assert all(data["total"] == 3 for _, data in seen[:3])
    result = seen[-1][1]
    assert result["callId"] == "s1" and result["isError"] is False
    plain = (await api.client.post("/api/tools/mcp__basic__slow_progress/call", json={**body, "callId": "s2"})).json()
    volatile = {"duration", "callId"}
    assert {k: v for k, v in result.items() if k not in volatile} == {
        k: v for k, v in plain.items() if k not in volatile
    }


async def test_a_streamed_call_that_fails_ends_with_the_error_the_plain_call_answers(api: Api) -> None:
    with anyio.fail_after(WAIT):
        seen = [item async for item in call_events(api, "mcp__basic__nosuch", {"arguments": {}})]
    plain = await api.client.post("/api/tools/mcp__basic__nosuch/call", json={"arguments": {}})
    assert seen == [("error", {"status": plain.status_code, "error": plain.json()["error"]})]
    assert plain.status_code == 404 and plain.json()["error"]["code"] == "tool-not-found"
    with anyio.fail_after(WAIT):
        seen = [item async for item in call_events(api, "mcp__basic__add", {"arguments": {"a": "x"}})]
    assert [(kind, data["status"], data["error"]["code"]) for kind, data in seen] == [
        ("error", 422, "invalid-arguments")
    ]


async def test_a_streamed_call_is_cancelled_by_its_id_and_says_so(api: Api) -> None:
    body = {"arguments": {"steps": 100, "delay": 0.2}, "callId": "long"}
    seen: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(WAIT):
        async for kind, data in call_events(api, "mcp__basic__slow_progress", body):
            seen.append((kind, data))
            if len(seen) == 1:  # running: cancel it by the id it was made with
                assert (await api.client.post("/api/calls/long/cancel")).json() == {"cancelled": "long"}
    cancelled = {"code": "cancelled", "message": "the call 'long' was cancelled"}
    assert seen[0][0] == "progress" and seen[-1] == ("error", {"status": 409, "error": cancelled})
    assert (await api.client.post("/api/calls/long/cancel")).status_code == 404  # no longer running


async def test_closing_the_stream_stops_the_call(api: Api) -> None:
    body = {"arguments": {"steps": 100, "delay": 0.2}, "callId": "left"}
    opened = anyio.Event()
    finished: list[dict[str, Any]] = []

    async def watch() -> None:
        async for event in events_of(api.client, opened=opened):
            if event["type"] == "ToolCallFinished" and event["requestId"] == "left":
                finished.append(event)
                return

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await opened.wait()
            async for kind, _ in call_events(api, "mcp__basic__slow_progress", body):
                assert kind == "progress"
                break  # the reader leaves; the watcher waits for the call to end
    assert finished[0]["error"] == "cancelled"  # 100 steps were asked for: it was stopped, not done
    assert (await api.client.post("/api/calls/left/cancel")).status_code == 404


async def answered_call(
    api: Api, tool: str, arguments: dict[str, Any], answer: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """A streamed call whose questions get ``answer`` (POST /api/asks/{id}); the questions and every event."""
    asked: list[dict[str, Any]] = []
    seen: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(WAIT):
        async for kind, data in call_events(api, tool, {"arguments": arguments, "callId": f"c-{tool}"}):
            seen.append((kind, data))
            if kind == "ask":
                asked.append(data)
                if answer is not None:
                    reply = await api.client.post(f"/api/asks/{data['id']}", json=answer)
                    assert reply.json() == {"answered": True}
    return asked, seen


async def test_a_server_s_form_is_asked_in_the_call_s_stream_and_the_answer_goes_back(tmp_path: Path) -> None:
    async with running_api(tmp_path, {"features": stdio_server("features")}, in_process=False) as api:
        answer = {"action": "accept", "content": {"colour": "teal", "size": 3}}
        asked, seen = await answered_call(api, "mcp__features__ask", {"question": "Your taste?"}, answer)
        assert [(a["kind"], a["mode"], a["message"], a["call"], a["chat"]) for a in asked] == [
            ("elicitation", "form", "Your taste?", "c-mcp__features__ask", None)
        ]
        assert "colour" in asked[0]["schema"]["properties"]
        assert ("ask-closed", {"id": asked[0]["id"], "chat": None, "call": "c-mcp__features__ask"}) in seen
        result = seen[-1]
        assert result[0] == "result"
        said = json.loads(result[1]["content"][0]["text"])
        assert said["action"] == "accept" and said["content"]["colour"] == "teal"

        asked, seen = await answered_call(api, "mcp__features__ask_url", {}, {"action": "accept"})
        assert (asked[0]["mode"], asked[0]["url"], asked[0]["host"]) == (
            "url",
            "https://example.com/connect",
            "example.com",
        )
        assert seen[-1][1]["content"][0]["text"] == "accept"

        # A plain call has no stream to ask in: the question is declined at once.
        plain = await api.client.post("/api/tools/mcp__features__ask/call", json={"arguments": {"question": "?"}})
        assert json.loads(plain.json()["content"][0]["text"])["action"] == "decline"


async def test_sampling_outside_a_chat_uses_the_default_model_once_approved_or_says_none_is_set_up(
    tmp_path: Path,
) -> None:
    async with serve_scripted("openai", [lambda request: Reply(text="short: " + request.last_user_text)]) as llm:
        providers = {"scripted": {"type": "openai", "baseUrl": llm.base_url, "apiKey": "test-key"}}
        servers = {"features": stdio_server("features")}
        async with running_api(tmp_path, servers, in_process=False, providers=providers) as api:
            # No "model" in the config (nor MCPDECK_MODEL): nothing to ask, and the reason reaches the server.
            asked, seen = await answered_call(api, "mcp__features__summarize", {"text": "a tale"}, None)
            assert asked == []
            # The server (asked on its connection, the handshake era) gets the reason and says it.
            assert seen[-1][0] == "result"
            assert "sampling failed: no model is set up to answer it" in seen[-1][1]["content"][0]["text"]
            config = api.file()
            api.config.write_text(json.dumps({**config, "model": "scripted:test-model"}))
            asked, seen = await answered_call(
                api, "mcp__features__summarize", {"text": "a tale"}, {"answer": "approve"}
            )
    assert [(a["kind"], a["model"], a["call"]) for a in asked] == [
        ("sampling", "scripted:test-model", "c-mcp__features__summarize")
    ]
    assert seen[-1][1]["content"][0]["text"] == "summary by scripted:test-model: short: Summarise: a tale"
