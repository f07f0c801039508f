"""Which era ``auto`` opens with depends on whether anyone could answer a server's questions.

Over streamable HTTP a session of the handshake era costs the SDK's server (and the client) more per
request than one of 2026-07-28, and its back-channel is worth that only where a server's question
can be answered. So a host with no elicitation or sampling handler, no router and no roots opens an
HTTP server with ``server/discover`` first (the SDK's own ``auto``); a host that can answer opens
with the handshake; over stdio ``auto`` always opens with the handshake (an SDK 1.x stdio server may
exit on ``server/discover``). A router given later (a gateway's clients) connects such a server
again with the handshake. A server of the handshake era over HTTP (the npm reference server, on the
TypeScript SDK 1.x, which answers ``server/discover`` with HTTP 400) is reached by the fallback.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcpdeck import Host, ServerError, ServerState
from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse, Presented, SamplingRequest
from tests.helpers import NODE, ROOT, WAIT, serve_asgi, stdio_server
from tests.servers.asking import build_app

pytestmark = pytest.mark.anyio

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture
async def asking_url() -> AsyncIterator[str]:
    """The asking server of today's SDK (both eras) over streamable HTTP."""
    async with serve_asgi(build_app()) as base:
        yield f"{base}/mcp"


class _Elicits:
    """A router that answers forms (a ``ServerRequestRouter``), as a gateway's client does."""

    def __init__(self) -> None:
        self.asked: list[ElicitationRequest] = []

    async def elicitation(self, request: ElicitationRequest) -> ElicitationResponse | None:
        self.asked.append(request)
        return ElicitationResponse(action="accept", content={"name": "Ada"})

    async def sampling(self, request: SamplingRequest) -> types.CreateMessageResult | None:
        return None

    async def roots_for(self, server: str) -> list[types.Root] | None:
        return None

    def roots_offered(self, server: str) -> bool:
        return False

    def presented(self, server: str) -> Presented | None:
        return None


async def _decline(request: ElicitationRequest) -> ElicitationResponse:
    return ElicitationResponse(action="decline")


async def test_a_host_nobody_answers_for_opens_http_with_server_discover_and_stdio_with_the_handshake(
    asking_url: str, tmp_path: Path
) -> None:
    servers: dict[str, Any] = {"http": {"type": "http", "url": asking_url}, "stdio": stdio_server("asking")}
    with anyio.fail_after(WAIT):
        async with Host(servers, log_dir=tmp_path) as host:
            http, stdio = host.servers["http"], host.servers["stdio"]
            assert (http.state, http.error) == (ServerState.CONNECTED, None)
            assert (stdio.state, stdio.error) == (ServerState.CONNECTED, None)
            asked_over_stdio = await host.call_tool("mcp__stdio__ask_name", {})
            with pytest.raises(ServerError) as asked_over_http:
                await host.call_tool("mcp__http__ask_name", {})
    assert (http.protocol_version, stdio.protocol_version) == (MODERN, HANDSHAKE)
    # Nobody could have answered either: over stdio the host declines, over HTTP the server cannot ask,
    # and the error says why and what to change.
    assert json.loads(asked_over_stdio.text()) == {"action": "decline", "data": None}
    said = str(asked_over_http.value)
    assert "no back-channel" in said and "nobody here could answer" in said and '"protocol": "handshake"' in said


@pytest.mark.parametrize(
    "given",
    [{"elicitation": _decline}, {"roots": ["."]}],
    ids=["an elicitation handler", "roots"],
)
async def test_a_host_that_can_answer_opens_http_with_the_handshake(
    asking_url: str, tmp_path: Path, given: dict[str, Any]
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"http": {"type": "http", "url": asking_url}}, log_dir=tmp_path, **given) as host:
            status = host.servers["http"]
    assert (status.state, status.error, status.protocol_version) == (ServerState.CONNECTED, None, HANDSHAKE)


async def test_roots_turned_off_for_a_server_do_not_make_it_open_with_the_handshake(
    asking_url: str, tmp_path: Path
) -> None:
    config = {"type": "http", "url": asking_url, "roots": False}
    with anyio.fail_after(WAIT):
        async with Host({"http": config}, log_dir=tmp_path, roots=["."]) as host:
            status = host.servers["http"]
    assert (status.state, status.protocol_version) == (ServerState.CONNECTED, MODERN)


async def test_a_router_given_later_connects_the_server_again_with_the_handshake_and_its_question_reaches_it(
    asking_url: str, tmp_path: Path
) -> None:
    router = _Elicits()
    with anyio.fail_after(WAIT):
        async with Host({"http": {"type": "http", "url": asking_url}}, log_dir=tmp_path) as host:
            before = host.servers["http"].protocol_version
            host.route_server_requests(router)
            answer = await host.call_tool("mcp__http__ask_name", {})  # waits for the new session
            after = host.servers["http"].protocol_version
    assert (before, after) == (MODERN, HANDSHAKE)
    assert json.loads(answer.text()) == {"action": "accept", "data": {"name": "Ada"}}
    [asked] = router.asked
    assert (asked.server, asked.message) == ("http", "What is your name?")


async def test_protocol_modern_and_handshake_in_the_config_are_kept_whoever_answers(
    asking_url: str, tmp_path: Path
) -> None:
    servers = {
        "modern": {"type": "http", "url": asking_url, "protocol": "modern"},
        "handshake": {"type": "http", "url": asking_url, "protocol": "handshake"},
    }
    with anyio.fail_after(WAIT):
        async with Host(servers, log_dir=tmp_path, elicitation=_decline) as answering:
            modern_answering = answering.servers["modern"].protocol_version
        async with Host(servers, log_dir=tmp_path) as silent:
            handshake_silent = silent.servers["handshake"].protocol_version
    assert (modern_answering, handshake_silent) == (MODERN, HANDSHAKE)


# ----- a server of the handshake era over HTTP: the npm reference server (TypeScript SDK 1.x) ----------


@pytest.fixture
async def everything_url() -> AsyncIterator[str]:
    """``@modelcontextprotocol/server-everything`` over streamable HTTP on a free local port."""
    with socket.socket() as probe:  # a free port for it (it takes its port from $PORT only)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {**os.environ, "PORT": str(port)}
    async with await anyio.open_process(
        [str(NODE), str(EVERYTHING), "streamableHttp"], env=environ, stdout=None, stderr=-1
    ) as process:
        assert process.stderr is not None
        said = b""
        with anyio.fail_after(WAIT):
            async for chunk in process.stderr:
                said += chunk
                if f"listening on port {port}".encode() in said:
                    break
            else:
                pytest.fail(f"server-everything did not start: {said.decode(errors='replace')}")
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()


async def test_a_server_of_the_handshake_era_over_http_is_reached_by_the_fallback_from_server_discover(
    everything_url: str, tmp_path: Path
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"everything": {"type": "http", "url": everything_url}}, log_dir=tmp_path) as host:
            status = host.servers["everything"]
            assert (status.state, status.error) == (ServerState.CONNECTED, None)
            echo = await host.call_tool("mcp__everything__echo", {"message": "hi there"})
    assert status.protocol_version == HANDSHAKE
    assert "hi there" in echo.text()
