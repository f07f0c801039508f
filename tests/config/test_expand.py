"""``${VAR}`` and ``${VAR:-default}`` expansion: values from the environment, at connect time only."""

from __future__ import annotations

import pytest

from mcpdeck import RemoteServerConfig, StdioServerConfig
from mcpdeck.config import expand_server_config, expand_vars, parse_server_config
from mcpdeck.errors import UnsetVariableError

ENV = {"TOKEN": "s3cret", "EMPTY": "", "HOME": "/home/me"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("${TOKEN}", "s3cret"),
        ("Bearer ${TOKEN}!", "Bearer s3cret!"),
        ("${HOME}/${TOKEN}", "/home/me/s3cret"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${TOKEN:-fallback}", "s3cret"),
        ("${MISSING:-}", ""),
        ("${EMPTY}", ""),
        ("$${TOKEN}", "${TOKEN}"),
        ("cost: $5", "cost: $5"),
        ("$TOKEN", "$TOKEN"),
    ],
)
def test_references_are_replaced_like_the_shell_does(text: str, expected: str) -> None:
    assert expand_vars(text, ENV, field="url") == expected


def test_an_unset_variable_without_default_names_the_variable_the_field_and_the_server() -> None:
    with pytest.raises(UnsetVariableError) as caught:
        expand_vars("Bearer ${GITHUB_TOKEN}", ENV, field="headers.Authorization", server="github")
    error = caught.value
    assert (error.variable, error.field, error.server) == ("GITHUB_TOKEN", "headers.Authorization", "github")
    assert "GITHUB_TOKEN is not set" in str(error)
    assert "headers.Authorization" in str(error)
    assert "${GITHUB_TOKEN:-default}" in str(error)


def test_a_stdio_config_is_expanded_everywhere_and_the_original_is_left_alone() -> None:
    raw = {
        "command": "${HOME}/bin/server",
        "args": ["--token", "${TOKEN}", "--mode=${MODE:-fast}"],
        "env": {"API_KEY": "${TOKEN}", "PLAIN": "x"},
        "cwd": "${HOME}/work",
        "npmRegistry": "${REGISTRY:-https://registry.example}",
    }
    config = parse_server_config("s", raw)
    expanded = expand_server_config("s", config, ENV)
    assert isinstance(expanded, StdioServerConfig)
    assert expanded.command == "/home/me/bin/server"
    assert expanded.args == ["--token", "s3cret", "--mode=fast"]
    assert expanded.env == {"API_KEY": "s3cret", "PLAIN": "x"}
    assert expanded.cwd == "/home/me/work"
    assert expanded.npm_registry == "https://registry.example"
    assert config.to_json() == raw  # the saved form keeps the references


def test_a_remote_config_expands_its_url_and_headers() -> None:
    config = parse_server_config(
        "r", {"url": "https://${HOST:-api.example}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    )
    expanded = expand_server_config("r", config, ENV)
    assert isinstance(expanded, RemoteServerConfig)
    assert expanded.url == "https://api.example/mcp"
    assert expanded.headers == {"Authorization": "Bearer s3cret"}
    assert isinstance(config, RemoteServerConfig) and config.headers == {"Authorization": "Bearer ${TOKEN}"}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"command": "x", "args": ["a", "${NOPE}"]}, "args[1]"),
        ({"command": "x", "env": {"KEY": "${NOPE}"}}, "env.KEY"),
        ({"command": "${NOPE}"}, "command"),
        ({"command": "x", "cwd": "${NOPE}"}, "cwd"),
        ({"url": "https://${NOPE}/mcp"}, "url"),
        ({"url": "u", "headers": {"X-Key": "${NOPE}"}}, "headers.X-Key"),
    ],
)
def test_the_error_says_which_field_holds_the_unset_variable(raw: dict[str, object], field: str) -> None:
    with pytest.raises(UnsetVariableError) as caught:
        expand_server_config("s", parse_server_config("s", raw), ENV)
    assert (caught.value.variable, caught.value.field, caught.value.server) == ("NOPE", field, "s")
