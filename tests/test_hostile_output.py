"""What a server sends cannot exhaust the host: message size bounds, deep nesting, stray lines on stdout.

Against real servers: ``tests/servers/hostile.py`` over stdio, and over streamable HTTP on
127.0.0.1 (raw answers sent by a small ASGI wrapper where the SDK server would not send them).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck import Host, ServerState
from mcpdeck.errors import ServerError
from mcpdeck.events import ServerStatusChanged
from tests.helpers import WAIT, next_event, serve_asgi, stdio_server
from tests.servers import basic, hostile

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM, the peak resident size


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


# ----- stdio ------------------------------------------------------------------------------


async def test_a_stdio_line_past_the_limit_fails_its_server_and_the_host_lives_on(log_dir: Path) -> None:
    servers = {"h": stdio_server("hostile", maxMessageSize=MIB), "fine": basic.build_server()}
    async with Host(servers, log_dir=log_dir) as host, host.events.subscribe() as events:
        _peak_rss_reset()
        before = _peak_rss()
        with pytest.raises(ServerError) as caught:
            await host.call_tool("mcp__h__endless", {"megabytes": 48}, timeout=WAIT)
        grown = _peak_rss() - before
        message = str(caught.value)
        assert "larger than 1 MiB" in message and "maxMessageSize" in message, message
        failed = await next_event(events, ServerStatusChanged, lambda e: e.server == "h" and e.state == "failed")
        assert failed.error is not None and "larger than 1 MiB" in failed.error
        assert host.servers["h"].state is ServerState.FAILED  # not reconnected: it would only happen again
        assert (await host.call_tool("mcp__fine__echo", {"text": "still here"})).text() == "still here"
    # 48 MiB were on offer; the host read about 1 MiB of it (and held at most that once).
    assert grown < 16 * MIB, f"peak memory grew by {grown / MIB:.1f} MiB"
    assert "larger than 1 MiB" in (log_dir / "h.log").read_text()


@pytest.mark.parametrize(("depth", "id_last"), [(250, False), (5000, False), (100_000, False), (5000, True)])
async def test_a_stdio_answer_nested_too_deeply_fails_only_its_call(log_dir: Path, depth: int, id_last: bool) -> None:
    async with Host({"h": stdio_server("hostile")}, log_dir=log_dir) as host:
        with pytest.raises(ServerError, match="nested too deeply to read") as caught:
            await host.call_tool("mcp__h__deep", {"depth": depth, "id_last": id_last}, timeout=WAIT)
        assert "Traceback" not in str(caught.value)
        assert host.servers["h"].state is ServerState.CONNECTED
        assert (await host.call_tool("mcp__h__stray", {"text": ""})).text() == "ok"


async def test_a_line_that_is_not_json_is_one_friendly_warning_and_its_text_goes_to_the_log(
    log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with Host({"h": stdio_server("hostile", "--banner", "3")}, log_dir=log_dir) as host:
        assert host.servers["h"].state is ServerState.CONNECTED
        assert (await host.call_tool("mcp__h__stray", {"text": "DEBUG: {not json"})).text() == "ok"
        assert (await host.call_tool("mcp__h__stray", {"text": '{"jsonrpc": "2.0", "x": 1}'})).text() == "ok"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "sent a line on stdout that is not an MCP message" in warnings[0]
    assert str(log_dir / "h.log") in warnings[0]
    assert not any("ValidationError" in w or "validation error" in w for w in warnings)
    log = (log_dir / "h.log").read_text()
    for text in ("Welcome to the hostile server, line 1", "line 3", "DEBUG: {not json", '"x": 1'):
        assert text in log, text
    assert "it is not valid JSON" in log and "it is JSON but not a JSON-RPC message" in log
    assert "validation error" not in log


CHATTER = """
import sys, time
while True:
    sys.stdout.write("Server listening... (debug output on stdout)\\n")
    sys.stdout.flush()
    time.sleep(0.1)
"""
"""A "server" that never finishes starting: it prints lines that are not JSON, and ignores its input."""


async def test_a_server_that_only_prints_stray_lines_says_so_when_it_times_out(log_dir: Path) -> None:
    chatter = {"command": sys.executable, "args": ["-c", CHATTER], "startupTimeout": 1}
    async with Host({"h": chatter}, log_dir=log_dir) as host:
        status = host.servers["h"]
    assert status.state is ServerState.FAILED
    assert status.error is not None
    assert "within 1 s" in status.error
    assert "lines that are not MCP messages on stdout; first: 'Server listening... (debug output" in status.error
    log = (log_dir / "h.log").read_text()
    assert "[mcpdeck] failed: did not finish" in log and "lines that are not MCP messages" in log


# ----- streamable HTTP -------------------------------------------------------------------------


class RawAnswers:
    """An ASGI wrapper that answers some tool calls itself, with raw bytes, streamed without a length.

    ``answers`` maps a tool name to a function of the request id giving the JSON-RPC answer,
    sent as an ``application/json`` body, or with ``sse`` as one event of a
    ``text/event-stream``.
    """

    def __init__(self, app: ASGIApp, answers: dict[str, Callable[[object], bytes]], *, sse: bool = False):
        self._app = app
        self._answers = answers
        self._sse = sse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request: dict[str, Any] = json.loads(body)
        answer = None
        if request.get("method") == "tools/call":
            answer = self._answers.get(str(request.get("params", {}).get("name", "")))
        if answer is not None:
            kind = b"text/event-stream" if self._sse else b"application/json"
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
            data = answer(request["id"])
            if self._sse:
                data = b"event: message\ndata: " + data + b"\n\n"
            for start in range(0, len(data), 64 * 1024):
                await send({"type": "http.response.body", "body": data[start : start + 64 * 1024], "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app(scope, replay, send)


def _huge_answer(request_id: object) -> bytes:
    text = "z" * (3 * MIB)
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}
    ).encode()


@pytest.mark.parametrize("json_response", [False, True], ids=["sse-answers", "json-answers"])
async def test_an_http_answer_past_the_limit_fails_its_call_and_the_session_lives(
    log_dir: Path, json_response: bool
) -> None:
    app = RawAnswers(hostile.build_server().streamable_http_app(json_response=json_response), {"unsized": _huge_answer})
    async with serve_asgi(app) as base:
        config = {"type": "http", "url": f"{base}/mcp", "maxMessageSize": MIB}
        async with Host({"h": config}, log_dir=log_dir) as host:
            with pytest.raises(ServerError) as caught:
                await host.call_tool("mcp__h__big", {"megabytes": 2}, timeout=WAIT)
            assert "larger than 1 MiB" in str(caught.value) and "maxMessageSize" in str(caught.value)
            # A JSON body with no length given is counted as it arrives.
            with pytest.raises(ServerError, match="larger than 1 MiB"):
                await host.call_tool("mcp__h__unsized", {}, timeout=WAIT)
            assert host.servers["h"].state is ServerState.CONNECTED
            result = await host.call_tool("mcp__h__big", {"megabytes": 0.25}, timeout=WAIT)
            assert len(result.text()) == MIB // 4


@pytest.mark.parametrize("sse", [False, True], ids=["json-answer", "sse-answer"])
async def test_an_http_answer_nested_too_deeply_fails_only_its_call(
    log_dir: Path, sse: bool, caplog: pytest.LogCaptureFixture
) -> None:
    app = RawAnswers(
        hostile.build_server().streamable_http_app(),
        {"deep": lambda request_id: hostile.deep_answer(request_id, 5000)},
        sse=sse,
    )
    async with serve_asgi(app) as base, Host({"h": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir) as host:
        with pytest.raises(ServerError, match="nested too deeply to read") as caught:
            await host.call_tool("mcp__h__deep", {"depth": 5000}, timeout=WAIT)
        assert "validation error" not in str(caught.value)
        assert host.servers["h"].state is ServerState.CONNECTED
        assert (await host.call_tool("mcp__h__stray", {"text": ""})).text() == "ok"
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
