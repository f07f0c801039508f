"""How the gateway answers a request over streamable HTTP, seen on the wire (raw HTTP, no MCP client).

A request whose result is the only message for it comes back as one JSON body; a request that
has more to say first (progress here), or that takes longer than ``JSON_WINDOW``, gets an SSE
stream that starts with the priming event a client can resume from, as the SDK's transport does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Receive, Scope, Send

from mcpdeck._sdk import streamable_server as _streamable
from mcpdeck.gateway._event_store import MemoryEventStore
from mcpdeck.gateway._http import RETRY_MS
from tests.gateway.support import served_gateway
from tests.helpers import WAIT, serve_asgi

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Session:
    """One streamable HTTP session with the gateway, spoken by hand."""

    def __init__(self, http: httpx2.AsyncClient, url: str):
        self.http, self.url = http, url
        self.headers = {**ACCEPT, "MCP-Protocol-Version": VERSION}
        self._ids = iter(range(1, 1000))

    async def open(self) -> None:
        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        opened = await self.http.post(self.url, json=self.request("initialize", params), headers=ACCEPT)
        assert opened.status_code == 200, opened.text
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        note = await self.http.post(
            self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )
        assert note.status_code == 202

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}

    async def send(self, method: str, params: dict[str, Any]) -> httpx2.Response:
        return await self.http.post(self.url, json=self.request(method, params), headers=self.headers)

    async def call(self, tool: str, meta: dict[str, Any] | None = None) -> httpx2.Response:
        params: dict[str, Any] = {"name": tool, "arguments": {}}
        if meta is not None:
            params["_meta"] = meta
        return await self.send("tools/call", params)


@asynccontextmanager
async def session(log_dir: Path) -> AsyncGenerator[Session]:
    async with served_gateway(log_dir) as served, httpx2.AsyncClient(timeout=WAIT) as http:
        opened = Session(http, served.url())
        await opened.open()
        yield opened


def _events(text: str) -> list[dict[str, str]]:
    """The SSE events of a response body, each as its fields."""
    events: list[dict[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            if name in ("id", "data", "event", "retry"):
                fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


async def test_a_result_with_nothing_before_it_is_one_json_body_and_progress_opens_a_stream(log_dir: Path) -> None:
    async with session(log_dir) as opened:
        with anyio.fail_after(WAIT):
            plain = await opened.call("mcp__conf__test_simple_text")
            read = await opened.send("resources/read", {"uri": "test://static-text"})
            listed = await opened.send("tools/list", {})
            progressing = await opened.call("mcp__conf__test_tool_with_progress", {"progressToken": "p1"})
    assert plain.headers["content-type"] == "application/json"
    assert plain.json()["result"]["content"][0]["text"] == "This is a simple text response for testing."
    assert read.headers["content-type"] == "application/json" and read.json()["result"]["contents"]
    assert listed.headers["content-type"].startswith("text/event-stream")  # what is not a call: the SDK's way
    assert "mcp__conf__test_simple_text" in listed.text
    assert progressing.headers["content-type"].startswith("text/event-stream")
    events = _events(progressing.text)
    priming, *messages = events
    assert priming.get("id") and priming.get("data") == "" and priming.get("retry") == str(RETRY_MS)
    sent = [json.loads(event["data"]) for event in messages]
    assert [m["params"]["progress"] for m in sent if m.get("method") == "notifications/progress"] == [0, 50, 100]
    assert sent[-1]["result"]["content"][0]["text"] == "Tool with progress executed successfully"
    assert all(event.get("id") for event in messages)  # every event can be resumed after


async def test_a_request_slower_than_the_json_window_gets_its_stream_first(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_streamable, "JSON_WINDOW", 0.0)
    async with session(log_dir) as opened:
        with anyio.fail_after(WAIT):
            slow = await opened.call("mcp__conf__test_simple_text")
    assert slow.headers["content-type"].startswith("text/event-stream")
    priming, answer = _events(slow.text)
    assert priming.get("id") and priming.get("data") == ""
    assert json.loads(answer["data"])["result"]["content"][0]["text"] == "This is a simple text response for testing."


async def test_a_slow_calls_stream_dropped_after_its_priming_event_is_resumed_with_last_event_id(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_streamable, "JSON_WINDOW", 0.0)
    async with session(log_dir) as opened:
        request = opened.request("tools/call", {"name": "mcp__conf__test_tool_with_progress", "arguments": {}})
        with anyio.fail_after(WAIT):
            async with opened.http.stream("POST", opened.url, json=request, headers=opened.headers) as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                first = ""
                async for chunk in stream.aiter_text():
                    first += chunk
                    if "\n\n" in first.replace("\r\n", "\n"):
                        break  # the priming event only: the client goes away
            priming = _events(first)[0]
            resume = {**opened.headers, "Accept": "text/event-stream", "Last-Event-ID": priming["id"]}
            replayed = ""
            async with opened.http.stream("GET", opened.url, headers=resume) as stream:
                async for chunk in stream.aiter_text():
                    replayed += chunk
                    if '"result"' in replayed and replayed.replace("\r\n", "\n").endswith("\n\n"):
                        break  # the answer came: a client stops reading (the replayed stream stays open)
    assert priming.get("data") == ""
    answers = [json.loads(event["data"]) for event in _events(replayed) if event.get("data")]
    assert answers[-1]["id"] == request["id"]
    assert answers[-1]["result"]["content"][0]["text"] == "Tool with progress executed successfully"


async def test_a_call_reaching_a_session_whose_loop_has_ended_gets_a_json_rpc_error() -> None:
    """A call that reaches a session after its message loop stopped reading (the gateway shutting down
    under a busy machine: the loop is cancelled before the transport is marked terminated) is answered
    with a JSON-RPC error, not a ``BrokenResourceError`` out of the ASGI app; nothing of it stays registered."""
    transport = _streamable.GatewayTransport(mcp_session_id="s1", event_store=MemoryEventStore())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await transport.handle_request(scope, receive, send)

    async with transport.connect() as (read_stream, _), serve_asgi(app) as base:
        await read_stream.aclose()  # what reads the session's messages is gone
        headers = {**ACCEPT, "MCP-Protocol-Version": VERSION, "Mcp-Session-Id": "s1"}
        call: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "t", "arguments": {}},
        }
        async with httpx2.AsyncClient(timeout=WAIT) as http:
            with anyio.fail_after(WAIT):
                answer = await http.post(f"{base}/", json=call, headers=headers)
        assert answer.status_code == 500, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"]["message"] == "Session terminated before the request completed"
        assert answer.headers["mcp-session-id"] == "s1"
