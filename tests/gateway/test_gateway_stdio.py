"""``mcpdeck gateway --stdio`` as a real child process, driven as Claude Desktop drives it.

A client starts the command with pipes, initializes, lists, calls and closes stdin; the
gateway (and every server it started) must then be gone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext

from mcpdeck.cli._gateway import client_config
from mcpdeck.history import History
from tests.gateway.support import Seen, client, handshake_era
from tests.helpers import NODE_BIN, ROOT, WAIT, stdio_server

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path) -> Path:
    doc = {
        "mcpServers": {
            "conf": stdio_server("conformance_server"),
            "everything": {"command": str(NODE_BIN / "mcp-server-everything")},
        },
        "permissions": {"allow": ["mcp__*"]},
        "profiles": {"conf": {"servers": ["conf"], "prefix": False}},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(doc))
    return path


def _gateway(tmp_path: Path, *extra: str, command: tuple[str, ...] = ("serve", "--stdio")) -> StdioServerParameters:
    """``mcpdeck serve --stdio`` (the entry clients are given) or ``gateway --stdio`` (the same, by its own name)."""
    config = _config(tmp_path)
    args = ["-m", "mcpdeck.cli", "--config", str(config), "--log-dir", str(tmp_path / "logs"), *command]
    env = {"MCPDECK_HISTORY": str(tmp_path / "history.db"), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    return StdioServerParameters(command=sys.executable, args=[*args, *extra], cwd=str(ROOT), env=env)


async def test_a_client_starts_the_gateway_lists_calls_and_closes_it(tmp_path: Path) -> None:
    seen = Seen()
    with anyio.fail_after(25):
        async with client(_gateway(tmp_path), seen, answer={"username": "u", "email": "e@x"}) as gateway:
            names = {tool.name for tool in (await gateway.list_tools()).tools}
            echo = await gateway.call_tool("mcp__everything__echo", {"message": "through the gateway"})
            asked = await gateway.call_tool("mcp__conf__test_elicitation", {"message": "name?"})
            info, protocol = gateway.server_info, gateway.protocol_version
    assert {"mcp__everything__echo", "mcp__conf__test_simple_text"} <= names
    assert info is not None and info.name == "mcpdeck"
    assert protocol == "2025-11-25"  # the handshake era, where servers can ask the client mid-call
    text = echo.content[0]
    assert isinstance(text, types.TextContent) and text.text == "Echo: through the gateway"
    assert [e.message for e in seen.elicitations] == ["name?"]
    assert not asked.is_error
    with History(tmp_path / "history.db") as history:
        calls = {(record.name, record.caller, record.status) for record in history.tool_calls()}
    assert calls == {
        ("mcp__everything__echo", "test-client 1.0", "ok"),
        ("mcp__conf__test_elicitation", "test-client 1.0", "ok"),
    }


async def test_a_profile_over_stdio_serves_the_server_under_its_own_names(tmp_path: Path) -> None:
    with anyio.fail_after(WAIT):
        async with client(_gateway(tmp_path, "--profile", "conf", command=("gateway", "--stdio")), Seen()) as gateway:
            names = [tool.name for tool in (await gateway.list_tools()).tools]
            result: Any = await gateway.call_tool("test_simple_text", {})
    assert "test_simple_text" in names and not any(name.startswith("mcp__") for name in names)
    assert result.content[0].text == "This is a simple text response for testing."


def test_client_config_entries_start_the_stdio_gateway(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    desktop = json.loads(client_config("claude-desktop", config, profile="dev"))
    vscode = json.loads(client_config("vscode", config))
    line = client_config("claude-code", config)
    entry = desktop["mcpServers"]["mcpdeck"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-5:] == [str(config), "serve", "--stdio", "--profile", "dev"]
    assert vscode["servers"]["mcpdeck"]["type"] == "stdio"
    assert line.startswith("claude mcp add mcpdeck -- ") and line.endswith(f"--config {config} serve --stdio")


async def test_two_gateways_chained_pass_a_servers_question_to_the_first_client(tmp_path: Path) -> None:
    inner_dir, outer_dir = tmp_path / "inner", tmp_path / "outer"
    inner_dir.mkdir()
    outer_dir.mkdir()
    inner = _config(inner_dir)
    outer = outer_dir / "mcp.json"
    inner_args = ["-m", "mcpdeck.cli", "--config", str(inner), "--log-dir", str(inner_dir / "logs")]
    outer.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "inner": {
                        "command": sys.executable,
                        "args": [*inner_args, "gateway", "--stdio", "--profile", "conf"],
                        "cwd": str(ROOT),
                        "env": {"MCPDECK_HISTORY": "off"},
                    }
                },
                "permissions": {"allow": ["mcp__*"]},
            }
        )
    )
    args = ["-m", "mcpdeck.cli", "--config", str(outer), "--log-dir", str(outer_dir / "logs"), "gateway", "--stdio"]
    env = {"MCPDECK_HISTORY": "off", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
    seen = Seen()
    with anyio.fail_after(25):
        async with client(params, seen, answer={"username": "deep", "email": "d@x"}) as gateway:
            asked: Any = await gateway.call_tool("mcp__inner__test_elicitation", {"message": "two hops?"})
    assert [e.message for e in seen.elicitations] == ["two hops?"]
    assert asked.content[0].text == 'User response: action=accept, content={"username": "deep", "email": "d@x"}'


async def test_the_stdio_clients_roots_reach_the_servers_and_so_do_their_changes(tmp_path: Path) -> None:
    """server-everything asks for roots when it connects and again on ``roots/list_changed``, outside any
    call: through a stdio gateway, the one client is asked, as it would be directly. The gateway's host has
    no roots of its own: the servers connected without the capability, and are offered it once the client
    that has roots has initialized (they connect again)."""
    folders = [tmp_path / "first"]
    asked: list[int] = []
    updates: list[str] = []
    updated = anyio.Event()

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        asked.append(len(folders))
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name) for f in folders])  # pyright: ignore[reportArgumentType]

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        if isinstance(params.data, str) and params.data.startswith("Roots updated"):
            updates.append(params.data)
            updated.set()

    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    gateway = Client(  # the handshake era: a 2026-07-28 client is asked for its roots in its calls' rounds only
        _gateway(tmp_path, command=("gateway", "--stdio")),
        mode="legacy",
        list_roots_callback=roots,
        logging_callback=on_log,
        message_handler=on_message,
    )
    with anyio.fail_after(25):
        async with gateway:
            while "mcp__everything__get-roots-list" not in {t.name for t in (await gateway.list_tools()).tools}:
                await changed.wait()  # the server connects again, offered roots, and lists the tool then
                changed = anyio.Event()
            first = await gateway.call_tool("mcp__everything__get-roots-list", {})
            await updated.wait()
            updated = anyio.Event()
            folders[:] = [tmp_path / "second", tmp_path / "third"]
            with handshake_era():
                await gateway.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
            await updated.wait()  # the server asked again, and has the new roots
            second = await gateway.call_tool("mcp__everything__get-roots-list", {})
    assert (tmp_path / "first").as_uri() in str(first.content)
    assert (tmp_path / "third").as_uri() in str(second.content) and "first" not in str(second.content)
    assert updates[-1].startswith("Roots updated: 2 root(s)")
    assert asked[-1] == 2
