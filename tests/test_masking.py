"""Secrets kept out of what is shown: URLs, arguments, values, and the values ``${VAR}`` brings in."""

from __future__ import annotations

import pytest

from mcpdeck._util.masking import (
    Redactor,
    literal_secret,
    looks_like_token,
    mask_args,
    mask_command_line,
    mask_url,
    mask_urls,
    reference_for,
)
from mcpdeck.config import McpConfig, parse_server_config
from mcpdeck.config._expand import referenced_values
from mcpdeck.history import secrets_of
from tests.support.secret_values import REFERENCES, TYPED_VALUES


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.example.com/mcp?api_key=s3cr3t&x=1", "https://api.example.com/mcp?api_key=****&x=****"),
        ("https://bob:hunter22@example.com/mcp", "https://bob:****@example.com/mcp"),
        ("https://example.com/mcp?key=${KEY}", "https://example.com/mcp?key=${KEY}"),
        ("https://example.com/mcp#token=abc", "https://example.com/mcp#****"),
        ("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"),
    ],
)
def test_urls_lose_their_query_values_and_passwords(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_urls_inside_text_are_masked_too() -> None:
    text = "HTTP 401 from https://h.example/mcp?api_key=zzz-secret (cannot connect)"
    assert mask_urls(text) == "HTTP 401 from https://h.example/mcp?api_key=**** (cannot connect)"


def test_secret_looking_arguments_are_masked_and_others_kept() -> None:
    args = [
        "-y",
        "@modelcontextprotocol/server-github",
        "--api-key",
        "abcdef123456",
        "--token=ghp_abcdefghijklmnop1234",
        "API_KEY=live-value-123",
        "Authorization: Bearer eyJhbGciOi.payload.sig",
        "sk-proj-abcdefghijklmnop",
        "https://u:pw@example.com/x?k=v",
        "--port",
        "3000",
        "${TOKEN}",
        "/home/user/project",
    ]
    assert mask_args(args) == [
        "-y",
        "@modelcontextprotocol/server-github",
        "--api-key",
        "abc…****",
        "--token=ghp…****",
        "API_KEY=liv…****",
        "Authorization: Bea…****",
        "sk-…****",
        "https://u:****@example.com/x?k=****",
        "--port",
        "3000",
        "${TOKEN}",
        "/home/user/project",
    ]


def test_a_command_line_is_shown_as_a_shell_would_read_it_back() -> None:
    args = ["-m", "server", "--note", "two words", "", "it's", "${TOKEN}", "--api-key", "abc def 123456", "*.md"]
    shown = mask_command_line("/opt/my tools/python", args)
    assert shown == (
        "'/opt/my tools/python' -m server --note 'two words' '' 'it'\"'\"'s' '${TOKEN}' --api-key 'abc…****' '*.md'"
    )
    plain = mask_command_line("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"])
    assert plain == "npx -y @modelcontextprotocol/server-filesystem /home/me/notes"  # nothing to quote


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", True),
        ("d41d8cd98f00b204e9800998ecf8427e", True),
        ("Xk29fjQ0pLm3Nz8vTq4Wy7Rb", True),
        ("mcp-server-everything", False),
        ("server-everything-2.0.1", False),
        ("--stdio", False),
    ],
)
def test_tokens_are_told_from_ordinary_words(value: str, secret: bool) -> None:
    assert looks_like_token(value) is secret


@pytest.mark.parametrize(("name", "value", "secret"), TYPED_VALUES)
def test_a_secret_typed_out_is_told_from_a_reference_and_an_ordinary_setting(
    name: str, value: str, secret: bool
) -> None:
    assert literal_secret(name, value) is secret


@pytest.mark.parametrize(("server", "name", "value", "header", "expected"), REFERENCES)
def test_a_typed_secret_is_offered_a_variable_named_after_its_key_or_server(
    server: str, name: str, value: str, header: bool, expected: tuple[str, str]
) -> None:
    assert reference_for(server, name, value, header=header) == expected


def test_values_brought_in_by_references_are_collected_but_not_ordinary_ones() -> None:
    servers = {
        "remote": parse_server_config("remote", {"url": "https://x.example/${PATH_PART}/mcp?key=${KEY}"}),
        "local": parse_server_config(
            "local", {"command": "srv", "args": ["--root", "${HOME}", "--t", "${TOK:-fallback}"], "env": {"A": "${A}"}}
        ),
    }
    environ = {"KEY": "key-value-1", "PATH_PART": "tenant-42", "HOME": "/home/u", "TOK": "tok-value", "A": "ab"}
    assert referenced_values(servers, environ) == {"key-value-1", "tenant-42", "tok-value"}
    found = secrets_of(McpConfig(servers=servers), environ)
    assert {"key-value-1", "tenant-42", "tok-value"} <= found and "/home/u" not in found


def test_the_redactor_replaces_longest_secrets_first() -> None:
    redact = Redactor(["abc123", "abc123xyz"])
    assert redact("a abc123xyz b abc123") == "a **** b ****"
