"""Server config models: names, transport spellings, shapes, filters, timeouts, the JSON written back."""

from __future__ import annotations

from typing import Any

import pytest

from mcpdeck import ConfigError, RemoteServerConfig, StdioServerConfig
from mcpdeck.config import (
    InProcessServerConfig,
    ToolFilter,
    as_server_config,
    parse_server_config,
    validate_server_name,
)
from tests.servers.basic import build_server


@pytest.mark.parametrize("name", ["github", "my-server", "fs_2", "A", "x" * 48])
def test_a_name_of_letters_digits_dash_and_underscore_is_valid(name: str) -> None:
    assert validate_server_name(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "non-empty name"),
        ("my server", "' '"),
        ("a.b", "'.'"),
        ("naïve", "'ï'"),
        ("two__parts", "contains '__'"),
        ("x" * 49, "longer than 48"),
        (None, "non-empty name"),
    ],
)
def test_a_name_that_cannot_stand_in_a_tool_name_is_refused_with_the_reason(name: Any, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        validate_server_name(name)
    with pytest.raises(ConfigError):
        parse_server_config(name, {"command": "x"})


@pytest.mark.parametrize(
    "spelling", ["http", "HTTP", "streamable-http", "streamableHttp", "streamable_http", "streamable", " http "]
)
def test_every_spelling_of_streamable_http_means_http(spelling: str) -> None:
    config = parse_server_config("r", {"type": spelling, "url": "https://example.com/mcp"})
    assert isinstance(config, RemoteServerConfig)
    assert config.type == "http"
    assert config.transport == "http"
    assert config.to_json()["type"] == "http"


def test_sse_is_sse_and_transport_is_read_as_type() -> None:
    assert parse_server_config("r", {"type": "SSE", "url": "https://x/sse"}).transport == "sse"
    config = parse_server_config("r", {"transport": "streamable-http", "url": "https://x/mcp"})
    assert isinstance(config, RemoteServerConfig) and config.type == "http"
    assert "transport" not in config.to_json()


def test_a_url_without_a_type_means_try_http_then_sse() -> None:
    config = parse_server_config("r", {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}})
    assert isinstance(config, RemoteServerConfig)
    assert config.type is None
    assert config.transport == "http|sse"
    assert config.target == "https://example.com/mcp"
    assert config.to_json() == {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}}


def test_a_command_makes_a_stdio_server() -> None:
    raw = {"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1"}, "cwd": "/tmp", "type": "stdio"}
    config = parse_server_config("s", raw)
    assert isinstance(config, StdioServerConfig)
    assert (config.command, config.args, config.env, config.cwd) == ("npx", ["-y", "pkg"], {"A": "1"}, "/tmp")
    assert config.transport == "stdio"
    assert config.target == "npx -y pkg"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "carrier-pigeon", "url": "x"}, "unknown type 'carrier-pigeon'"),
        ({"command": "x", "url": "y"}, "not both"),
        ({}, "needs 'command'"),
        ({"args": ["x"]}, "needs 'command'"),
        ({"type": "sse", "command": "x"}, "needs a 'url'"),
        ({"type": "stdio", "url": "https://x"}, "needs a 'command'"),
        ({"command": ""}, "command"),
        ({"command": "x", "args": "not a list"}, "args"),
        ("npx pkg", "expected an object"),
    ],
)
def test_an_unusable_config_is_refused_naming_the_server_and_the_problem(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_server_config("bad", raw)
    assert "'bad'" in str(caught.value)
    assert caught.value.server == "bad"


def test_timeouts_have_defaults_and_must_be_positive() -> None:
    default = parse_server_config("s", {"command": "x"})
    assert (default.request_timeout, default.connect_timeout) == (60, 30)
    custom = parse_server_config("s", {"command": "x", "timeout": 120, "startupTimeout": 5})
    assert (custom.request_timeout, custom.connect_timeout) == (120, 5)
    assert custom.to_json() == {"command": "x", "timeout": 120, "startupTimeout": 5}
    for bad in ({"timeout": 0}, {"timeout": -1}, {"startupTimeout": 0}):
        with pytest.raises(ConfigError, match="greater than 0"):
            parse_server_config("s", {"command": "x", **bad})


def test_unknown_keys_are_kept_and_runtime_keys_dropped() -> None:
    raw: dict[str, Any] = {
        "command": "x",
        "x-team": "infra",
        "metadata": {"owner": "me"},
        "status": "connected",
        "toolCount": 12,
        "lastError": "boom",
        "connected": True,
    }
    config = parse_server_config("s", raw)
    assert config.to_json() == {"command": "x", "x-team": "infra", "metadata": {"owner": "me"}}


def test_to_json_writes_what_the_server_is_first_and_leaves_defaults_out() -> None:
    raw: dict[str, Any] = {"autoApprove": ["read_*"], "disabled": True, "args": ["a"], "command": "x", "env": {}}
    written = parse_server_config("s", raw).to_json()
    assert written == {"command": "x", "args": ["a"], "disabled": True, "autoApprove": ["read_*"]}
    assert list(written)[:2] == ["command", "args"]
    remote = parse_server_config("r", {"headers": {"A": "b"}, "timeout": 9, "url": "u", "type": "sse"}).to_json()
    assert list(remote) == ["type", "url", "headers", "timeout"]


def test_a_tool_filter_includes_and_excludes_by_name_or_pattern() -> None:
    both = ToolFilter(include=["read_*", "list_directory"], exclude=["read_secret*"])
    assert both.allows("read_file")
    assert both.allows("list_directory")
    assert not both.allows("read_secret_key")  # exclude wins over include
    assert not both.allows("write_file")
    only_exclude = ToolFilter(exclude=["delete_*"])
    assert only_exclude.allows("write_file") and not only_exclude.allows("delete_file")
    assert ToolFilter().allows("anything")


def test_a_server_filter_can_be_written_as_a_list_of_names() -> None:
    config = parse_server_config("s", {"command": "x", "tools": ["echo", "add"]})
    assert config.tools == ToolFilter(include=["echo", "add"])
    assert config.allows_tool("echo") and not config.allows_tool("sleep")
    assert parse_server_config("s", {"command": "x"}).allows_tool("sleep")
    with pytest.raises(ConfigError, match="tools"):
        parse_server_config("s", {"command": "x", "tools": {"inclde": ["typo"]}})


def test_an_in_process_server_is_a_config_with_the_same_settings_and_never_shows_its_server() -> None:
    server = build_server()
    config = as_server_config("inproc", server)
    assert isinstance(config, InProcessServerConfig) and config.server is server
    assert (config.transport, config.target, config.request_timeout, config.connect_timeout) == (
        "in-process",
        "MCPServer",
        60,
        30,
    )
    tuned = InProcessServerConfig(server=server, timeout=5, tools=ToolFilter(exclude=["fail"]))
    assert tuned.to_json() == {"timeout": 5, "tools": {"exclude": ["fail"]}}  # what it is stays out of any file
    assert not tuned.allows_tool("fail") and tuned.allows_tool("echo")
    assert as_server_config("inproc", tuned) is tuned
    stdio = as_server_config("fs", {"command": "npx", "args": ["x"]})
    assert isinstance(stdio, StdioServerConfig) and stdio.args == ["x"]


def test_an_in_process_config_refuses_anything_but_a_server_and_unknown_keys() -> None:
    with pytest.raises(ConfigError, match=r"server 'odd': server: must be an SDK server object .* not str"):
        as_server_config("odd", "not a server")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="colour"):
        InProcessServerConfig(server=build_server(), colour="red")  # pyright: ignore[reportCallIssue]
