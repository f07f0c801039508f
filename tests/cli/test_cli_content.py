"""The CLI's ``resources``, ``read``, ``prompts`` and ``prompt``, and answering servers without a terminal.

The commands run in this process (``inprocess``) with real servers (the ``everything``
reference server and the features test server). Each command takes a second or more (it
starts its servers), so the module runs them all first and each test checks the ones it is
about.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcpdeck.cli._terminal import check_field
from tests.cli.inprocess import mcpdeck
from tests.helpers import cli_environment, stdio_server
from tests.servers.features import LOGO

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = str(ROOT / "node_modules" / ".bin" / "mcp-server-everything")
FEATURES = stdio_server("features")

Done = subprocess.CompletedProcess[str]

SERVERS: dict[str, Any] = {"everything": {"command": EVERYTHING}, "features": FEATURES}
COMMANDS: dict[str, list[str]] = {
    "resources": ["resources"],
    "read_resolved": ["read", "demo://resource/dynamic/text/7"],
    "read_json": ["read", "demo://resource/static/document/features.md", "--server", "everything", "--json"],
    "read_blob": ["read", "features://logo", "--server", "features", "-o", "{tmp}/logo.png"],
    "prompts": ["prompts"],
    "prompt_everything": ["prompt", "mcp__everything__args-prompt", "--args", '{"city": "Oslo"}'],
    "prompt_features": ["prompt", "mcp__features__review", "--args", '{"code": "x = 1", "language": "rust"}'],
    "ask": ["call", "mcp__features__ask", "--args", '{"question": "Who are you?"}'],
}
"""What the tests look at: each command line, run against ``SERVERS``."""


def run(config: Path, args: list[str]) -> Done:
    """Run ``mcpdeck --config CONFIG ARGS`` in this process, without a terminal on stdin."""
    return mcpdeck(["--config", str(config), *args], env=cli_environment(config.parent), cwd=ROOT)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def done(tmp: Path) -> dict[str, Done]:
    """What every command of ``COMMANDS`` did."""
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": SERVERS}))
    return {name: run(config, [arg.replace("{tmp}", str(tmp)) for arg in args]) for name, args in COMMANDS.items()}


def ok(result: Done) -> Done:
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    return result


# ----- resources --------------------------------------------------------------------------------


def test_resources_lists_every_servers_resources_and_templates(done: dict[str, Done]) -> None:
    out = ok(done["resources"]).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    listed = {(row[0], row[1]) for row in rows}
    assert ("everything", "demo://resource/static/document/features.md") in listed
    assert ["features", "features://logo", "image/png", "logo"] in rows
    assert ["features", "features://info", "text/plain", "About"] in rows
    assert ("everything", "demo://resource/dynamic/text/{resourceId}") in listed  # the templates table
    assert ("features", "note://{id}") in listed


# ----- read -------------------------------------------------------------------------------------


def test_read_finds_the_server_of_a_uri_and_prints_its_text(done: dict[str, Done]) -> None:
    out = ok(done["read_resolved"]).stdout
    assert out.startswith("Resource 7: This is a plaintext resource")


def test_read_json_prints_the_whole_result(done: dict[str, Done]) -> None:
    data = json.loads(ok(done["read_json"]).stdout)
    [content] = data["contents"]
    assert content["uri"] == "demo://resource/static/document/features.md"
    assert content["mimeType"] == "text/markdown"
    assert content["text"].startswith("# Everything Server - Features")


def test_read_writes_a_blob_to_the_output_file(done: dict[str, Done], tmp: Path) -> None:
    assert ok(done["read_blob"]).stdout == ""
    assert (tmp / "logo.png").read_bytes() == LOGO


# ----- prompts ----------------------------------------------------------------------------------


def test_prompts_lists_namespaced_names_and_marks_optional_arguments(done: dict[str, Done]) -> None:
    rows = {line.split()[0]: line for line in ok(done["prompts"]).stdout.splitlines() if line.strip()}
    assert "city state?" in rows["mcp__everything__args-prompt"]
    assert "code language?" in rows["mcp__features__review"]
    assert "Review some code." in rows["mcp__features__review"]
    assert "mcp__features__plain" in rows


def test_prompt_prints_the_messages_filled_with_the_arguments(done: dict[str, Done]) -> None:
    assert ok(done["prompt_everything"]).stdout.strip() == "user: What's weather in Oslo?"
    lines = ok(done["prompt_features"]).stdout.splitlines()
    assert lines == ["Review some code.", "user: Review this rust code: x = 1"]


# ----- servers asking without a terminal --------------------------------------------------------------


def test_a_tool_that_asks_the_user_is_declined_without_a_terminal_and_says_so(done: dict[str, Done]) -> None:
    asked = ok(done["ask"])
    assert json.loads(asked.stdout) == {"action": "decline", "content": None}
    assert "features asked for input ('Who are you?'), but there is no terminal to ask at; declined." in asked.stderr


# ----- checking a form field's answer -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "text", "value"),
    [
        ({}, "anything", "anything"),
        ({"type": "string"}, "Ada", "Ada"),
        ({"type": "integer"}, "42", 42),
        ({"type": "integer", "minimum": 1, "maximum": 10}, "10", 10),
        ({"type": "number"}, "2.5", 2.5),
        ({"type": "number", "minimum": 0}, "0", 0.0),
        ({"type": "string", "enum": ["red", "green"]}, "green", "green"),
        ({"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]}, "l", "l"),
        ({"type": "string", "minLength": 2, "maxLength": 3}, "abc", "abc"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "abc", "abc"),
        ({"type": "string", "format": "email"}, "ada@example.com", "ada@example.com"),
        ({"type": "string", "format": "uri"}, "https://example.com/x", "https://example.com/x"),
        ({"type": "string", "format": "date"}, "2026-07-28", "2026-07-28"),
        ({"type": "string", "format": "date-time"}, "2026-07-28T10:00:00Z", "2026-07-28T10:00:00Z"),
        ({"type": "boolean"}, "yes", True),
        ({"type": "boolean"}, " Y ", True),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "1", True),
        ({"type": "boolean"}, "no", False),
        ({"type": "boolean"}, "FALSE", False),
        ({"type": "boolean"}, "0", False),
        ({"type": "array"}, "a, b,,c ", ["a", "b", "c"]),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, "b,a", ["b", "a"]),
        ({"type": "array", "items": {"anyOf": [{"const": "x"}, {"const": "y"}]}}, "y", ["y"]),
    ],
)
def test_check_field_accepts_an_answer_that_fits_and_converts_it(spec: dict[str, Any], text: str, value: Any) -> None:
    result, problem = check_field(spec, text)
    assert problem is None
    assert result == value and type(result) is type(value)


@pytest.mark.parametrize(
    ("spec", "text", "problem"),
    [
        ({"type": "integer"}, "4.2", "enter a whole number"),
        ({"type": "integer"}, "four", "enter a whole number"),
        ({"type": "number"}, "abc", "enter a number"),
        ({"type": "integer", "minimum": 1}, "0", "must be at least 1"),
        ({"type": "number", "maximum": 2.5}, "2.6", "must be at most 2.5"),
        ({"type": "string", "enum": ["red", "green"]}, "blue", "choose one of red, green"),
        ({"type": "string", "oneOf": [{"const": "s"}, {"const": "l"}]}, "m", "choose one of s, l"),
        ({"type": "string", "minLength": 2}, "a", "needs at least 2 characters"),
        ({"type": "string", "maxLength": 3}, "abcd", "takes at most 3 characters"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "ABC", "must match ^[a-z]+$"),
        ({"type": "string", "format": "email"}, "ada@", "must be a valid email"),
        ({"type": "string", "format": "uri"}, "not a uri", "must be a valid uri"),
        ({"type": "string", "format": "date"}, "28/07/2026", "must be a valid date"),
        ({"type": "string", "format": "date-time"}, "2026-07-28", "must be a valid date-time"),
        ({"type": "boolean"}, "maybe", "answer yes or no"),
        ({"type": "boolean"}, "", "answer yes or no"),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, "a, z", "choose from a, b"),
    ],
)
def test_check_field_refuses_an_answer_that_does_not_fit_and_says_why(
    spec: dict[str, Any], text: str, problem: str
) -> None:
    assert check_field(spec, text) == (None, problem)
