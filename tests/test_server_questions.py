"""A server's questions in the middle of a tool call reach the host's handlers, and the answers reach the server.

The asking server (``tests/servers/asking.py``, built on today's SDK) asks the two ways servers
ask: over the back-channel (``ctx.elicit``, ``ctx.session.create_message``, ``ctx.session.list_roots``),
which only the ``initialize`` handshake era carries, and through the SDK's ``Resolve`` markers,
which ask as ``InputRequiredResult`` rounds on 2026-07-28. It runs over stdio and streamable HTTP,
speaking both eras (the host opens with the handshake), speaking only 2026-07-28 (it refuses the
handshake naming its versions, and the host goes on with ``server/discover`` on the same
connection), and speaking both with ``"protocol": "modern"`` in its config.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcpdeck import Host, ServerState
from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse, SamplingRequest
from tests.helpers import WAIT, serve_asgi, stdio_server
from tests.servers.asking import build_app

pytestmark = pytest.mark.anyio

BOTH_ERAS = ["stdio", "http"]
"""Servers that speak both eras: the host opens with the handshake, and they ask over the back-channel."""
MODERN = ["stdio_modern_only", "http_modern_only", "stdio_protocol_modern"]
"""Sessions of 2026-07-28: the servers ask by input-required rounds."""
ASKED_NAME = {"action": "accept", "data": {"name": "Ada"}}


class Answers:
    """What the host's handlers were asked, and what they answer."""

    def __init__(self) -> None:
        self.asked: list[ElicitationRequest] = []
        self.sampled: list[SamplingRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        self.asked.append(request)
        return ElicitationResponse(action="accept", content={"name": "Ada"})

    async def sample(self, request: SamplingRequest) -> types.CreateMessageResult:
        self.sampled.append(request)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="short"), model="fake-model")


@pytest.fixture(scope="module")
def answers() -> Answers:
    return Answers()


@pytest.fixture(scope="module")
async def host(answers: Answers, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Host]:
    """One host with the asking server over each transport and era, with elicitation, sampling and roots."""
    async with (
        serve_asgi(build_app()) as both,
        serve_asgi(build_app(modern_only="unsupported-version")) as modern_only,
    ):
        servers: dict[str, Any] = {
            "stdio": stdio_server("asking"),
            "http": {"type": "http", "url": f"{both}/mcp"},
            "stdio_modern_only": stdio_server("asking", "--modern-only"),
            "http_modern_only": {"type": "http", "url": f"{modern_only}/mcp"},
            "stdio_protocol_modern": stdio_server("asking", protocol="modern"),
        }
        logs = tmp_path_factory.mktemp("logs")
        async with Host(
            servers, log_dir=logs, elicitation=answers.elicit, sampling=answers.sample, roots=[Path.cwd()]
        ) as opened:
            for name, status in opened.servers.items():
                assert (status.state, status.error) == (ServerState.CONNECTED, None), name
            yield opened


async def call(host: Host, server: str, tool: str, arguments: dict[str, Any] | None = None) -> str:
    with anyio.fail_after(WAIT):
        return (await host.call_tool(f"mcp__{server}__{tool}", arguments or {})).text()


@pytest.mark.parametrize("server", BOTH_ERAS)
async def test_a_server_that_speaks_both_eras_gets_the_handshake(host: Host, server: str) -> None:
    status = host.servers[server]
    assert status.protocol_version == "2025-11-25"
    assert status.log_path is not None
    assert not status.log_path.exists() or "[mcpdeck]" not in status.log_path.read_text()


@pytest.mark.parametrize("server", MODERN)
async def test_a_server_that_speaks_only_2026_07_28_or_is_told_to_gets_it(host: Host, server: str) -> None:
    status = host.servers[server]
    assert status.protocol_version == "2026-07-28"
    assert status.log_path is not None
    log = status.log_path.read_text() if status.log_path.exists() else ""
    if server.startswith("stdio"):
        assert log.count(f"mcpdeck starting {server}") == 1  # one process, whatever the era took
    if server.endswith("modern_only"):
        assert "[mcpdeck] the server refused the initialize handshake; connected with server/discover" in log


@pytest.mark.parametrize("server", BOTH_ERAS)
async def test_an_elicitation_over_the_back_channel_reaches_the_handler_and_its_answer_the_server(
    host: Host, answers: Answers, server: str
) -> None:
    answers.asked.clear()
    assert json.loads(await call(host, server, "ask_name")) == ASKED_NAME
    [asked] = answers.asked
    assert (asked.server, asked.mode, asked.message) == (server, "form", "What is your name?")
    assert asked.schema is not None and list(asked.schema["properties"]) == ["name"]


@pytest.mark.parametrize("server", BOTH_ERAS)
async def test_sampling_over_the_back_channel_reaches_the_handler_and_its_answer_the_server(
    host: Host, answers: Answers, server: str
) -> None:
    answers.sampled.clear()
    assert await call(host, server, "summarize", {"text": "a long story"}) == "fake-model: short"
    [sampled] = answers.sampled
    content = sampled.params.messages[0].content
    assert sampled.server == server
    assert isinstance(content, types.TextContent) and content.text == "Summarise: a long story"


@pytest.mark.parametrize("server", BOTH_ERAS)
async def test_a_roots_request_over_the_back_channel_gets_the_hosts_roots(host: Host, server: str) -> None:
    assert json.loads(await call(host, server, "roots")) == [Path.cwd().as_uri()]


@pytest.mark.parametrize("server", BOTH_ERAS + MODERN)
async def test_questions_asked_by_input_required_rounds_or_resolve_markers_are_answered(
    host: Host, answers: Answers, server: str
) -> None:
    answers.asked.clear()
    answers.sampled.clear()
    assert json.loads(await call(host, server, "ask_name_rounds")) == ASKED_NAME
    assert await call(host, server, "summarize_rounds", {"text": "a tale"}) == "fake-model: short"
    assert json.loads(await call(host, server, "roots_rounds")) == [Path.cwd().as_uri()]
    [asked], [sampled] = answers.asked, answers.sampled
    assert (asked.server, asked.message) == (server, "What is your name?")
    assert sampled.server == server


async def test_a_server_that_refuses_the_handshake_without_naming_versions_fails_saying_what_to_change(
    tmp_path: Path,
) -> None:
    servers = {
        "refuses": stdio_server("asking", "--modern-only=invalid-params"),
        "told": stdio_server("asking", "--modern-only=invalid-params", protocol="modern"),
    }
    with anyio.fail_after(WAIT):
        async with Host(servers, log_dir=tmp_path / "logs") as host:
            refuses, told = host.servers["refuses"], host.servers["told"]
    assert refuses.state is ServerState.FAILED
    assert refuses.error is not None
    assert "refused the initialize handshake (params._meta must carry the 2026-07-28 envelope (MCP error -32602))" in (
        refuses.error
    )
    assert 'if it speaks only protocol 2026-07-28, set "protocol": "modern" in its config' in refuses.error
    assert (told.state, told.protocol_version) == (ServerState.CONNECTED, "2026-07-28")
