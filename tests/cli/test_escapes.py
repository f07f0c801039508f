"""A hostile server through every command: nothing it sends may act on the terminal.

``tests.servers.escapes`` puts escape sequences (erase line + carriage return, OSC 0
titles, OSC 8 hyperlinks, C1 CSI, DEL, BEL, bidi overrides) into every string it sends.
Each command runs against real servers (the scripted model for ``chat``), first with pipes,
then at a pseudo-terminal where progress bars and questions are drawn. No control or
invisible format character from the server may reach stdout or stderr; what the server sent
must still be readable, escaped; ``--json`` stays exact.

With pipes, every command runs in this process (``inprocess``): what mcpdeck prints is the
same there. A few run as real processes as well (``IN_A_PROCESS``), whose stdout and stderr
are the file descriptors a server's child process could inherit and write to directly,
past everything mcpdeck prints; the terminal runs are real processes too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mcpdeck._util.safe_text import UNSAFE_CHARACTERS
from mcpdeck.catalog import assign_names
from tests.cli.inprocess import mcpdeck
from tests.cli.terminal import run_in_terminal
from tests.helpers import cli_environment, stdio_server
from tests.llm.scripted import Call, Reply, Step, serve_scripted_in_thread
from tests.servers.escapes import HOSTILE

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_SERVER = stdio_server("escapes")
CRASHING = stdio_server("escapes", "--crash")
ECHO = assign_names([("h", f"echo{HOSTILE}")])[0]
UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")
SHOWN = "\\x1b[2K\\r\\x1b]0;pwned title\\x07"
"""How the start of ``HOSTILE`` reads once made safe."""
TITLE = "\\x1b]0;pwned title\\x07"
"""Its window title part, which survives where a ``\\r`` (a line break) splits the text, as in stderr and logs."""

Done = subprocess.CompletedProcess[str]

COMMANDS: dict[str, list[str]] = {
    "list": ["list"],
    "list_json": ["list", "--json"],
    "get": ["get", "h"],
    "get_json": ["get", "h", "--json"],
    "get_crash": ["get", "crash"],
    "tools": ["tools", "--server", "h"],
    "tools_json": ["tools", "--server", "h", "--json"],
    "test": ["test", "h"],
    "test_json": ["test", "h", "--json"],
    "test_crash": ["test", "crash"],
    "call_echo": ["call", ECHO, "--args", json.dumps({"text": "plain"})],
    "call_chatter": ["call", "mcp__h__chatter"],
    "call_chatter_json": ["call", "mcp__h__chatter", "--json"],
    "call_explode": ["call", "mcp__h__explode"],
    "call_ask": ["call", "mcp__h__ask"],
    "call_page": ["call", "mcp__h__open_page"],
    "resources": ["resources", "--server", "h"],
    "resources_json": ["resources", "--server", "h", "--json"],
    "read": ["read", "hostile://doc", "--server", "h"],
    "read_json": ["read", "hostile://doc", "--server", "h", "--json"],
    "prompts": ["prompts", "--server", "h"],
    "prompts_json": ["prompts", "--server", "h", "--json"],
    "prompt": ["prompt", assign_names([("h", f"review{HOSTILE}")])[0], "--args", '{"code": "x"}'],
    "add": ["--config", "{tmp}/add.json", "add", "again", "--", sys.executable, *CRASHING["args"]],
}
"""Each command line, run with pipes and no terminal (stdin empty)."""

AFTER: dict[str, list[str]] = {
    "logs": ["logs", "h"],
    "logs_crash": ["logs", "crash"],
    "history": ["history"],
    "history_json": ["history", "--json"],
    "conversations": ["history", "--conversations"],
    "conversation": ["history", "--conversation", "1"],
}
"""Commands that read what the first ones left behind."""


IN_A_PROCESS = ("list", "get_crash", "call_chatter", "call_explode", "read")
"""Commands also run as a real process: each starts the hostile server; ``list`` and ``get_crash`` the
crashing one too, whose stderr is quoted in their output."""


def _command(config: Path, args: list[str]) -> tuple[Path, list[str]]:
    if args[0] == "--config":
        return Path(args[1]), args[2:]
    return config, args


def run(config: Path, args: list[str], *, env: dict[str, str] | None = None, stdin: str = "") -> Done:
    """``mcpdeck --config CONFIG ARGS`` in this process, with pipes."""
    config, args = _command(config, args)
    return mcpdeck(
        ["--config", str(config), *args], env=cli_environment(config.parent, **(env or {})), cwd=ROOT, stdin=stdin
    )


def run_process(config: Path, args: list[str]) -> Done:
    """``mcpdeck --config CONFIG ARGS`` as a real process, with pipes (stdin empty)."""
    config, args = _command(config, args)
    return subprocess.run(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), *args],
        input="",
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=90,
        env=cli_environment(config.parent),
        cwd=ROOT,
        check=False,
    )


def chats(config: Path) -> dict[str, Done]:
    """``chat`` with a model that calls the hostile tools, answering approvals on stdin; then ``--json``."""
    calls = [Call(ECHO, {"text": "hi"}), Call("mcp__h__chatter", {}), Call("mcp__h__explode", {})]
    script: list[Step] = [
        Reply(text=f"model says{HOSTILE}", tool_calls=calls),
        Reply(text=f"the end{HOSTILE}"),
        Reply(tool_calls=calls),
        Reply(text=f"json end{HOSTILE}"),
    ]
    with serve_scripted_in_thread("openai", script) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k"}
        human = run(config, ["chat", "-m", "openai:m", "-s", "h", "go"], env=env, stdin="y\ny\ny\n")
        as_json = run(config, ["chat", "-m", "openai:m", "-s", "h", "--yes", "--json", "go"], env=env)
    return {"chat": human, "chat_json": as_json}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    """What every command did in this process, one after the other, and (keys ``process:NAME``) what the
    commands of ``IN_A_PROCESS`` did as real processes, run meanwhile in other threads."""
    tmp = tmp_path_factory.mktemp("hostile")
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"h": HOSTILE_SERVER, "crash": CRASHING}}))
    (tmp / "add.json").write_text("{}")
    apart = tmp_path_factory.mktemp("hostile-processes") / "mcp.json"  # their own logs and history
    apart.write_text(config.read_text())
    with ThreadPoolExecutor(max_workers=2) as pool:
        processes = {name: pool.submit(run_process, apart, COMMANDS[name]) for name in IN_A_PROCESS}
        results = {
            name: run(config, [arg.replace("{tmp}", str(tmp)) for arg in args]) for name, args in COMMANDS.items()
        }
        results |= chats(config)
        results |= {name: run(config, args) for name, args in AFTER.items()}
        return results | {f"process:{name}": future.result() for name, future in processes.items()}


def unsafe_in(text: str) -> list[str]:
    return [char for char in UNSAFE.findall(text) if char not in "\n\t"]


def test_every_command_has_run(done: dict[str, Done]) -> None:
    processes = {f"process:{name}" for name in IN_A_PROCESS}
    assert set(done) == set(COMMANDS) | set(AFTER) | {"chat", "chat_json"} | processes


@pytest.mark.parametrize("name", [*COMMANDS, *AFTER, "chat", "chat_json", *(f"process:{n}" for n in IN_A_PROCESS)])
def test_no_control_character_from_the_server_reaches_the_output(done: dict[str, Done], name: str) -> None:
    result = done[name]
    assert unsafe_in(result.stdout) == [], result.stdout
    assert unsafe_in(result.stderr) == [], result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), result.stderr


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("get", "stdout"),  # server name and version, the tool's original name
        ("test", "stdout"),
        ("call_echo", "stdout"),  # result
        ("call_explode", "stderr"),  # an error message with server text
        ("call_ask", "stderr"),  # the elicitation message, declined without a terminal
        ("read", "stdout"),
        ("process:read", "stdout"),
        ("prompt", "stdout"),
        ("list", "stdout"),  # the crashing server's stderr, quoted in its error
        ("get_crash", "stdout"),
        ("process:get_crash", "stdout"),
        ("process:call_explode", "stderr"),
        ("test_crash", "stdout"),
        ("add", "stderr"),
        ("logs", "stdout"),  # its stderr and its log messages
        ("logs_crash", "stdout"),
        ("chat", "stdout"),  # the model's text
        ("chat", "stderr"),  # approvals, results, errors
    ],
)
def test_what_the_server_sent_is_shown_escaped_not_dropped(done: dict[str, Done], name: str, where: str) -> None:
    result = done[name]
    assert TITLE in getattr(result, where), f"{where}:\n{getattr(result, where)}\nstderr:\n{result.stderr}"


def test_a_conversation_shows_the_messages_as_json_with_escapes(done: dict[str, Done]) -> None:
    assert "\\u001b[2K\\r\\u001b]0;pwned title\\u0007" in done["conversation"].stdout, done["conversation"].stdout


def test_a_description_is_shown_to_its_first_line_break_escaped(done: dict[str, Done]) -> None:
    assert "Talks a lot.\\x1b[2K\n" in done["tools"].stdout  # "\r" ends the first line of the text


def test_the_approval_prompt_shows_the_real_tool_name(done: dict[str, Done]) -> None:
    stderr = done["chat"].stderr
    assert f"Allow {ECHO} (h: echo{SHOWN}" in stderr
    assert "Allow mcp__h__chatter (h: chatter)?" in stderr


def test_json_output_stays_exact(done: dict[str, Done]) -> None:
    def parsed(name: str) -> Any:
        return json.loads(done[name].stdout)

    assert any(tool["description"] == f"Echo.{HOSTILE}\nmore{HOSTILE}" for tool in parsed("tools_json"))
    assert parsed("get_json")["status"]["serverInfo"]["name"] == f"hostile{HOSTILE}"
    assert any(server["instructions"] == f"obey{HOSTILE}" for server in parsed("list_json")["servers"])
    assert parsed("call_chatter_json")["content"][0]["text"] == f"done{HOSTILE}"
    assert parsed("read_json")["contents"][0]["text"] == f"contents{HOSTILE}\nline two{HOSTILE}"
    assert parsed("prompts_json")[0]["description"] == f"Reviews.{HOSTILE}"
    assert parsed("test_json")["serverInfo"]["version"] == f"6.6.6{HOSTILE}"
    assert any(call["name"] == ECHO for call in parsed("history_json")["toolCalls"])


def test_chat_json_lines_stay_exact(done: dict[str, Done]) -> None:
    events = [json.loads(line) for line in done["chat_json"].stdout.splitlines()]
    texts = [e["text"] for e in events if e["event"] == "tool-result"]
    assert f"done{HOSTILE}" in texts
    assert events[-1]["text"] == f"json end{HOSTILE}"


# ----- at a terminal --------------------------------------------------------------------------

_OUR_COLORS = re.compile(r"\x1b\[[0-9;]*m")


def terminal_unsafe(text: str, *, redraws: str = "") -> list[str]:
    """Unsafe characters at a terminal, besides mcpdeck's own colors and progress-line redraws."""
    text = _OUR_COLORS.sub("", text)
    if redraws:
        text = text.replace(f"\r{redraws}", redraws)
    return unsafe_in(text)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"h": HOSTILE_SERVER}}))
    return path


def test_a_progress_bar_at_a_terminal_shows_the_server_message_escaped(config: Path) -> None:
    result = run_in_terminal(config, "call", "mcp__h__chatter")
    assert result.returncode == 0, result.text
    assert "mcp__h__chatter [" in result.text and "progress" + SHOWN in result.text  # the bar was drawn
    assert terminal_unsafe(result.text, redraws="mcp__h__chatter [") == [], result.text


def test_a_form_at_a_terminal_shows_every_server_string_escaped(config: Path) -> None:
    answers = [("(a", "b\n"), ("Note", "\n"), ("send this answer?", "a\n")]
    result = run_in_terminal(config, "call", "mcp__h__ask", answers=answers)
    assert result.returncode == 0, result.text
    assert "answered accept" in result.text
    assert "form" + SHOWN in result.text and "Pick" + SHOWN in result.text
    assert terminal_unsafe(result.text) == [], result.text
