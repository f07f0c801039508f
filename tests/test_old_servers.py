"""Servers of the handshake era and servers with failing optional lists, as real stdio processes.

``tests/servers/handshake_era.py`` speaks raw JSON lines, independent of the installed SDK:
``initialize``, ``tools/list``, ``tools/call``, and, for anything else (``server/discover``
among them), what SDK 1.x servers did: silence, -32601, -32602 after a validation report
on stderr, or closing the pipe. A host opens every session with the handshake, so none of them
is ever sent ``server/discover`` unless its config asks for the 2026-07-28 era.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpdeck import Host, ServerError, ServerState
from mcpdeck.errors import protocol_error_text
from mcpdeck.events import PromptsChanged
from tests.cli.inprocess import mcpdeck
from tests.helpers import ROOT, WAIT, cli_environment, next_event, stdio_server

pytestmark = pytest.mark.anyio

NOTE = "[mcpdeck] the server"


def era_server(unknown: str = "ignore", *extra: str, **config: Any) -> dict[str, Any]:
    return stdio_server("handshake_era", f"--unknown={unknown}", *extra, **config)


def notes(log: Path) -> list[str]:
    """The host's notes about the protocol in a server's log."""
    return [line for line in log.read_text().splitlines() if NOTE in line]


# ----- the handshake first: no server/discover reaches a server of the handshake era -------------


@pytest.mark.parametrize("unknown", ["ignore", "method-not-found", "invalid-params", "close"])
async def test_a_server_of_the_handshake_era_is_opened_with_the_handshake_and_never_sent_server_discover(
    log_dir: Path, unknown: str
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server(unknown)}, log_dir=log_dir) as host:
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await host.call_tool("mcp__old__echo", {"text": "here"})).text() == "here"
            again = await host.reconnect("old")
            assert again.state is ServerState.CONNECTED, again.error
    assert status.protocol_version == "2024-11-05"
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert log.count("mcpdeck starting old") == 2  # one start per session: nothing started again
    assert log.count("handled initialize") == 2
    assert "server/discover" not in log  # (the server notes every method it does not know)
    assert notes(status.log_path) == []


async def test_a_server_that_exits_at_start_is_started_once(log_dir: Path) -> None:
    script = "import sys; sys.stderr.write('fatal: no API key\\n'); sys.exit(2)"
    async with Host({"quitter": {"command": sys.executable, "args": ["-c", script]}}, log_dir=log_dir) as host:
        status = host.servers["quitter"]
        assert status.state is ServerState.FAILED
        assert status.error is not None and "fatal: no API key" in status.error
        again = await host.reconnect("quitter")
    assert again.log_path is not None
    assert again.log_path.read_text().count("mcpdeck starting quitter") == 2


async def test_protocol_handshake_in_the_config_opens_with_the_handshake(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("ignore", protocol="handshake")}, log_dir=log_dir) as host:
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
    assert status.log_path is not None
    assert "server/discover" not in status.log_path.read_text()


async def test_protocol_modern_in_the_config_fails_a_handshake_only_server_and_says_what_to_change(
    log_dir: Path,
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("method-not-found", protocol="modern")}, log_dir=log_dir) as host:
            status = host.servers["old"]
    assert status.state is ServerState.FAILED
    assert status.error is not None
    assert 'speaks only the initialize handshake (protocol 2024-11-05) but its config says "protocol": "modern"' in (
        status.error
    )


async def test_protocol_modern_in_the_config_fails_a_server_that_dies_of_server_discover_and_says_why(
    log_dir: Path,
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("close", protocol="modern")}, log_dir=log_dir) as host:
            status = host.servers["old"]
            assert status.state is ServerState.FAILED
    assert status.error is not None
    assert 'closed the connection on server/discover, which its config asks for ("protocol": "modern")' in status.error
    assert 'set it to "auto" or "handshake"' in status.error
    assert status.log_path is not None
    assert status.log_path.read_text().count("mcpdeck starting old") == 1  # the config is obeyed: not started again


async def test_a_dual_era_sdk_server_gets_the_handshake_and_with_protocol_modern_the_modern_era(log_dir: Path) -> None:
    servers = {"auto": stdio_server("basic"), "modern": stdio_server("basic", protocol="modern")}
    async with Host(servers, log_dir=log_dir) as host:
        auto, modern = host.servers["auto"], host.servers["modern"]
        assert auto.state is modern.state is ServerState.CONNECTED, (auto.error, modern.error)
    assert auto.protocol_version == "2025-11-25"
    assert modern.protocol_version == "2026-07-28"
    assert auto.log_path is not None and modern.log_path is not None
    assert notes(auto.log_path) == notes(modern.log_path) == []


# ----- optional lists ----------------------------------------------------------------------------


async def test_failed_resource_and_prompt_lists_leave_the_server_connected_with_warnings(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"lists": era_server("ignore", "--broken-lists")}, log_dir=log_dir) as host:
            status = host.servers["lists"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await host.call_tool("mcp__lists__echo", {"text": "tools work"})).text() == "tools work"
            assert host.resources == [] and host.prompts == []
    assert status.warnings == (
        "could not list resources: resources/list is broken on this server (MCP error -32603)",
        "could not list resource templates: resources/templates/list is broken on this server (MCP error -32603)",
        "could not list prompts: prompts/list is broken on this server (MCP error -32603)",
    )
    assert status.to_json()["warnings"] == list(status.warnings)
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert all(f"[mcpdeck] warning: {warning}" in log for warning in status.warnings)


async def test_a_failed_list_is_read_again_on_its_change_notice_and_the_warning_goes(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"lists": era_server("ignore", "--broken-lists")}, log_dir=log_dir) as host:
            assert len(host.servers["lists"].warnings) == 3
            async with host.events.subscribe() as events:
                await host.call_tool("mcp__lists__fix_lists", {})
                await next_event(events, PromptsChanged, lambda e: e.server == "lists" and e.prompt_count == 1)
                while host.servers["lists"].warnings:
                    await events.receive()  # (the resources notice is read right after the prompts one)
            assert [p.original_name for p in host.prompts] == ["greet"]
            assert [r.uri for r in host.resources] == ["note://one"]
            status = host.servers["lists"]
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert "[mcpdeck] prompts/list works again" in log and "[mcpdeck] resources/list works again" in log


# ----- error texts ----------------------------------------------------------------------------------


async def test_an_error_the_server_words_with_its_code_says_the_code_once(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("method-not-found")}, log_dir=log_dir) as host:
            with pytest.raises(ServerError) as caught:
                await host.call_tool("mcp__old__echo", {"text": "protocol-error"})
    assert str(caught.value).count("-32602") == 1
    assert "text may not say that (MCP error -32602)" in str(caught.value)


def test_method_not_found_names_the_method() -> None:
    text = protocol_error_text(-32601, "Method not found", "resources/templates/list")
    assert text == "the server does not know the method resources/templates/list (MCP error -32601: Method not found)"
    assert protocol_error_text(-32602, "MCP error -32602: bad scale") == "bad scale (MCP error -32602)"
    assert protocol_error_text(-32603, "") == "MCP error -32603"


# ----- a real server of SDK 1.x -------------------------------------------------------------------

TIME_SERVER = ROOT / ".venv-old" / "bin" / "mcp-server-time"
"""mcp-server-time 0.6.2 on SDK 1.2 (``scripts/setup`` installs it): it exits on a method it does not know."""


def time_server(**config: Any) -> dict[str, Any]:
    assert TIME_SERVER.exists(), "run scripts/setup: it installs mcp-server-time 0.6.2 (SDK 1.2) into .venv-old"
    return {"command": str(TIME_SERVER), **config}


async def test_a_real_sdk_1_server_that_exits_on_an_unknown_method_connects_and_answers(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"time": time_server()}, log_dir=log_dir) as host:
            status = host.servers["time"]
            assert status.state is ServerState.CONNECTED, status.error
            result = await host.call_tool("mcp__time__get_current_time", {"timezone": "UTC"})
            again = await host.reconnect("time")
            assert again.state is ServerState.CONNECTED, again.error
    assert status.protocol_version == "2024-11-05"
    answer = json.loads(result.text())
    assert answer["timezone"] == "UTC" and answer["datetime"].startswith(str(datetime.now(UTC).year))
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert log.count("mcpdeck starting time") == 2  # one start per session
    assert "server/discover" not in log and "validation error" not in log


def test_mcpdeck_list_shows_a_real_sdk_1_server_connected_with_its_tools(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": time_server()}}))
    done = mcpdeck(["--config", str(config), "list", "--json"], env=cli_environment(tmp_path), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    [server] = json.loads(done.stdout)["servers"]
    assert (server["name"], server["state"], server["error"]) == ("time", "connected", None)
    assert (server["protocolVersion"], server["toolCount"]) == ("2024-11-05", 2)


async def test_a_real_sdk_1_server_fails_with_protocol_modern_and_the_error_says_what_to_change(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"time": time_server(protocol="modern")}, log_dir=log_dir) as host:
            status = host.servers["time"]
    assert status.state is ServerState.FAILED
    assert status.error is not None
    assert 'closed the connection on server/discover, which its config asks for ("protocol": "modern")' in status.error
