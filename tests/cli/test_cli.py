"""The ``mcpdeck`` command with real servers and a real config file (in this process: see ``inprocess``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.cli.inprocess import mcpdeck, run, write
from tests.helpers import stdio_server

ROOT = Path(__file__).resolve().parents[2]
BASIC = stdio_server("basic")
EVERYTHING = str(ROOT / "node_modules" / ".bin" / "mcp-server-everything")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    write(
        path,
        {
            "basic": BASIC,
            "everything": {"command": EVERYTHING},
            "broken": {"command": "mcpdeck-test-no-such-command"},
        },
    )
    return path


def test_list_shows_each_server_status_and_tool_count_side_by_side(config: Path) -> None:
    done = run(config, "list")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert "connected" in lines["basic"]
    assert "connected" in lines["everything"]
    assert "failed" in lines["broken"]
    assert "2/3 connected" in done.stdout
    assert "mcpdeck-test-no-such-command' was not found on PATH" in done.stdout


def test_list_and_get_show_a_failed_optional_list_as_a_warning_of_a_connected_server(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    lists = ["-m", "tests.servers.handshake_era", "--unknown=method-not-found", "--broken-lists"]
    write(path, {"lists": {"command": sys.executable, "args": lists, "cwd": str(ROOT)}})
    listed = run(path, "list")
    assert listed.returncode == 0, listed.stderr
    assert "1/1 connected" in listed.stdout
    assert "lists: warning: could not list prompts: prompts/list is broken on this server (MCP error -32603)" in (
        listed.stdout
    )
    shown = run(path, "get", "lists")
    assert shown.returncode == 0, shown.stderr
    warnings = [line for line in shown.stdout.splitlines() if line.strip().startswith("warning:")]
    assert len(warnings) == 3 and "could not list resource templates" in warnings[1]


def test_list_json_is_stable_and_machine_readable(config: Path) -> None:
    done = run(config, "list", "--json")
    data = json.loads(done.stdout)
    servers = {s["name"]: s for s in data["servers"]}
    assert set(servers) == {"basic", "everything", "broken"}
    assert servers["basic"]["state"] == "connected"
    assert servers["basic"]["serverInfo"] == {"name": "basic", "version": "1.2.3"}
    assert servers["everything"]["toolCount"] >= 10
    assert servers["broken"]["state"] == "failed" and "not found" in servers["broken"]["error"]
    assert set(servers["basic"]) >= {"transport", "target", "toolCount", "error", "protocolVersion", "logPath"}


def test_tools_lists_namespaced_names_and_filters_by_server(config: Path) -> None:
    done = run(config, "tools", "--server", "basic", "--json")
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    names = {t["name"] for t in tools}
    assert "mcp__basic__echo" in names
    assert all(t["server"] == "basic" for t in tools)
    echo = next(t for t in tools if t["name"] == "mcp__basic__echo")
    assert echo["tool"] == "echo" and echo["inputSchema"]["required"] == ["text"]


def test_call_prints_the_result_and_json_keeps_the_mcp_content(config: Path) -> None:
    done = run(config, "call", "mcp__basic__add", "--args", '{"a": 2, "b": 40}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
    done = run(config, "call", "mcp__everything__echo", "--args", '{"message": "hi"}', "--json")
    result = json.loads(done.stdout)
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "Echo: hi"}]


def test_call_errors_go_to_stderr_with_a_nonzero_exit(config: Path) -> None:
    failed_tool = run(config, "call", "mcp__basic__fail", "--args", '{"message": "nope"}')
    assert failed_tool.returncode == 1
    assert "Error executing tool fail" in failed_tool.stdout  # the SDK server hides the exception text
    bad_args = run(config, "call", "mcp__basic__add", "--args", '{"a": "x"}')
    assert bad_args.returncode == 1
    assert "invalid arguments" in bad_args.stderr and bad_args.stdout == ""
    unknown = run(config, "call", "mcp__basic__nope")
    assert unknown.returncode == 1 and "no tool named 'mcp__basic__nope'" in unknown.stderr
    down = run(config, "call", "mcp__broken__anything")
    assert down.returncode == 1 and "server 'broken'" in down.stderr and "not found on PATH" in down.stderr
    not_json = run(config, "call", "mcp__basic__add", "--args", "{a: 1}")
    assert not_json.returncode == 2 and "--args is not valid JSON" in not_json.stderr


def test_add_remove_enable_disable_change_only_their_server(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, {"keep": {"command": "keep-me", "myKey": [1, 2]}}, otherApp={"theme": "dark"})
    added = run(path, "add", "basic", "--env", "A=1", "--", sys.executable, "-m", "tests.servers.basic")
    assert added.returncode == 0, added.stderr
    assert "connected" in added.stdout
    doc = json.loads(path.read_text())
    assert doc["otherApp"] == {"theme": "dark"}
    assert doc["mcpServers"]["keep"] == {"command": "keep-me", "myKey": [1, 2]}
    assert doc["mcpServers"]["basic"] == {
        "command": sys.executable,
        "args": ["-m", "tests.servers.basic"],
        "env": {"A": "1"},
    }

    again = run(path, "add", "basic", "--", "x")
    assert again.returncode == 2 and "already exists" in again.stderr
    assert json.loads(path.read_text()) == doc

    assert run(path, "disable", "basic").returncode == 0
    assert json.loads(path.read_text())["mcpServers"]["basic"]["disabled"] is True
    listed = json.loads(run(path, "list", "--json").stdout)
    assert {s["name"]: s["state"] for s in listed["servers"]}["basic"] == "disabled"
    assert run(path, "enable", "basic").returncode == 0
    assert "disabled" not in json.loads(path.read_text())["mcpServers"]["basic"]

    remote = run(path, "add", "api", "--url", "http://127.0.0.1:9/mcp", "--type", "http", "--header", "X-Key: ${KEY}")
    assert remote.returncode == 1 and "did not connect, so it was not saved" in remote.stderr
    assert "api" not in json.loads(path.read_text())["mcpServers"]
    remote = run(
        path,
        "add",
        "api",
        "--save-anyway",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--type",
        "http",
        "--header",
        "X-Key: ${KEY}",
    )
    assert remote.returncode == 1 and "saved anyway" in remote.stderr
    assert json.loads(path.read_text())["mcpServers"]["api"] == {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"X-Key": "${KEY}"},
    }
    assert run(path, "remove", "api").returncode == 0
    assert run(path, "remove", "basic").returncode == 0
    assert json.loads(path.read_text()) == {
        "mcpServers": {"keep": {"command": "keep-me", "myKey": [1, 2]}},
        "otherApp": {"theme": "dark"},
    }
    missing = run(path, "remove", "basic")
    assert missing.returncode == 2 and "no server named 'basic'" in missing.stderr


def test_add_json_accepts_other_hosts_spellings_and_rejects_bad_names(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    done = run(
        path, "add-json", "remote", '{"type": "streamableHttp", "url": "http://127.0.0.1:9/mcp"}', "--no-connect"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["mcpServers"]["remote"] == {"type": "http", "url": "http://127.0.0.1:9/mcp"}
    for bad in ("has space", "a__b", ""):
        refused = run(path, "add-json", bad, '{"command": "x"}')
        assert refused.returncode == 2, bad
        assert "name" in refused.stderr
    broken = run(path, "add-json", "x", '{"command": 1}')
    assert broken.returncode == 2 and "command" in broken.stderr


def test_a_malformed_config_is_refused_with_its_line_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    text = '{\n  "mcpServers": {\n    "a": {"command": "x" "args": []}\n  }\n}\n'
    path.write_text(text)
    for args in (["list"], ["add", "b", "--", "y"], ["disable", "a"]):
        done = run(path, *args)
        assert done.returncode == 2
        assert f"{path}:3:" in done.stderr
    assert path.read_text() == text


def test_get_masks_literal_secrets_but_shows_variable_references(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, {"basic": {**BASIC, "env": {"API_TOKEN": "sk-live-1234567890", "MODE": "fast", "KEY": "${KEY}"}}})
    done = run(path, "get", "basic", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert "sk-live-1234567890" not in done.stdout
    assert data["config"]["env"] == {"API_TOKEN": "sk-…****", "MODE": "****", "KEY": "${KEY}"}  # any name
    assert data["status"]["state"] == "failed"  # ${KEY} is unset: that server alone fails, and says why
    assert "KEY is not set" in data["status"]["error"]
    assert "echo" not in data["tools"]


def test_test_connects_lists_and_disconnects_without_saving(config: Path) -> None:
    before = config.read_text()
    ok = run(config, "test", "basic", "--json")
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["ok"] is True and "echo" in report["tools"]
    bad = run(config, "test", "broken")
    assert bad.returncode == 1 and "not found on PATH" in bad.stdout
    assert config.read_text() == before


def test_logs_show_what_a_stdio_server_wrote_to_stderr(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    script = "import sys; sys.stderr.write('starting failed: no credentials\\n'); sys.exit(3)"
    write(path, {"noisy": {"command": sys.executable, "args": ["-c", script]}})
    listed = run(path, "list")
    assert "no credentials" in listed.stdout  # the failure says what the server said
    logs = run(path, "logs", "noisy")
    assert logs.returncode == 0
    assert "mcpdeck starting noisy" in logs.stdout
    assert "starting failed: no credentials" in logs.stdout


def test_import_brings_servers_from_another_hosts_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    cursor = tmp_path / "cursor.json"
    cursor.write_text(
        json.dumps({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg"], "env": {"T": "${env:T}"}}}})
    )
    dry = run(path, "import", "cursor", str(cursor), "--dry-run")
    assert dry.returncode == 0 and "would be imported" in dry.stdout
    assert not path.exists()
    done = run(path, "import", "cursor", str(cursor))
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["mcpServers"]["fs"] == {
        "command": "npx",
        "args": ["-y", "pkg"],
        "env": {"T": "${T}"},
    }
    again = run(path, "import", "cursor", str(cursor))
    assert "already in" in again.stdout


def test_config_path_comes_from_the_environment_when_not_given(tmp_path: Path) -> None:
    path = tmp_path / "from-env.json"
    write(path, {"basic": BASIC})
    environ = {
        **os.environ,
        "MCPDECK_CONFIG": str(path),
        "MCPDECK_LOG_DIR": str(tmp_path / "logs"),
        "MCPDECK_HISTORY": "off",
    }
    done = mcpdeck(["list", "--json"], env=environ, cwd=ROOT)
    data = json.loads(done.stdout)
    assert data["config"] == str(path)
    assert [s["name"] for s in data["servers"]] == ["basic"]


def test_history_lists_the_calls_made_with_their_outcome_and_hides_config_secrets(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, {"basic": {**BASIC, "env": {"API_TOKEN": "sk-live-1234567890"}}})
    assert run(path, "call", "mcp__basic__echo", "--args", '{"text": "key sk-live-1234567890"}').returncode == 0
    assert run(path, "call", "mcp__basic__fail", "--args", '{"message": "no"}').returncode == 1
    listed = run(path, "history", "--json")
    assert listed.returncode == 0, listed.stderr
    calls = json.loads(listed.stdout)["toolCalls"]
    assert [(c["name"], c["status"]) for c in calls] == [("mcp__basic__fail", "tool-error"), ("mcp__basic__echo", "ok")]
    assert calls[1]["arguments"] == {"text": "key ****"}
    assert "sk-live-1234567890" not in listed.stdout
    table = run(path, "history", "--server", "basic", "-n", "1")
    assert "mcp__basic__fail" in table.stdout and "mcp__basic__echo" not in table.stdout
    off = run(path, "history", env={"MCPDECK_HISTORY": "off"})
    assert "History is off" in off.stdout
