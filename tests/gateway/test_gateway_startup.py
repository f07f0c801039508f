"""The gateway while its servers still start: a client is served at once, a call to a server still starting
waits for it and then runs (or fails saying why), and the tools of a server that comes up late are announced
with ``tools/list_changed``. A server that starts when the test says so (``tests/servers/late.py``) and one that
never answers (``tests/servers/hang.py``), beside a working one; real SDK clients over HTTP.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from mcpdeck import Host
from mcpdeck.gateway import Gateway
from mcpdeck.status import ServerState
from tests.gateway.support import ALLOW_ALL, Seen, client
from tests.helpers import WAIT, late_server, release, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_a_call_to_a_server_still_starting_waits_for_it_and_its_tools_are_announced(
    tmp_path: Path, log_dir: Path
) -> None:
    fifo = tmp_path / "late.fifo"
    servers = {"ok": stdio_server("basic"), "late": late_server(fifo, "basic")}
    seen = Seen()
    async with (
        Host(servers, log_dir=log_dir, permissions=ALLOW_ALL, wait=False) as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp", seen) as via,
    ):
        with anyio.fail_after(WAIT):
            still_starting = host.servers["late"].state  # the client is initialized while "late" cannot have started
            await host.wait_settled("ok")
            before = {tool.name for tool in (await via.list_tools()).tools}
            called: list[types.CallToolResult] = []

            async def call() -> None:
                called.append(await via.call_tool("mcp__late__echo", {"text": "worth the wait"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await release(fifo)  # the call is on its way: "late" starts now
            await seen.arrival("notifications/tools/list_changed").wait()
            after = {tool.name for tool in (await via.list_tools()).tools}
    assert still_starting is ServerState.CONNECTING
    assert "mcp__ok__echo" in before and "mcp__late__echo" not in before
    assert [_text(result) for result in called] == ["worth the wait"]
    assert "mcp__late__echo" in after


async def test_a_call_to_a_server_that_never_starts_fails_saying_why(log_dir: Path) -> None:
    """The wait is bounded by the server's own startup timeout; then the call says which server did not start and
    why, not ``Unknown tool``. A name no server could have is still unknown."""
    servers = {"ok": stdio_server("basic"), "hang": stdio_server("hang", startupTimeout=1)}
    async with (
        Host(servers, log_dir=log_dir, permissions=ALLOW_ALL, wait=False) as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp", Seen()) as via,
    ):
        with anyio.fail_after(WAIT):
            failed = await via.call_tool("mcp__hang__anything", {})
            await host.wait_settled("ok")
            with pytest.raises(MCPError) as unknown:
                await via.call_tool("mcp__nobody__anything", {})
            with pytest.raises(MCPError) as not_its:
                await via.call_tool("mcp__ok__no_such_tool", {})
    assert failed.is_error
    assert _text(failed).startswith("server 'hang' failed to start: "), _text(failed)
    assert "Unknown tool: mcp__nobody__anything" in unknown.value.message
    assert "Unknown tool: mcp__ok__no_such_tool" in not_its.value.message


async def test_a_no_prefix_profile_waits_for_its_one_server(tmp_path: Path, log_dir: Path) -> None:
    fifo = tmp_path / "late.fifo"
    servers = {"late": late_server(fifo, "basic")}
    profiles = {"one": {"servers": ["late"], "prefix": False}}
    async with (
        Host(servers, log_dir=log_dir, permissions=ALLOW_ALL, wait=False) as host,
        Gateway(host, profiles=profiles) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp/one", Seen()) as via,
    ):
        with anyio.fail_after(WAIT):
            called: list[types.CallToolResult] = []

            async def call() -> None:
                called.append(await via.call_tool("echo", {"text": "own name"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await release(fifo)
    assert [_text(result) for result in called] == ["own name"]


async def test_a_read_or_a_prompt_of_a_server_still_starting_waits_for_it(tmp_path: Path, log_dir: Path) -> None:
    """As for tools: a client that knows a resource or a prompt asks for it before the server is up."""
    fifo = tmp_path / "late.fifo"
    servers = {"ok": stdio_server("basic"), "late": late_server(fifo, "features", "--legacy")}
    async with (
        Host(servers, log_dir=log_dir, permissions=ALLOW_ALL, wait=False) as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp", Seen()) as via,
    ):
        with anyio.fail_after(WAIT):
            await host.wait_settled("ok")
            read: list[types.ReadResourceResult] = []
            got: list[types.GetPromptResult] = []

            async def read_note() -> None:
                read.append(await via.read_resource("note://first"))

            async def get_prompt() -> None:
                got.append(await via.get_prompt("mcp__late__plain"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_note)
                tg.start_soon(get_prompt)
                await release(fifo)
    (note,) = read[0].contents
    (message,) = got[0].messages
    assert isinstance(note, types.TextResourceContents) and note.text == "the first note"
    assert isinstance(message.content, types.TextContent) and message.content.text == "Just a plain prompt."
