"""``mcpdeck chat`` (in this process, see ``inprocess``): real MCP servers, a scripted provider over HTTP."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.inprocess import mcpdeck as in_process
from tests.helpers import cli_environment, closed_port, stdio_server
from tests.llm.scripted import Call, Fail, Received, Reply, Step, serve_scripted_in_thread

ROOT = Path(__file__).resolve().parents[2]
BASIC = stdio_server("basic")


def chat(
    config: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``mcpdeck --config CONFIG chat ARGS`` (bounded by a timeout); stdin is empty unless given."""
    return mcpdeck(config, "chat", *args, env=env, stdin=stdin)


def mcpdeck(
    config: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``mcpdeck --config CONFIG ARGS`` (in this process)."""
    environ = cli_environment(config.parent, **(env or {}))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MCPDECK_MODEL"):
        if name not in (env or {}):
            environ.pop(name, None)
    return in_process(["--config", str(config), *args], env=environ, cwd=ROOT, stdin=stdin or "")


def write_config(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"basic": BASIC}, **extra}, indent=2))
    return path


def results(request: Received) -> str:
    return " | ".join(text for _, text in request.tool_results)


def history_rows(tmp_path: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        rows = db.execute("SELECT name, status, approved_by FROM tool_calls ORDER BY id").fetchall()
    return [(str(r[0]), str(r[1]), r[2]) for r in rows]


def test_openai_tool_calls_reach_the_servers_and_the_answer_prints(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    script: list[Step] = [
        Reply(
            text="Checking.",
            tool_calls=[Call("mcp__basic__echo", {"text": "hello"}), Call("mcp__basic__add", {"a": 2, "b": 3})],
        ),
        lambda request: Reply(text=f"The tools said: {results(request)}"),
    ]
    with serve_scripted_in_thread("openai", script) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        done = chat(config, "--model", "openai:gpt-test", "--yes", "say hello and add 2 and 3", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("The tools said: hello | 5")
    assert "→ mcp__basic__echo" in done.stderr and "→ mcp__basic__add" in done.stderr
    first, second = server.requests
    assert first.model == "gpt-test" and first.api_key == "sk-test"
    assert {"mcp__basic__echo", "mcp__basic__add"} <= set(first.tool_names)
    assert [text for _, text in second.tool_results] == ["hello", "5"]
    assert history_rows(tmp_path) == [
        ("mcp__basic__echo", "ok", "user-once"),
        ("mcp__basic__add", "ok", "user-once"),
    ]
    listed = json.loads(mcpdeck(config, "history", "--conversations", "--json").stdout)
    (conversation,) = listed["conversations"]
    assert (conversation["model"], conversation["title"]) == ("openai:gpt-test", "say hello and add 2 and 3")
    shown = json.loads(mcpdeck(config, "history", "--conversation", str(conversation["id"]), "--json").stdout)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "assistant"]
    calls = json.loads(mcpdeck(config, "history", "--json").stdout)["toolCalls"]
    assert {c["approvedBy"] for c in calls} == {"user-once"}


def test_anthropic_with_a_deny_rule_the_denied_call_does_not_run(tmp_path: Path) -> None:
    config = write_config(tmp_path, permissions={"allow": ["mcp__basic"], "deny": ["mcp__basic__add"]})
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__add", {"a": 1, "b": 1}), Call("mcp__basic__echo", {"text": "ok"})]),
        lambda request: Reply(text=f"Results: {results(request)}"),
    ]
    with serve_scripted_in_thread("anthropic", script) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test"}
        done = chat(config, "-m", "anthropic:claude-test", "add one and one", env=env)
    assert done.returncode == 0, done.stderr
    assert "Results: Permission denied for mcp__basic__add: denied by the rule 'mcp__basic__add' | ok" in done.stdout
    assert "✗ mcp__basic__add denied" in done.stderr
    assert history_rows(tmp_path) == [
        ("mcp__basic__add", "denied", "denied-by-rule"),
        ("mcp__basic__echo", "ok", "rule"),
    ]
    assert server.requests[0].api_key == "sk-ant-test"


def test_approvals_are_answered_on_stdin_and_end_of_input_denies(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    calls = [Call("mcp__basic__echo", {"text": "one"}), Call("mcp__basic__echo", {"text": "two"})]
    calls.append(Call("mcp__basic__echo", {"text": "three"}))
    script: list[Step] = [Reply(tool_calls=calls), lambda request: Reply(text=results(request))]
    with serve_scripted_in_thread("openai", script) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
        done = chat(config, "-m", "openai:m", "echo", env=env, stdin="maybe\ny\nn\n")
    assert done.returncode == 0, done.stderr
    assert "Allow mcp__basic__echo (basic: echo)?" in done.stderr
    assert "answer y, s, a or n" in done.stderr  # "maybe" was asked again
    assert "(no answer: end of input)" in done.stderr
    sent = [text for _, text in server.requests[1].tool_results]
    assert sent[0] == "one"
    assert "the user declined" in sent[1]
    assert "the user declined: no answer" in sent[2]
    assert [row[2] for row in history_rows(tmp_path)] == ["user-once", "denied-by-user", "denied-by-user"]


def test_always_is_saved_to_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__echo", {"text": "a"}), Call("mcp__basic__echo", {"text": "b"})]),
        Reply(text="ok"),
    ]
    with serve_scripted_in_thread("openai", script) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
        done = chat(config, "-m", "openai:m", "echo twice", env=env, stdin="a\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Allow mcp__basic__echo") == 1
    saved = json.loads(config.read_text())
    assert saved["permissions"] == {"allow": ["mcp__basic__echo"]}
    assert saved["mcpServers"]["basic"] == BASIC


def test_json_prints_every_event_as_a_line(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    script: list[Step] = [Reply(tool_calls=[Call("mcp__basic__echo", {"text": "j"})]), Reply(text="fin")]
    with serve_scripted_in_thread("openai", script) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k", "MCPDECK_MODEL": "openai:m"}
        done = chat(config, "--yes", "--json", "go", env=env)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "turn" and kinds[-1] == "done"
    assert {"tool-call", "tool-result", "text"} <= set(kinds)
    (result,) = [e for e in events if e["event"] == "tool-result"]
    assert (result["name"], result["text"], result["approvedBy"]) == ("mcp__basic__echo", "j", "user-once")
    assert events[-1]["text"] == "fin"


def test_a_conversation_without_a_prompt_reads_turns_from_stdin(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    script: list[Step] = [
        Reply(text="first answer"),
        lambda request: Reply(text=f"saw {len(request.messages)} messages"),
        lambda request: Reply(text=f"after reset {len(request.messages)}"),
    ]
    with serve_scripted_in_thread("anthropic", script) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}
        done = chat(config, "-m", "anthropic:m", env=env, stdin="hi\nagain\n/reset\nfresh\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["first answer", "saw 3 messages", "after reset 1"]
    assert [r.last_user_text for r in server.requests] == ["hi", "again", "fresh"]


def test_a_provider_error_is_told_and_exits_1(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve_scripted_in_thread("openai", [Fail(401)]) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "wrong"}
        done = chat(config, "-m", "openai:m", "hi", env=env)
    assert done.returncode == 1
    assert "error: " in done.stderr and "401" in done.stderr


def test_without_a_model_or_a_key_the_error_says_what_to_do(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    no_model = chat(config, "hi")
    assert no_model.returncode == 1
    assert "name a model: --model openai:gpt-4.1" in no_model.stderr
    no_key = chat(config, "-m", "openai:gpt-4.1", "hi")
    assert no_key.returncode == 1
    assert "OPENAI_API_KEY" in no_key.stderr
    unknown = chat(config, "-m", "nope:x", "hi")
    assert unknown.returncode == 1
    assert "unknown provider 'nope'" in unknown.stderr


def test_an_unknown_conversation_is_a_clear_error(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    done = mcpdeck(config, "history", "--conversation", "99")
    assert done.returncode == 2
    assert "no conversation 99 in" in done.stderr and "mcpdeck history --conversations" in done.stderr


def test_a_chat_that_never_reached_the_provider_is_in_the_history_with_why(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with closed_port() as port:
        env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "k"}
        done = chat(config, "-m", "openai:m", "hi", env=env)
    assert done.returncode == 1
    assert "cannot reach" in done.stderr
    listed = mcpdeck(config, "history", "--conversations", "--json")
    (conversation,) = json.loads(listed.stdout)["conversations"]
    assert (conversation["title"], conversation["messages"]) == ("hi", 2)
    shown = json.loads(mcpdeck(config, "history", "--conversation", str(conversation["id"]), "--json").stdout)
    assert [m["role"] for m in shown["messages"]] == ["user", "error"]
    assert "cannot reach" in shown["messages"][1]["content"]["message"]
