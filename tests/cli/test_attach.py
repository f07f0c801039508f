"""The CLI attached to a running ``mcpdeck serve``: real ``serve`` processes, real CLI processes for the
calls that matter, ``CliRunner`` for the rest. ``--json`` output is the same attached or not."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from mcpdeck.cli import cli
from mcpdeck.server._state import ServeState, state_path, write_state
from tests.cli.inprocess import invoker
from tests.helpers import ROOT, WAIT, stdio_server
from tests.support.serve_process import environment, serving, wait_connected
from tests.support.stable_json import stable

pytestmark = pytest.mark.anyio


def run_cli(folder: Path, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(folder / "mcp.json"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment(folder),
        cwd=ROOT,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


async def cli_json(folder: Path, *args: str) -> Any:
    code, out, err = await anyio.to_thread.run_sync(lambda: run_cli(folder, *args))
    assert code == 0, err
    return json.loads(out)


async def test_a_real_cli_process_reaches_the_server_serve_runs(tmp_path: Path) -> None:
    # Started directly: the pid serve reports for it must be the server's own.
    async with serving(tmp_path, {"basic": stdio_server("basic", direct=True)}) as run, run.client() as client:
        served = await wait_connected(client, "basic")
        # Attached, every call reaches the same server process: the one serve runs.
        first = await cli_json(tmp_path, "call", "mcp__basic__pid", "--json")
        second = await cli_json(tmp_path, "call", "mcp__basic__add", "--args", '{"a": 2, "b": 40}', "--json")
        assert first["content"] == [{"type": "text", "text": str(served["pid"])}]
        alone = await cli_json(
            tmp_path, "--no-attach", "call", "mcp__basic__add", "--args", '{"a": 2, "b": 40}', "--json"
        )
        assert stable(second) == stable(alone)
        status = (await client.get("/api/servers/basic")).json()["status"]
        assert status["calls"] == 2  # the two attached calls went through serve; the one made alone did not


JSON_BOTH_WAYS = (
    ["call", "mcp__basic__add", "--args", '{"a": 2, "b": 40}', "--json"],
    ["call", "mcp__basic__structured", "--json"],
    ["call", "mcp__basic__image", "--json"],
    ["tools", "--json"],
    ["tools", "--server", "basic", "--json"],
    ["list", "--json"],
    ["get", "basic", "--json"],
    ["test", "basic", "--json"],
    ["resources", "--json"],
    ["prompts", "--json"],
    ["prompts", "--server", "features", "--json"],
)
"""Each attachable command with ``--json``, run both ways (``chat --json`` needs a model: it is compared in
``test_attach_chat.py::test_json_output_is_the_same_and_results_come_whole``)."""


def test_every_attachable_command_with_json_output_is_compared_both_ways() -> None:
    from mcpdeck.cli._switch import ATTACHABLE

    with_json = {name for name in ATTACHABLE if any(param.name == "as_json" for param in cli.commands[name].params)}
    assert {command[0] for command in JSON_BOTH_WAYS} | {"chat"} == with_json
    assert {"list", "get", "call", "tools", "resources", "prompts", "chat", "logs", "add", "remove"} <= ATTACHABLE


async def test_json_output_is_the_same_attached_or_not(tmp_path: Path) -> None:
    servers = {"basic": stdio_server("basic"), "features": stdio_server("features")}
    async with serving(tmp_path, servers) as run, run.client() as client:
        await wait_connected(client, "basic")
        await wait_connected(client, "features")
        invoke = invoker(tmp_path)
        for command in JSON_BOTH_WAYS:
            attached = await invoke(*command)
            alone = await invoke("--no-attach", *command)
            assert (attached.exit_code, alone.exit_code) == (0, 0), command
            assert stable(json.loads(attached.stdout)) == stable(json.loads(alone.stdout)), command
        status = (await client.get("/api/servers/basic")).json()["status"]
        assert status["calls"] == 3  # the attached calls went through serve
        # A result's text is rendered by one function, whichever backend answered.
        image = await invoke("call", "mcp__basic__image")
        assert image.stdout == (await invoke("--no-attach", "call", "mcp__basic__image")).stdout
        assert image.stdout.startswith("[image: image/png, ") and image.stdout.endswith(" bytes]\n")


async def test_other_commands_go_through_serve_in_process(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        invoke = invoker(tmp_path)
        config = str(run.config)
        human = await invoke("list")
        assert human.exit_code == 0 and "[via mcpdeck serve]" in human.output and "basic" in human.output
        assert "[via mcpdeck serve]" not in (await invoke("--no-attach", "list")).output
        call = await invoke("call", "mcp__basic__echo", "--args", '{"text": "over the API"}')
        assert (call.exit_code, call.output.strip()) == (0, "over the API")
        failing = await invoke("call", "mcp__basic__fail", "--args", '{"message": "nope"}')
        assert failing.exit_code == 1 and "nope" in failing.output
        unknown = await invoke("call", "mcp__basic__nosuch")
        assert unknown.exit_code == 1 and "mcp__basic__nosuch" in unknown.output
        logs = await invoke("logs", "basic", "-n", "5")
        assert logs.exit_code == 0 and "tool fail: nope" in logs.stdout
        assert logs.stdout == (await invoke("--no-attach", "logs", "basic", "-n", "5")).stdout
        disabled = await invoke("disable", "basic")
        assert disabled.output.strip() == "Disabled 'basic'."
        assert (await client.get("/api/servers/basic")).json()["status"]["state"] == "disabled"
        assert json.loads(run.config.read_text())["mcpServers"]["basic"]["disabled"] is True
        assert (await invoke("enable", "basic")).output.strip() == "Enabled 'basic'."
        await wait_connected(client, "basic")
        missing = await invoke("get", "nope")
        assert missing.exit_code == 2 and "no server named 'nope'" in missing.output
        removed = await invoke("remove", "basic")
        assert removed.output.strip() == f"Removed 'basic' from {config}."
        assert json.loads(run.config.read_text())["mcpServers"] == {}
        assert (await client.get("/api/servers/basic")).status_code == 404


def test_a_stale_state_file_is_removed_and_the_command_runs_alone(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    env = environment(tmp_path)
    with socket.socket() as closed:  # a port nobody listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        port: int = closed.getsockname()[1]
        os.environ["MCPDECK_STATE_DIR"] = env["MCPDECK_STATE_DIR"]
        try:
            state = ServeState(
                pid=os.getpid(),  # alive, but it does not listen on that port
                url=f"http://127.0.0.1:{port}",
                host="127.0.0.1",
                port=port,
                token="t",
                config=str(config.resolve()),
                started_at="2026-01-01T00:00:00+00:00",
                version="0",
            )
            path = write_state(state)
            assert path == state_path(config)
            result = CliRunner().invoke(cli, ["--config", str(config), "list", "--json"], env=env)
            assert result.exit_code == 0, result.output
            assert json.loads(result.output)["servers"] == []
            assert not path.exists()
            dead = dataclasses.replace(state, pid=2**22 + 12345)  # no such process
            write_state(dead)
            assert CliRunner().invoke(cli, ["--config", str(config), "list", "--json"], env=env).exit_code == 0
            assert not path.exists()
        finally:
            del os.environ["MCPDECK_STATE_DIR"]


async def test_an_attached_call_imports_no_sdk_no_pydantic_and_no_tls(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        command = [sys.executable, "-X", "importtime", "-m", "mcpdeck.cli", "--config", str(run.config)]
        command += ["call", "mcp__basic__echo", "--args", '{"text": "light"}']
        with anyio.fail_after(WAIT * 4):
            done = await anyio.run_process(command, env=environment(tmp_path), cwd=ROOT, check=False)
        assert (done.returncode, done.stdout) == (0, b"light\n"), done.stderr
        imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines() if "|" in line}
        assert "mcpdeck.cli._loopback" in imported
        heavy = {"mcp", "mcp_types", "pydantic", "httpx2", "anyio", "ssl", "http.client", "email", "encodings.idna"}
        assert imported.isdisjoint(heavy), imported & heavy
        assert (await client.get("/api/servers/basic")).json()["status"]["calls"] == 1
