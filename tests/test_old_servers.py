"""Servers of the handshake era and servers with failing optional lists, as real stdio processes.

``tests/servers/handshake_era.py`` speaks raw JSON lines, independent of the installed SDK:
``initialize``, ``tools/list``, ``tools/call``, and, for anything else (``server/discover``
among them), what SDK 1.x servers did: silence, -32601, -32602 after a validation report
on stderr, or closing the pipe.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpdeck import Host, ServerError, ServerState
from mcpdeck.errors import protocol_error_text
from mcpdeck.events import PromptsChanged
from tests.helpers import WAIT, next_event, stdio_server

pytestmark = pytest.mark.anyio

NOTE = "[mcpdeck] the server"


def era_server(unknown: str = "ignore", *extra: str, **config: Any) -> dict[str, Any]:
    return stdio_server("handshake_era", f"--unknown={unknown}", *extra, **config)


def notes(log: Path) -> list[str]:
    """The host's notes about the protocol in a server's log."""
    return [line for line in log.read_text().splitlines() if NOTE in line]


# ----- the modern probe, not understood --------------------------------------------------------


async def test_a_server_that_ignores_the_modern_probe_connects_with_the_handshake_in_under_two_seconds(
    log_dir: Path,
) -> None:
    started = anyio.current_time()
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("ignore")}, log_dir=log_dir) as host:
            took = anyio.current_time() - started
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await host.call_tool("mcp__old__echo", {"text": "still here"})).text() == "still here"
    assert status.protocol_version == "2024-11-05"
    assert took < 2.0
    assert status.log_path is not None
    [note] = notes(status.log_path)
    assert "did not answer server/discover within 0.75 s" in note
    assert "connected with the initialize handshake (protocol 2024-11-05)" in note


async def test_the_handshake_is_remembered_so_a_reconnect_sends_no_probe(log_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("ignore")}, log_dir=log_dir) as host:
            assert host.servers["old"].state is ServerState.CONNECTED
            started = anyio.current_time()
            again = await host.reconnect("old")
            took = anyio.current_time() - started
            assert again.state is ServerState.CONNECTED, again.error
            assert (await host.call_tool("mcp__old__echo", {"text": "x"})).text() == "x"
    assert again.log_path is not None
    log = again.log_path.read_text()
    assert log.count("mcpdeck starting old") == 2
    assert log.count("ignoring unknown method server/discover") == 1  # the second session was not probed
    assert log.count("handled initialize") == 2
    assert took < 0.75  # no probe bound waited out


@pytest.mark.parametrize("unknown", ["method-not-found", "invalid-params"])
async def test_a_server_that_refuses_the_probe_falls_back_at_once_and_its_complaint_stays_out_of_the_log(
    log_dir: Path, unknown: str
) -> None:
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server(unknown)}, log_dir=log_dir) as host:
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await host.call_tool("mcp__old__echo", {"text": "ok"})).text() == "ok"
            await host.reconnect("old")
    assert status.protocol_version == "2024-11-05"
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert "validation errors" not in log and "Input should be" not in log
    assert log.count("handshake-era server up") == 2  # what the server said before the complaint stays
    [note] = notes(status.log_path)  # one line, and none for the reconnect: it was not probed again
    code = "-32601: Method not found" if unknown == "method-not-found" else "-32602: Invalid request parameters"
    assert f"answered server/discover with MCP error {code}" in note
    if unknown == "invalid-params":
        assert "49 lines it wrote about it are left out" in note


async def test_a_server_that_closes_its_pipe_on_the_probe_is_started_again_with_the_handshake(log_dir: Path) -> None:
    started = anyio.current_time()
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("close")}, log_dir=log_dir) as host:
            took = anyio.current_time() - started
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await host.call_tool("mcp__old__echo", {"text": "back"})).text() == "back"
    assert took < 2.0
    assert status.log_path is not None
    log = status.log_path.read_text()
    assert log.count("mcpdeck starting old") == 2
    [note] = notes(status.log_path)
    assert "closed the connection on server/discover; starting it again with the initialize handshake" in note


async def test_a_server_that_exits_at_start_is_not_blamed_on_the_probe(log_dir: Path) -> None:
    script = "import sys; sys.stderr.write('fatal: no API key\\n'); sys.exit(2)"
    async with Host({"quitter": {"command": sys.executable, "args": ["-c", script]}}, log_dir=log_dir) as host:
        status = host.servers["quitter"]
        assert status.state is ServerState.FAILED
        assert status.error is not None and "fatal: no API key" in status.error
        again = await host.reconnect("quitter")
    assert again.log_path is not None
    # Started again once with the handshake (it might have died of the probe); since that
    # failed too, the next connect probes as before.
    assert again.log_path.read_text().count("mcpdeck starting quitter") == 4


async def test_protocol_handshake_in_the_config_skips_the_probe(log_dir: Path) -> None:
    started = anyio.current_time()
    with anyio.fail_after(WAIT):
        async with Host({"old": era_server("ignore", protocol="handshake")}, log_dir=log_dir) as host:
            took = anyio.current_time() - started
            status = host.servers["old"]
            assert status.state is ServerState.CONNECTED, status.error
    assert took < 0.75 * 2
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


async def test_a_modern_stdio_server_still_gets_the_modern_protocol(log_dir: Path) -> None:
    async with Host({"new": stdio_server("basic")}, log_dir=log_dir) as host:
        status = host.servers["new"]
        assert status.state is ServerState.CONNECTED, status.error
        assert status.protocol_version is not None and status.protocol_version >= "2026"
    assert status.log_path is not None
    assert notes(status.log_path) == []


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
