"""A third-party MCP client through the gateway: fastmcp's ``Client`` (PyPI ``fastmcp-slim[client]``).

The same client talks to the conformance server directly (over stdio) and through a
``"prefix": false`` profile of the gateway (over streamable HTTP), and must see the same
tools, the same results (text, image, audio, embedded resource, an error), the same progress,
and be asked the same elicitation and sampling questions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.gateway.support import served_gateway
from tests.helpers import ROOT, WAIT

pytestmark = pytest.mark.anyio

NO_PREFIX = {"conf": {"servers": ["conf"], "prefix": False}}
CONTENT_TOOLS = (
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
)


class Seen:
    """What one fastmcp client was sent or asked."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None]] = []
        self.questions: list[str] = []
        self.prompts: list[str] = []

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total))

    async def on_elicitation(self, message: str, response_type: Any, params: Any, context: Any) -> dict[str, str]:
        self.questions.append(message)
        return {"username": "ada", "email": "ada@example.org"}

    async def on_sampling(self, messages: list[types.SamplingMessage], params: Any, context: Any) -> str:
        content = messages[0].content
        self.prompts.append(content.text if isinstance(content, types.TextContent) else "?")
        return "a model's answer"


def _client(target: Any, seen: Seen, mode: str = "auto") -> Client[Any]:
    return Client(
        target,
        progress_handler=seen.on_progress,
        elicitation_handler=seen.on_elicitation,
        sampling_handler=seen.on_sampling,
        timeout=WAIT,
        mode=mode,
    )


def _direct() -> StdioTransport:
    return StdioTransport(sys.executable, ["-m", "tests.servers.conformance_server"], cwd=str(ROOT))


async def _session(client: Client[Any]) -> dict[str, Any]:
    """Everything the client sees in one session, as plain JSON."""
    tools = await client.list_tools()
    results: dict[str, Any] = {}
    for name in CONTENT_TOOLS:
        result = await client.call_tool_mcp(name, {})
        results[name] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    failed = await client.call_tool_mcp("test_error_handling", {})
    asked = await client.call_tool("test_elicitation", {"message": "who are you?"})
    sampled = await client.call_tool("test_sampling", {"prompt": "say something"})
    await client.call_tool("test_tool_with_progress", {})
    return {
        "tools": sorted((tool.name, tool.description) for tool in tools),
        "results": results,
        "error": (failed.is_error, failed.content[0].model_dump(mode="json")),
        "elicitation": asked.content[0].model_dump(mode="json"),
        "sampling": sampled.content[0].model_dump(mode="json"),
    }


async def test_fastmcp_client_sees_through_the_gateway_what_it_sees_directly(log_dir: Path) -> None:
    direct_seen, via_seen = Seen(), Seen()
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served:
        with anyio.fail_after(WAIT * 2):
            # Directly, the handshake: in its default mode the client would open the 2026-07-28 era with
            # the server (it speaks both), where the server's questions over the back-channel fail.
            async with _client(_direct(), direct_seen, mode="legacy") as direct:
                want = await _session(direct)
            async with _client(served.url("conf"), via_seen, mode="legacy") as via:  # the same era through it
                got = await _session(via)
                info = via.initialize_result
    assert info is not None and info.server_info.name == "mcpdeck/conf"
    assert got == want
    assert got["error"][0] is True
    assert "ada@example.org" in got["elicitation"]["text"]
    assert got["sampling"]["text"] == "LLM response: a model's answer"
    assert via_seen.questions == direct_seen.questions == ["who are you?"]
    assert via_seen.prompts == direct_seen.prompts == ["say something"]
    assert via_seen.progress == direct_seen.progress == [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)]


async def test_fastmcp_client_calls_through_the_stdio_gateway(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": ["-m", "tests.servers.conformance_server"], "cwd": str(ROOT)}
    config.write_text(json.dumps({"mcpServers": {"conf": server}, "permissions": {"allow": ["mcp__*"]}}))
    args = ["-m", "mcpdeck.cli", "--config", str(config), "--log-dir", str(tmp_path / "logs"), "serve", "--stdio"]
    env = {"MCPDECK_HISTORY": "off", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    seen = Seen()
    with anyio.fail_after(WAIT * 2):
        async with _client(StdioTransport(sys.executable, args, env=env, cwd=str(ROOT)), seen) as via:
            # The gateway answers at once; a call waits for its server to start, and a list made after it
            # has the server's tools (one made before might not yet: they follow with list_changed).
            image = await via.call_tool_mcp("mcp__conf__test_image_content", {})
            names = {tool.name for tool in await via.list_tools()}
            asked = await via.call_tool("mcp__conf__test_elicitation", {"message": "name?"})
    assert "mcp__conf__test_simple_text" in names
    assert isinstance(image.content[0], types.ImageContent) and image.content[0].mime_type == "image/png"
    assert seen.questions == ["name?"]
    assert isinstance(asked.content[0], types.TextContent) and "ada" in asked.content[0].text
