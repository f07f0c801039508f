"""Commands over every server show each server's part as it settles (a hanging one holds back only
itself); a command about one tool starts only the server its name names, and says so when it cannot
tell. Real processes where the timing is the point; Click's runner in-process for the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpdeck.catalog import servers_named_by, tool_name
from mcpdeck.cli import cli
from tests.helpers import ROOT, cli_environment, stdio_server

HANG = {**stdio_server("hang"), "startupTimeout": 60}
BROKEN = {"command": "/no/such/binary"}
LONG = "a-server-with-a-rather-long-name-for-the-test-xy"


def write(folder: Path, servers: dict[str, Any]) -> Path:
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


@pytest.mark.parametrize(
    ("command", "server", "row"),
    [
        ("tools", "basic", "mcp__basic__echo "),
        ("resources", "features", "features  features://info"),
        ("prompts", "features", "mcp__features__"),
    ],
)
def test_a_hanging_server_holds_back_only_its_own_part(tmp_path: Path, command: str, server: str, row: str) -> None:
    config = write(tmp_path, {"slow": HANG, server: stdio_server(server)})
    with subprocess.Popen(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(tmp_path),
        cwd=ROOT,
    ) as process:
        try:
            assert process.stdout is not None
            lines: list[str] = []
            for line in process.stdout:  # bounded: the hanging server fails after 60 s, then it ends
                lines.append(line)
                if line.startswith(row):
                    break
            assert lines and lines[-1].startswith(row)
            assert process.poll() is None  # the ready server's part is out while slow still starts
            assert process.stderr is not None
            note = process.stderr.readline()  # and it says so (bounded: slow fails after 60 s)
        finally:
            process.kill()
            process.communicate(timeout=60)
    assert note.startswith("(still starting: ") and "slow" in note


@pytest.mark.parametrize("command", ["tools", "resources", "prompts"])
def test_json_waits_for_every_server_and_stays_one_document(tmp_path: Path, command: str) -> None:
    config = write(tmp_path, {"features": stdio_server("features"), "broken": BROKEN})
    done = CliRunner().invoke(cli, ["--config", str(config), command, "--json"], env=cli_environment(tmp_path))
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)  # one document, whatever order the servers settled in
    items = data["resources"] if command == "resources" else data
    assert items and {item["server"] for item in items} == {"features"}
    assert "warning: broken is not connected: command '/no/such/binary' does not exist" in done.stderr


def test_human_output_of_a_server_that_settles_late_follows_under_its_own_header(tmp_path: Path) -> None:
    config = write(tmp_path, {"basic": stdio_server("basic"), "broken": BROKEN})
    done = CliRunner().invoke(cli, ["--config", str(config), "tools"], env=cli_environment(tmp_path))
    assert done.exit_code == 0
    assert done.stdout.startswith("TOOL ") and "mcp__basic__add " in done.stdout
    assert "warning: broken is not connected" in done.stderr
    empty = CliRunner().invoke(cli, ["--config", str(config), "prompts"], env=cli_environment(tmp_path))
    assert empty.stdout == "No prompts.\n"


def test_a_bare_tool_name_starts_every_server_and_says_so(tmp_path: Path) -> None:
    config = write(tmp_path, {"basic": stdio_server("basic"), "broken": BROKEN})
    runner = CliRunner()
    env = cli_environment(tmp_path)
    named = runner.invoke(
        cli, ["--config", str(config), "call", "mcp__basic__echo", "--args", '{"text": "hi"}'], env=env
    )
    assert (named.exit_code, named.stdout, named.stderr) == (0, "hi\n", "")
    assert not (tmp_path / "logs" / "broken.log").exists()  # only basic was started
    done = runner.invoke(cli, ["--config", str(config), "call", "echo", "--args", '{"text": "hi"}'], env=env)
    assert done.exit_code == 1
    assert (
        "note: 'echo' does not say its server (tool names look like mcp__SERVER__TOOL); "
        "starting all 2 servers to look for it"
    ) in done.stderr
    assert "Error: no tool named 'echo'; did you mean mcp__basic__echo" in done.stderr
    assert (tmp_path / "logs" / "broken.log").exists()  # as it said, every server was started
    other = runner.invoke(cli, ["--config", str(config), "prompt", "mcp__nope__x"], env=env)
    assert f"note: 'mcp__nope__x' names no server of {config}; starting all 2 servers" in other.stderr


def test_a_shortened_server_part_starts_only_that_server(tmp_path: Path) -> None:
    name, _ = tool_name(LONG, "tool.with spaces/and-dots")
    assert not name.startswith(f"mcp__{LONG}__")  # the server part was cut
    config = write(tmp_path, {LONG: stdio_server("basic"), "slow": HANG})
    done = CliRunner().invoke(cli, ["--config", str(config), "call", name], env=cli_environment(tmp_path))
    assert (done.exit_code, done.stdout) == (0, "odd tool called\n"), done.output
    assert "note:" not in done.stderr
    assert not (tmp_path / "logs" / "slow.log").exists()  # the hanging server was never started


def test_the_servers_a_public_name_can_belong_to() -> None:
    servers = ["fs", "fs-2", LONG, LONG[:-1] + "z"]
    assert servers_named_by("mcp__fs__read", servers) == ["fs"]
    assert servers_named_by("mcp__fs-2__read", servers) == ["fs-2"]
    shortened, _ = tool_name(LONG, "x" * 40)
    assert servers_named_by(shortened, servers) == [LONG]  # the hash tells two servers of one start apart
    assert servers_named_by("echo", servers) == []
    assert servers_named_by("mcp__nope__echo", servers) == []
