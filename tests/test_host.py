"""Host: the same interactions over every transport, managing servers, events, child processes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.abc import TaskStatus

from mcpdeck import ConfigError, ConfigStore, Host, ServerState, ToolNotFoundError
from mcpdeck.catalog import MAX_TOOL_NAME
from mcpdeck.config import InProcessServerConfig, ToolFilter
from mcpdeck.errors import InvalidArgumentsError, ServerTimeoutError, ServerUnavailableError
from mcpdeck.events import (
    ConfigChanged,
    Event,
    ServerStatusChanged,
    Subscription,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from tests.helpers import (
    NODE_BIN,
    ROOT,
    WAIT,
    BasicServer,
    closed_port,
    descendants,
    kill,
    next_event,
    stdio_server,
    wait_gone,
)
from tests.servers.basic import INSTRUCTIONS, LONG_TOOL, ODD_TOOL, PNG, build_server

pytestmark = pytest.mark.anyio

BASIC_TOOLS = ["echo", "add", "fail", "sleep", "slow_progress", "crash", "image", "structured", "pid", "env"]


async def events_until(subscription: Subscription, last: Callable[[Event], bool]) -> list[Event]:
    """Every event up to and including the first for which ``last`` is true."""
    seen: list[Event] = []
    with anyio.fail_after(WAIT):
        while True:
            seen.append(await subscription.receive())
            if last(seen[-1]):
                return seen


def states(events: list[Event], server: str) -> list[str]:
    """The states a server went through, from status events."""
    return [e.state for e in events if isinstance(e, ServerStatusChanged) and e.server == server]


# ----- the same interactions over every transport ---------------------------------------


async def test_it_connects_and_reports_the_server_info_and_instructions(
    basic_host: Host, basic_server: BasicServer
) -> None:
    status = basic_host.servers["basic"]
    assert status.state is ServerState.CONNECTED
    assert status.error is None
    assert status.transport == basic_server.transport
    assert status.server_info is not None
    assert (status.server_info.name, status.server_info.version) == ("basic", "1.2.3")
    assert status.instructions == INSTRUCTIONS
    assert status.protocol_version
    assert status.capabilities is not None and status.capabilities.tools is not None
    assert status.connected_at is not None
    assert status.to_json()["state"] == "connected"


async def test_it_lists_every_tool_under_its_namespaced_name(basic_host: Host) -> None:
    names = basic_host.catalog.names()
    for tool in BASIC_TOOLS:
        assert f"mcp__basic__{tool}" in names
    assert all(name.startswith("mcp__basic__") and len(name) <= MAX_TOOL_NAME for name in names)
    echo = basic_host.catalog.get("mcp__basic__echo")
    assert echo is not None
    assert echo.server == "basic"
    assert echo.description == "Return the text unchanged."
    assert echo.input_schema["required"] == ["text"]
    assert basic_host.servers["basic"].tool_count == len(basic_host.catalog.for_server("basic"))


async def test_odd_and_long_tool_names_are_made_safe_and_still_reach_their_tool(basic_host: Host) -> None:
    odd = basic_host.catalog.find("basic", ODD_TOOL)
    long = basic_host.catalog.find("basic", LONG_TOOL)
    assert odd is not None and long is not None
    assert odd.name == "mcp__basic__tool_with_spaces_and-dots"
    assert len(long.name) == MAX_TOOL_NAME
    assert long.name.startswith("mcp__basic__summarise_the_quarterly")
    assert (await basic_host.call_tool(odd.name)).text() == "odd tool called"
    assert (await basic_host.call_tool(long.name)).text() == "long tool called"


async def test_echo_and_add_answer_with_text_and_structured_content(basic_host: Host) -> None:
    echo = await basic_host.call_tool("mcp__basic__echo", {"text": "héllo wörld"})
    assert echo.text() == "héllo wörld"
    assert not echo.is_error
    assert (echo.server, echo.tool, echo.name) == ("basic", "echo", "mcp__basic__echo")
    add = await basic_host.call_tool("mcp__basic__add", {"a": 2, "b": 40})
    assert add.text() == "42"
    assert add.structured_content == {"result": 42}
    assert add.duration > 0


async def test_a_catalog_entry_is_called_as_its_name_is_and_its_arguments_still_checked(basic_host: Host) -> None:
    # (the gateway passes the entry its view found: the host does not look it up again)
    entry = basic_host.tool("mcp__basic__echo")
    echo = await basic_host.call_tool(entry, {"text": "by entry"})
    assert echo.text() == "by entry"
    assert (echo.server, echo.tool, echo.name) == ("basic", "echo", "mcp__basic__echo")
    with pytest.raises(InvalidArgumentsError) as caught:
        await basic_host.call_tool(entry, {})
    assert caught.value.tool == "mcp__basic__echo"


async def test_a_failing_tool_gives_an_error_result_not_an_exception(basic_host: Host) -> None:
    result = await basic_host.call_tool("mcp__basic__fail", {"message": "the disk is full"})
    assert result.is_error
    assert "the disk is full" in result.text()
    assert result.to_json()["isError"] is True


async def test_invalid_arguments_are_refused_before_anything_is_sent(basic_host: Host) -> None:
    sent: list[Event] = []
    unsubscribe = basic_host.events.on(sent.append)
    try:
        with pytest.raises(InvalidArgumentsError) as caught:
            await basic_host.call_tool("mcp__basic__add", {"a": "two", "b": 2})
        with pytest.raises(InvalidArgumentsError) as missing:
            await basic_host.call_tool("mcp__basic__echo", {})
    finally:
        unsubscribe()
    assert caught.value.tool == "mcp__basic__add"
    assert any(problem.startswith("a:") for problem in caught.value.problems)
    assert "'text' is a required property" in str(missing.value)
    assert not [e for e in sent if isinstance(e, ToolCallStarted | ToolCallFinished)]


async def test_an_unknown_tool_is_refused_with_a_suggestion(basic_host: Host) -> None:
    with pytest.raises(ToolNotFoundError) as caught:
        await basic_host.call_tool("mcp__basic__ecko", {"text": "x"})
    assert "mcp__basic__echo" in caught.value.suggestions
    assert "did you mean" in str(caught.value)
    with pytest.raises(ToolNotFoundError):
        await basic_host.call_tool("mcp__nosuchserver__echo", {"text": "x"})


async def test_image_content_is_kept_and_described_as_text(basic_host: Host) -> None:
    result = await basic_host.call_tool("mcp__basic__image")
    assert [type(block) for block in result.content] == [types.ImageContent]
    assert result.images() == [("image/png", PNG)]
    assert result.text().startswith("[image: image/png, ")
    assert result.to_json()["content"][0]["mimeType"] == "image/png"


async def test_structured_content_is_kept_and_rendered_as_json(basic_host: Host) -> None:
    result = await basic_host.call_tool("mcp__basic__structured", {"city": "Bergen"})
    expected = {"city": "Bergen", "temperature": -3.5, "conditions": ["snow", "wind"]}
    assert result.structured_content == expected
    assert json.loads(result.text()) == expected
    entry = basic_host.catalog.get("mcp__basic__structured")
    assert entry is not None and entry.output_schema is not None


async def test_progress_is_reported_and_keeps_a_long_call_alive(basic_host: Host) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    # Four steps of 0.15 s: 0.6 s in all, more than the 0.4 s timeout, but never silent that long.
    with anyio.fail_after(WAIT):
        result = await basic_host.call_tool(
            "mcp__basic__slow_progress", {"steps": 4, "delay": 0.15}, timeout=0.4, progress=on_progress
        )
    assert result.text() == "done after 4 steps"  # not cut at 0.4 s
    assert seen == [(n, 4, f"step {n} of 4") for n in range(1, 5)]


async def test_a_call_that_takes_too_long_times_out_and_the_host_stays_usable(basic_host: Host) -> None:
    # An hour's sleep: a timeout that waited for the answer would run into fail_after instead.
    with anyio.fail_after(WAIT), pytest.raises(ServerTimeoutError) as caught:
        await basic_host.call_tool("mcp__basic__sleep", {"seconds": 3600}, timeout=0.3)
    assert caught.value.server == "basic"
    assert "0.3 s" in str(caught.value)
    with anyio.fail_after(WAIT):
        assert (await basic_host.call_tool("mcp__basic__echo", {"text": "still here"})).text() == "still here"
    assert basic_host.servers["basic"].state is ServerState.CONNECTED


async def test_a_tool_added_by_the_server_reaches_the_catalog(basic_host: Host) -> None:
    version = basic_host.catalog.version
    async with basic_host.events.subscribe() as events:
        await basic_host.call_tool("mcp__basic__add_tool", {"name": "fresh"})
        changed = await next_event(events, ToolsChanged, lambda e: "mcp__basic__fresh" in basic_host.catalog)
    assert changed.server == "basic"
    assert changed.catalog_version > version
    assert basic_host.catalog.version == changed.catalog_version
    assert (await basic_host.call_tool("mcp__basic__fresh")).text() == "I am fresh"


async def test_each_call_publishes_a_started_and_a_finished_event(basic_host: Host) -> None:
    async with basic_host.events.subscribe() as events:
        await basic_host.call_tool("mcp__basic__echo", {"text": "hi"})
        started = await next_event(events, ToolCallStarted)
        finished = await next_event(events, ToolCallFinished)
        await basic_host.call_tool("mcp__basic__fail", {"message": "no"})
        failed = await next_event(events, ToolCallFinished)
        with pytest.raises(ServerTimeoutError):
            await basic_host.call_tool("mcp__basic__sleep", {"seconds": 1}, timeout=0.05)
        timed_out = await next_event(events, ToolCallFinished)
    assert (started.name, started.server, started.tool, started.arguments) == (
        "mcp__basic__echo",
        "basic",
        "echo",
        {"text": "hi"},
    )
    assert finished.call_id == started.call_id
    assert not finished.is_error and finished.error is None and finished.duration >= 0
    assert failed.is_error and failed.error is None
    assert timed_out.is_error and timed_out.error is not None and "did not answer" in timed_out.error


# ----- managing servers through a config file --------------------------------------------


@pytest.fixture
def config_file(tmp_path: Path, http_url: str) -> Path:
    """A config file with two servers on the basic HTTP server, and keys mcpdeck does not know."""
    path = tmp_path / "mcp.json"
    document = {
        "theme": "dark",
        "mcpServers": {
            "alpha": {"type": "http", "url": http_url, "x-owner": "ops"},
            "beta": {"type": "streamable-http", "url": http_url, "timeout": 30, "note": {"kept": True}},
        },
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


async def read(path: Path) -> dict[str, Any]:
    return json.loads(await anyio.Path(path).read_text())


async def raw(path: Path) -> bytes:
    return await anyio.Path(path).read_bytes()


async def test_add_server_saves_the_entry_connects_it_and_leaves_the_rest_alone(
    config_file: Path, http_url: str, log_dir: Path
) -> None:
    before = await read(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        status = await host.add_server("gamma", {"url": http_url, "type": "streamableHttp", "x-note": "mine"})
        seen = await events_until(events, lambda e: isinstance(e, ConfigChanged))
        assert status.state is ServerState.CONNECTED
        assert "mcp__gamma__echo" in host.catalog
        assert (await host.call_tool("mcp__gamma__echo", {"text": "g"})).text() == "g"
        assert host.servers["alpha"].state is ServerState.CONNECTED
    after = await read(config_file)
    assert after["mcpServers"]["gamma"] == {"type": "http", "url": http_url, "x-note": "mine"}
    assert after["theme"] == "dark"
    assert after["mcpServers"]["alpha"] == before["mcpServers"]["alpha"]
    assert after["mcpServers"]["beta"] == before["mcpServers"]["beta"]
    assert states(seen, "gamma") == ["connecting", "connected"]
    assert any(isinstance(e, ToolsChanged) and e.server == "gamma" and e.tool_count > 0 for e in seen)
    assert seen[-1] == ConfigChanged(server="gamma", change="added", at=seen[-1].at)


async def test_add_server_refuses_a_bad_name_and_leaves_the_file_as_it_was(config_file: Path, log_dir: Path) -> None:
    before = await raw(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host:
        for bad in ["", "has space", "two__parts"]:
            with pytest.raises(ConfigError):
                await host.add_server(bad, {"command": "true"})
        assert set(host.servers) == {"alpha", "beta"}
    assert await raw(config_file) == before


async def test_add_server_with_a_known_name_replaces_its_config_and_reconnects(
    config_file: Path, http_url: str, log_dir: Path
) -> None:
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        assert len(host.catalog.for_server("alpha")) > 2
        status = await host.add_server("alpha", {"type": "http", "url": http_url, "tools": ["echo"]})
        changed = await next_event(events, ConfigChanged)
        assert status.state is ServerState.CONNECTED
        assert [t.original_name for t in host.catalog.for_server("alpha")] == ["echo"]
    assert (changed.server, changed.change) == ("alpha", "updated")
    assert (await read(config_file))["mcpServers"]["alpha"] == {
        "type": "http",
        "url": http_url,
        "tools": {"include": ["echo"]},
    }


async def test_update_server_changes_only_the_given_keys_and_reconnects(config_file: Path, log_dir: Path) -> None:
    before = await read(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        status = await host.update_server("alpha", {"timeout": 5})
        seen = await events_until(events, lambda e: isinstance(e, ConfigChanged))
        assert status.state is ServerState.CONNECTED
        config = host.config_of("alpha")
        assert not isinstance(config, dict) and getattr(config, "timeout", None) == 5
    after = await read(config_file)
    assert after["mcpServers"]["alpha"] == {**before["mcpServers"]["alpha"], "timeout": 5}
    assert after["mcpServers"]["beta"] == before["mcpServers"]["beta"]
    assert after["theme"] == "dark"
    assert states(seen, "alpha")[-2:] == ["connecting", "connected"]
    assert isinstance(seen[-1], ConfigChanged) and (seen[-1].server, seen[-1].change) == ("alpha", "updated")


async def test_an_update_saves_variable_references_not_their_values(
    tmp_path: Path, http_url: str, log_dir: Path
) -> None:
    port = http_url.split(":")[2].split("/")[0]
    path = tmp_path / "mcp.json"
    entry = {"type": "http", "url": "http://127.0.0.1:${MCPDECK_TEST_PORT}/mcp", "headers": {"X-Key": "${KEY}"}}
    await anyio.Path(path).write_text(json.dumps({"mcpServers": {"remote": entry}}))
    environ = {"MCPDECK_TEST_PORT": port, "KEY": "s3cret-value"}
    async with Host.from_file(path, log_dir=log_dir, environ=environ) as host:
        assert host.servers["remote"].state is ServerState.CONNECTED, host.servers["remote"].error
        status = await host.update_server("remote", {"timeout": 7})
        assert status.state is ServerState.CONNECTED
    assert (await read(path))["mcpServers"]["remote"] == {**entry, "timeout": 7}
    assert "s3cret-value" not in await anyio.Path(path).read_text()


async def test_an_in_process_server_cannot_be_updated_by_keys(log_dir: Path) -> None:
    async with Host({"inproc": build_server()}, log_dir=log_dir) as host:
        with pytest.raises(ConfigError, match="in-process"):
            await host.update_server("inproc", {"timeout": 5})
        with pytest.raises(ConfigError, match="no server named 'ghost'"):
            await host.update_server("ghost", {"timeout": 5})
        assert host.servers["inproc"].state is ServerState.CONNECTED


async def test_an_in_process_server_takes_the_settings_every_server_has(log_dir: Path) -> None:
    server = build_server()
    tools = ToolFilter(include=["echo", "sleep"])
    config = InProcessServerConfig(server=server, tools=tools, timeout=0.3, autoApprove=["echo"])
    async with Host(
        {"inproc": config, "off": InProcessServerConfig(server=server, disabled=True)}, log_dir=log_dir
    ) as host:
        assert sorted(t.original_name for t in host.catalog.for_server("inproc")) == ["echo", "sleep"]
        status = host.servers["inproc"]
        assert (status.state, status.transport, status.target, status.log_path) == (
            ServerState.CONNECTED,
            "in-process",
            "MCPServer",
            None,
        )
        assert host.config_of("inproc") is config and config.server is server
        assert host.servers["off"].state is ServerState.DISABLED
        with anyio.fail_after(WAIT), pytest.raises(ServerTimeoutError, match=r"0\.3 s"):
            await host.call_tool("mcp__inproc__sleep", {"seconds": 2})
        with anyio.fail_after(WAIT):
            assert (await host.call_tool("mcp__inproc__echo", {"text": "still here"})).text() == "still here"
    assert [path async for path in anyio.Path(log_dir).glob("*")] == []  # in-process servers have no log file


async def test_something_that_is_no_server_is_refused_with_what_to_give_instead(log_dir: Path) -> None:
    async with Host({"odd": 42, "good": build_server()}, log_dir=log_dir) as host:  # pyright: ignore[reportArgumentType]
        odd = host.servers["odd"]
        assert odd.state is ServerState.FAILED and odd.error is not None
        assert "must be an SDK server object (mcp.server.Server or MCPServer), not int" in odd.error
        assert host.servers["good"].state is ServerState.CONNECTED
        with pytest.raises(ConfigError, match="SDK server object"):
            await host.add_server("other", object(), save=False)  # pyright: ignore[reportArgumentType]
        assert "other" not in host.servers


async def test_a_malformed_config_file_is_refused_when_the_host_opens(tmp_path: Path, log_dir: Path) -> None:
    path = tmp_path / "mcp.json"
    text = '{\n  "mcpServers": {\n    "fs": {"command": npx}\n  }\n}\n'
    await anyio.Path(path).write_text(text)
    with pytest.raises(ConfigError) as caught:
        async with Host.from_file(path, log_dir=log_dir):
            pass
    assert caught.value.line == 3
    assert await anyio.Path(path).read_text() == text


async def test_remove_server_deletes_the_entry_and_its_tools(config_file: Path, log_dir: Path) -> None:
    before = await read(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        await host.remove_server("beta")
        seen = await events_until(events, lambda e: isinstance(e, ConfigChanged))
        assert "beta" not in host.servers
        assert host.catalog.for_server("beta") == []
        assert host.catalog.for_server("alpha")
        with pytest.raises(ToolNotFoundError):
            await host.call_tool("mcp__beta__echo", {"text": "x"})
    after = await read(config_file)
    assert "beta" not in after["mcpServers"]
    assert after["mcpServers"]["alpha"] == before["mcpServers"]["alpha"]
    assert after["theme"] == "dark"
    assert any(isinstance(e, ToolsChanged) and e.server == "beta" and e.tool_count == 0 for e in seen)
    assert isinstance(seen[-1], ConfigChanged) and (seen[-1].server, seen[-1].change) == ("beta", "removed")


async def test_disabling_a_server_keeps_its_config_and_takes_its_tools_away(config_file: Path, log_dir: Path) -> None:
    async with Host.from_file(config_file, log_dir=log_dir) as host:
        status = await host.set_server_disabled("alpha", True)
        assert status.state is ServerState.DISABLED
        assert (await read(config_file))["mcpServers"]["alpha"]["disabled"] is True
        assert (await read(config_file))["mcpServers"]["alpha"]["x-owner"] == "ops"
        assert host.catalog.for_server("alpha") == []
        with pytest.raises(ServerUnavailableError, match="disabled"):
            await host.call_tool("mcp__alpha__echo", {"text": "x"})
        with pytest.raises(ServerUnavailableError, match=r"is disabled, so it was not reconnected; enable it first"):
            await host.reconnect("alpha")  # not a silent no-op
        assert host.servers["alpha"].state is ServerState.DISABLED
        assert host.servers["beta"].state is ServerState.CONNECTED

        status = await host.set_server_disabled("alpha", False)
        assert status.state is ServerState.CONNECTED
        assert "disabled" not in (await read(config_file))["mcpServers"]["alpha"]
        assert (await host.call_tool("mcp__alpha__echo", {"text": "back"})).text() == "back"


async def test_disconnect_stops_a_server_without_touching_the_file_and_reconnect_brings_it_back(
    config_file: Path, log_dir: Path
) -> None:
    before = await raw(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        first = host.servers["alpha"].connected_at
        status = await host.disconnect("alpha")
        assert status.state is ServerState.STOPPED
        with pytest.raises(ServerUnavailableError, match="disconnected"):
            await host.call_tool("mcp__alpha__echo", {"text": "x"})
        status = await host.reconnect("alpha")
        assert status.state is ServerState.CONNECTED
        assert first is not None and status.connected_at is not None and status.connected_at > first
        assert (await host.call_tool("mcp__alpha__echo", {"text": "again"})).text() == "again"
        seen = await events_until(events, lambda e: isinstance(e, ServerStatusChanged) and e.state == "connected")
    assert states(seen, "alpha") == ["stopped", "connecting", "connected"]
    assert await raw(config_file) == before


async def test_the_global_switch_stops_and_starts_every_server_and_is_saved(config_file: Path, log_dir: Path) -> None:
    async with Host.from_file(config_file, log_dir=log_dir) as host, host.events.subscribe() as events:
        await host.set_enabled(False)
        off = await next_event(events, ConfigChanged)
        assert not host.enabled
        assert (await read(config_file))["mcpEnabled"] is False
        assert {s.state for s in host.servers.values()} == {ServerState.STOPPED}
        assert len(host.catalog) == 0

        await host.set_enabled(True)
        on = await next_event(events, ConfigChanged)
        assert host.enabled
        assert "mcpEnabled" not in (await read(config_file))
        assert {s.state for s in host.servers.values()} == {ServerState.CONNECTED}
        assert host.catalog.for_server("alpha") and host.catalog.for_server("beta")
    assert (off.server, off.change, on.server, on.change) == (None, "disabled", None, "enabled")


async def test_a_host_opened_with_the_switch_off_connects_nothing(config_file: Path, log_dir: Path) -> None:
    ConfigStore(config_file).set_enabled(False)
    async with Host.from_file(config_file, log_dir=log_dir) as host:
        assert not host.enabled
        assert {s.state for s in host.servers.values()} == {ServerState.STOPPED}
        assert len(host.catalog) == 0


async def test_test_server_connects_lists_and_saves_nothing(config_file: Path, http_url: str, log_dir: Path) -> None:
    before = await raw(config_file)
    async with Host.from_file(config_file, log_dir=log_dir) as host:
        changes: list[Event] = []
        host.events.on(changes.append)
        found = await host.test_server({"type": "http", "url": http_url})
        by_name = await host.test_server("beta")
        with closed_port() as port:
            broken = await host.test_server({"type": "http", "url": f"http://127.0.0.1:{port}/mcp"})
        assert set(host.servers) == {"alpha", "beta"}
        assert host.servers["beta"].state is ServerState.CONNECTED
    assert found.ok and by_name.ok
    assert "echo" in [tool.name for tool in found.tools]
    assert found.duration > 0
    assert not broken.ok
    assert broken.status.state is ServerState.FAILED and broken.status.error
    assert not [e for e in changes if isinstance(e, ConfigChanged)]
    assert await raw(config_file) == before


async def test_an_unusable_entry_is_reported_as_failed_and_the_others_connect(
    tmp_path: Path, http_url: str, log_dir: Path
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"good": {"url": http_url}, "broken": {"type": "carrier-pigeon", "url": "coo://x"}}})
    )
    async with Host.from_file(path, log_dir=log_dir) as host:
        assert host.servers["good"].state is ServerState.CONNECTED
        assert not host.servers["good"].unreadable
        broken = host.servers["broken"]
        assert broken.state is ServerState.FAILED
        assert broken.unreadable  # a typed state: no config behind it, nothing to connect
        assert broken.error is not None and "carrier-pigeon" in broken.error
        await host.remove_server("broken")
        assert "broken" not in host.servers
    assert list((await read(path))["mcpServers"]) == ["good"]


async def test_tool_filters_decide_which_tools_join_the_catalog(http_url: str, log_dir: Path) -> None:
    servers = {
        "picky": {"url": http_url, "type": "http", "tools": {"include": ["echo", "add*"], "exclude": ["add_tool"]}},
        "short": {"url": http_url, "type": "http", "tools": ["image"]},
        "all": {"url": http_url, "type": "http"},
    }
    async with Host(servers, log_dir=log_dir) as host:
        assert sorted(t.original_name for t in host.catalog.for_server("picky")) == ["add", "echo"]
        assert [t.original_name for t in host.catalog.for_server("short")] == ["image"]
        assert host.servers["picky"].tool_count == 2
        assert len(host.catalog.for_server("all")) > 10
        with pytest.raises(ToolNotFoundError):
            await host.call_tool("mcp__picky__add_tool", {"name": "x"})


async def test_only_connects_the_named_servers(http_url: str, log_dir: Path) -> None:
    servers = {"one": {"url": http_url, "type": "http"}, "two": {"url": http_url, "type": "http"}}
    async with Host(servers, log_dir=log_dir, only=["one"]) as host:
        assert host.servers["one"].state is ServerState.CONNECTED
        assert host.servers["two"].state is ServerState.STOPPED
        assert host.catalog.for_server("two") == []


async def test_a_host_cannot_be_entered_twice(log_dir: Path) -> None:
    host = Host({}, log_dir=log_dir)
    async with host:
        with pytest.raises(RuntimeError, match="already open"):
            await host.__aenter__()


async def test_the_catalog_version_grows_with_every_change(http_url: str, log_dir: Path) -> None:
    async with Host({"one": {"url": http_url, "type": "http"}}, log_dir=log_dir) as host:
        first = host.catalog.version
        assert first >= 1
        await host.disconnect("one")
        second = host.catalog.version
        await host.reconnect("one")
        assert first < second < host.catalog.version


# ----- the npm reference servers ------------------------------------------------------------


async def test_the_everything_reference_server_lists_and_runs_its_tools(log_dir: Path) -> None:
    servers = {"everything": {"command": str(NODE_BIN / "mcp-server-everything")}}
    async with Host(servers, log_dir=log_dir) as host:
        assert host.servers["everything"].state is ServerState.CONNECTED, host.servers["everything"].error
        assert {"mcp__everything__echo", "mcp__everything__get-sum"} <= set(host.catalog.names())
        with anyio.fail_after(WAIT):
            echo = await host.call_tool("mcp__everything__echo", {"message": "hi there"})
            total = await host.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3.5})
    assert echo.text() == "Echo: hi there"
    assert "5.5" in total.text()


async def test_the_filesystem_reference_server_reads_its_root_and_refuses_the_rest(
    tmp_path: Path, log_dir: Path
) -> None:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "notes.txt").write_text("first line\nsecond line\n")
    (tmp_path / "secret.txt").write_text("keep out")
    # The reference server lets a client's roots replace the folders it was started with;
    # `"roots": false` keeps mcpdeck from offering any, so the command line decides.
    servers = {"fs": {"command": str(NODE_BIN / "mcp-server-filesystem"), "args": [str(root)], "roots": False}}
    async with Host(servers, log_dir=log_dir) as host:
        assert host.servers["fs"].state is ServerState.CONNECTED, host.servers["fs"].error
        with anyio.fail_after(WAIT):
            listing = await host.call_tool("mcp__fs__list_directory", {"path": str(root)})
            text = await host.call_tool("mcp__fs__read_text_file", {"path": str(root / "notes.txt")})
            denied = await host.call_tool("mcp__fs__read_text_file", {"path": str(tmp_path / "secret.txt")})
    assert "[DIR] docs" in listing.text() and "[FILE] notes.txt" in listing.text()
    assert text.text() == "first line\nsecond line\n"
    assert not text.is_error
    assert denied.is_error
    assert "keep out" not in denied.text()
    assert "denied" in denied.text().lower()


# ----- no child process outlives the host ---------------------------------------------------


def all_stdio_servers(root: Path) -> dict[str, Any]:
    return {
        "basic": stdio_server("basic", direct=True),  # the host's own child, not a fork server's
        "everything": {"command": str(NODE_BIN / "mcp-server-everything")},
        "fs": {"command": str(NODE_BIN / "mcp-server-filesystem"), "args": [str(root)]},
    }


async def test_no_child_process_outlives_the_host(tmp_path: Path, log_dir: Path) -> None:
    before = descendants()
    async with Host(all_stdio_servers(tmp_path), log_dir=log_dir) as host:
        assert {s.state for s in host.servers.values()} == {ServerState.CONNECTED}
        children = descendants() - before
        server_pid = int((await host.call_tool("mcp__basic__pid")).text())
    assert server_pid in children
    assert len(children) >= 3
    left = await wait_gone(children)
    kill(left)
    assert left == set()


async def test_no_child_process_outlives_a_host_whose_task_is_cancelled(tmp_path: Path, log_dir: Path) -> None:
    before = descendants()
    children: set[int] = set()

    async def hold(*, task_status: TaskStatus[Host]) -> None:
        async with Host(all_stdio_servers(tmp_path), log_dir=log_dir) as host:
            task_status.started(host)
            await anyio.sleep_forever()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            host = await tg.start(hold)
            assert {s.state for s in host.servers.values()} == {ServerState.CONNECTED}
            children = descendants() - before
            tg.cancel_scope.cancel()
    assert len(children) >= 3
    left = await wait_gone(children)
    kill(left)
    assert left == set()


async def test_no_grandchild_process_outlives_the_host(log_dir: Path) -> None:
    # Wrappers (npx, uvx, shells) and servers that start helpers leave processes below the server.
    command = f"sleep 300 & exec {sys.executable} -m tests.servers.basic"
    before = descendants()
    async with Host({"wrapped": {"command": "sh", "args": ["-c", command], "cwd": str(ROOT)}}, log_dir=log_dir) as host:
        assert host.servers["wrapped"].state is ServerState.CONNECTED
        children = descendants() - before
        server_pid = int((await host.call_tool("mcp__wrapped__pid")).text())
    assert server_pid in children
    assert len(children) == 2  # the server and its `sleep`
    left = await wait_gone(children, timeout=2)
    kill(left)
    assert left == set()
