"""The CLI and what crosses the wire: stray stdout lines, logs of servers that never started."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cli.inprocess import run, write
from tests.helpers import ROOT


def test_a_server_that_prints_stray_lines_costs_one_friendly_line_not_a_validation_dump(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    hostile = {"command": sys.executable, "args": ["-m", "tests.servers.hostile", "--banner", "2"], "cwd": str(ROOT)}
    write(path, {"chatty": hostile})
    called = run(path, "call", "mcp__chatty__stray", "--args", '{"text": "DEBUG x=1"}')
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "ok"
    stray = [line for line in called.stderr.splitlines() if "not an MCP message" in line]
    assert len(stray) == 1, called.stderr
    assert "ValidationError" not in called.stderr and "validation error" not in called.stderr
    assert "Traceback" not in called.stderr
    logs = run(path, "logs", "chatty")
    assert "Welcome to the hostile server, line 2" in logs.stdout and "DEBUG x=1" in logs.stdout


def test_logs_say_why_a_server_whose_command_is_missing_never_started(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, {"broken": {"command": "mcpdeck-test-no-such-command"}})
    run(path, "list")
    logs = run(path, "logs", "broken")
    assert logs.returncode == 0, logs.stderr
    assert "failed: command 'mcpdeck-test-no-such-command' was not found on PATH" in logs.stdout
