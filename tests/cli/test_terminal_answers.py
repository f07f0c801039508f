"""Approvals and elicitations at the terminal: every argument shown, no stdin means no, pages opened with care."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from mcpdeck.cli._terminal import format_arguments, openable_url, shorten_middle
from tests.cli.inprocess import mcpdeck
from tests.cli.terminal import run_in_terminal
from tests.helpers import cli_environment, stdio_server
from tests.llm.scripted import Call, Reply, Step, serve_scripted_in_thread

ROOT = Path(__file__).resolve().parents[2]
BASIC = stdio_server("basic")
FEATURES = stdio_server("features")
HOSTILE = stdio_server("escapes")


def run(
    config: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = "", closed_stdin: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``mcpdeck`` in this process; with ``closed_stdin`` in a real one with no file descriptor 0 at all."""
    environ = cli_environment(config.parent, **(env or {}))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MCPDECK_MODEL"):
        if name not in (env or {}):
            environ.pop(name, None)
    if not closed_stdin:
        return mcpdeck(["--config", str(config), *args], env=environ, cwd=ROOT, stdin=stdin or "")
    return subprocess.run(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), *args],
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),
        capture_output=True,
        text=True,
        timeout=90,
        env=environ,
        cwd=ROOT,
        check=False,
    )


def write_config(tmp_path: Path, **servers: Mapping[str, object]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


# ----- a server's questions during a call -----------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "tool"),
    [((), "ask_name"), (("--modern-only",), "ask_name_rounds")],
    ids=["ctx.elicit-in-the-handshake-era", "input-required-rounds-on-2026-07-28"],
)
def test_a_servers_question_during_a_call_is_asked_at_the_terminal_and_the_answer_reaches_it(
    tmp_path: Path, flags: tuple[str, ...], tool: str
) -> None:
    config = write_config(tmp_path, asking=stdio_server("asking", *flags))
    answers = [("Name (string, required)", "Ada\n"), ("send this answer?", "a\n")]
    result = run_in_terminal(config, "call", f"mcp__asking__{tool}", answers=answers)
    assert result.returncode == 0, result.text
    assert "asking asks: \x1b[0mWhat is your name?" in result.text  # (the question in bold)
    assert '{"action": "accept", "data": {"name": "Ada"}}' in result.text


# ----- showing the arguments --------------------------------------------------------------------


def test_a_long_value_keeps_its_start_and_end_and_says_what_was_left_out() -> None:
    text = "HEAD" + "x" * 5000 + "TAIL"
    shown = shorten_middle(text)
    assert shown.startswith("HEADxxx") and shown.endswith("xxxTAIL")
    assert "[4,708 characters left out]" in shown
    assert shorten_middle("short") == "short"


def test_every_argument_name_is_shown_even_after_a_huge_value() -> None:
    arguments = {
        "content": "y" * 100_000,
        "path": "/etc/passwd",
        "options": {"blob": "z" * 10_000, "mode": "overwrite", "deep": {"deeper": {"deepest": {"x": 1}}}},
        "items": ["a" * 1000] * 50,
        "weird\x1bname": "\u202eevil",
    }
    lines = format_arguments(arguments)
    text = "\n".join(lines)
    assert '    path: "/etc/passwd"' in lines
    assert '      mode: "overwrite"' in lines
    assert "characters left out" in text and len(text) < 5000
    assert "deepest" in text and "items:" in text
    assert "weird\\x1bname" in text and "\\u202eevil" in text and "\x1b" not in text


def test_the_approval_prompt_shows_the_part_after_a_long_value(tmp_path: Path) -> None:
    config = write_config(tmp_path, basic=BASIC)
    arguments = {"text": "START" + "c" * 4000 + "END", "path": "/etc/shadow"}
    script: list[Step] = [Reply(tool_calls=[Call("mcp__basic__echo", arguments)]), Reply(text="ok")]
    with serve_scripted_in_thread("openai", script) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k"}
        done = run(config, "chat", "-m", "openai:m", "go", env=env, stdin="n\n")
    assert done.returncode == 0, done.stderr
    assert '    path: "/etc/shadow"' in done.stderr
    assert '    text: "STARTccc' in done.stderr and "characters left out]" in done.stderr and 'cccEND"' in done.stderr


# ----- no standard input ------------------------------------------------------------------------


def test_without_standard_input_an_approval_is_a_clean_denial_that_says_why(tmp_path: Path) -> None:
    config = write_config(tmp_path, basic=BASIC)
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__echo", {"text": "hi"})]),
        lambda request: Reply(text=" | ".join(text for _, text in request.tool_results)),
    ]
    with serve_scripted_in_thread("openai", script) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k"}
        done = run(config, "chat", "-m", "openai:m", "go", env=env, closed_stdin=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "no standard input to read one from; denied" in done.stderr
    assert "standard input is closed" in done.stdout  # what the model was told


def test_without_standard_input_an_elicitation_is_declined_and_says_why(tmp_path: Path) -> None:
    config = write_config(tmp_path, features=FEATURES)
    done = run(config, "call", "mcp__features__ask", "--args", '{"question": "Who?"}', closed_stdin=True)
    assert "Traceback" not in done.stderr
    assert "features asked for input ('Who?'), but there is no standard input (it is closed)" in done.stderr
    assert "decline" in done.stdout


# ----- pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host", "opened"),
    [
        ("https://example.com/a?b=c", "example.com", True),
        ("https://bücher.example/x", "xn--bcher-kva.example", True),
        ("https://google.com@evil.example/", "evil.example", True),
        ("http://127.0.0.1:8123/cb", "127.0.0.1", True),
        ("http://[::1]:8123/cb", "::1", True),
        ("http://localhost/cb", "localhost", True),
        ("http://example.com/", "example.com", False),
        ("javascript:alert(1)", "", False),
        ("file:///etc/passwd", "", False),
        ("vscode://extension/x", "extension", False),
        ("data:text/html,hi", "", False),
    ],
)
def test_only_https_and_loopback_http_pages_may_be_opened(url: str, host: str, opened: bool) -> None:
    shown, refused = openable_url(url)
    assert shown == host
    assert (refused is None) is opened, refused


@pytest.fixture
def browser(tmp_path: Path) -> dict[str, str]:
    """A "browser" that only says which URL it was given, on the terminal."""
    script = tmp_path / "browser.sh"
    script.write_text('#!/bin/sh\necho "BROWSER-OPENED $1"\n')
    script.chmod(0o755)
    return {"BROWSER": str(script)}


def test_a_page_with_another_scheme_is_never_opened(tmp_path: Path, browser: dict[str, str]) -> None:
    config = write_config(tmp_path, h=HOSTILE)
    result = run_in_terminal(config, "call", "mcp__h__open_page", env=browser)
    assert result.returncode == 0, result.text
    assert "address: javascript:alert(document.cookie)" in result.text
    assert "not opened: its scheme is javascript:" in result.text
    assert "BROWSER-OPENED" not in result.text and "page decline" in result.text


def test_the_default_answer_for_a_page_is_no(tmp_path: Path, browser: dict[str, str]) -> None:
    config = write_config(tmp_path, h=HOSTILE)
    args = json.dumps({"url": "https://example.com/connect?state=1"})
    answers = [("open it in your browser? [y/N]", "\n")]
    result = run_in_terminal(config, "call", "mcp__h__open_page", "--args", args, answers=answers, env=browser)
    assert result.returncode == 0, result.text
    assert "address: https://example.com/connect?state=1" in result.text
    assert "host:    example.com" in result.text
    assert "BROWSER-OPENED" not in result.text and "page decline" in result.text


def test_a_page_the_user_accepts_is_opened_after_showing_its_host(tmp_path: Path, browser: dict[str, str]) -> None:
    config = write_config(tmp_path, h=HOSTILE)
    args = json.dumps({"url": "https://bücher.example/login"})
    answers = [("open it in your browser?", "y\n"), ("BROWSER-OPENED", "\n")]
    result = run_in_terminal(config, "call", "mcp__h__open_page", "--args", args, answers=answers, env=browser)
    assert result.returncode == 0, result.text
    assert "host:    xn--bcher-kva.example" in result.text
    assert "BROWSER-OPENED https://bücher.example/login" in result.text
    assert "page accept" in result.text
