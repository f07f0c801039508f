"""``resources``, ``prompts``, ``add``, ``add-json``, ``logs`` (``--follow`` too) and ``call``'s progress
through a running ``mcpdeck serve``: each run both ways against the same real servers, in-process where a
process shows nothing more, real processes for a terminal and for Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli.inprocess import invoker
from tests.cli.terminal import run_in_terminal
from tests.helpers import ROOT, WAIT, stdio_server
from tests.support.serve_process import environment, serving, wait_connected
from tests.support.stable_json import stable

pytestmark = pytest.mark.anyio

SERVERS = {"basic": stdio_server("basic"), "features": stdio_server("features")}


async def test_resources_and_prompts_json_is_the_same_attached_or_not(tmp_path: Path) -> None:
    async with serving(tmp_path, SERVERS) as run, run.client() as client:
        await wait_connected(client, "basic")
        await wait_connected(client, "features")
        invoke = invoker(tmp_path)
        for command in (["resources", "--json"], ["prompts", "--json"], ["prompts", "--server", "basic", "--json"]):
            attached = await invoke(*command)
            alone = await invoke("--no-attach", *command)
            assert (attached.exit_code, alone.exit_code) == (0, 0), command
            assert stable(json.loads(attached.stdout)) == stable(json.loads(alone.stdout)), command
            assert json.loads(attached.stdout) or command[-2] == "basic", command  # features offers both
        unknown = await invoke("prompts", "--server", "nope")
        assert unknown.exit_code == 2 and "no server named 'nope'" in unknown.stderr


async def test_resources_prompts_and_tools_print_the_same_attached_or_not(tmp_path: Path) -> None:
    async with serving(tmp_path, SERVERS) as run, run.client() as client:
        await wait_connected(client, "basic")
        await wait_connected(client, "features")
        invoke = invoker(tmp_path)
        for command in (["resources"], ["prompts", "--server", "features"], ["tools", "--server", "basic", "-v"]):
            attached = await invoke(*command)
            alone = await invoke("--no-attach", *command)
            assert attached.stdout == alone.stdout, command
            assert attached.stdout.startswith(("SERVER", "PROMPT", "mcp__basic__")), command


async def test_add_through_serve_connects_it_there_and_saves_only_what_works(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        invoke = invoker(tmp_path)
        config = str(run.config)
        basic = stdio_server("basic")
        added = await invoke("add", "second", "--", basic["command"], *basic["args"])
        assert added.exit_code == 0, added.output
        assert added.stdout == f"● connected: 13 tools. Saved 'second' to {config}.\n"
        # serve runs it at once (the same process that saved it), and the file has it.
        status = (await client.get("/api/servers/second")).json()["status"]
        assert status["state"] == "connected" and status["toolCount"] == 13
        assert run.config.exists() and "second" in json.loads(run.config.read_text())["mcpServers"]
        again = await invoke("add", "second", "--", basic["command"], *basic["args"])
        assert again.exit_code == 2
        assert f"Error: server 'second' already exists in {config}; use --force to replace it" in again.stderr
        broken = await invoke("add-json", "broken", '{"command": "/no/such/binary"}')
        alone = await invoke("--no-attach", "add-json", "broken", '{"command": "/no/such/binary"}')
        assert (broken.exit_code, alone.exit_code) == (1, 1)
        assert broken.stderr == alone.stderr
        assert "'broken' did not connect, so it was not saved: command '/no/such/binary' does not exist" in (
            broken.stderr
        )
        assert "\nFix it and run the command again" in broken.stderr  # the line break is kept
        assert "broken" not in json.loads(run.config.read_text())["mcpServers"]
        assert (await client.get("/api/servers/broken")).status_code == 404
        kept = await invoke("add-json", "kept", '{"command": "/no/such/binary"}', "--save-anyway")
        assert kept.exit_code == 1 and "and was saved anyway (--save-anyway)" in kept.stderr
        assert (await client.get("/api/servers/kept")).json()["status"]["state"] == "failed"
        bad = await invoke("add", "bad name", "--", "x")
        assert bad.exit_code == 2 and "server name 'bad name'" in bad.stderr


async def test_logs_through_serve_and_alone_print_the_same(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        await client.post("/api/tools/mcp__basic__fail/call", json={"arguments": {"message": "noted"}})
        invoke = invoker(tmp_path)
        for lines in ("3", "0"):
            attached = await invoke("logs", "basic", "-n", lines)
            alone = await invoke("--no-attach", "logs", "basic", "-n", lines)
            assert attached.exit_code == alone.exit_code == 0
            assert attached.stdout == alone.stdout and "tool fail: noted" in attached.stdout
        missing = await invoke("logs", "nope")
        assert missing.exit_code == 2 and "no server named 'nope'" in missing.stderr


def follow(folder: Path, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(folder / "mcp.json"), *options, "logs", "basic", "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(folder),
        cwd=ROOT,
    )


@pytest.mark.parametrize("options", [(), ("--no-attach",)], ids=["attached", "alone"])
async def test_logs_follow_prints_each_new_line_until_ctrl_c(tmp_path: Path, options: tuple[str, ...]) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        with follow(tmp_path, *options) as process:  # closes its pipes
            try:
                assert process.stdout is not None and process.stderr is not None
                stdout = process.stdout
                with anyio.fail_after(WAIT):
                    # The end of the log is out once a line of it is: then a new one is written.
                    # (abandoned when the wait is over: the finally below kills the follower and ends the read)
                    first = await anyio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
                    assert first
                    arguments = {"arguments": {"message": "followed"}}
                    await client.post("/api/tools/mcp__basic__fail/call", json=arguments)
                    while "tool fail: followed" not in (
                        line := await anyio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
                    ):
                        assert line, "the follower ended"
                process.send_signal(signal.SIGINT)
                code = await anyio.to_thread.run_sync(lambda: process.wait(WAIT))
                errors = process.stderr.read()
            finally:
                process.kill()
                process.wait()
    assert code == 0, errors
    assert errors.startswith("==> ")


def progress_run(folder: Path, *options: str) -> str:
    arguments = json.dumps({"steps": 3, "delay": 0.3})
    env: dict[str, Any] = {key: environment(folder)[key] for key in ("MCPDECK_STATE_DIR", "MCPDECK_HISTORY")}
    done = run_in_terminal(
        folder / "mcp.json", *options, "call", "mcp__basic__slow_progress", "--args", arguments, env=env
    )
    assert done.returncode == 0, done.text
    return done.text


async def test_an_attached_call_draws_its_progress_at_a_terminal_as_one_made_alone(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        attached = await anyio.to_thread.run_sync(progress_run, tmp_path)
        alone = await anyio.to_thread.run_sync(progress_run, tmp_path, "--no-attach")
        for text in (attached, alone):
            assert "mcp__basic__slow_progress [##########" in text and " 33.3%" in text and "100.0%" in text
            assert text.rstrip().endswith("done after 3 steps")
        status = (await client.get("/api/servers/basic")).json()["status"]
        assert status["calls"] == 1  # the attached one went through serve


async def test_add_and_test_through_serve_honour_the_global_startup_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        await wait_connected(client, "basic")
        invoke = invoker(tmp_path)
        hang = json.dumps(stdio_server("hang"))
        with anyio.fail_after(WAIT):  # serve's own 30 s would not be
            attached = await invoke("--startup-timeout", "0.5", "add-json", "stuck", hang)
            alone = await invoke("--no-attach", "--startup-timeout", "0.5", "add-json", "stuck", hang)
        assert (attached.exit_code, alone.exit_code) == (1, 1)
        assert "'stuck' did not connect, so it was not saved: did not finish" in attached.stderr
        assert "within 0.5 s" in attached.stderr and attached.stderr == alone.stderr
        assert "stuck" not in json.loads(run.config.read_text())["mcpServers"]
        # test NAME runs here with the global options (serve tests a saved server as it runs it), and says so.
        tested = await invoke("--startup-timeout", "5", "test", "basic", "--json")
        assert tested.exit_code == 0 and json.loads(tested.stdout)["state"] == "connected"
        assert "with --startup-timeout or --root the test runs here" in tested.stderr
        assert "the test runs here" not in (await invoke("test", "basic")).stderr
        # With --root, a call runs here (serve's servers have the roots serve offers), and says so.
        rooted = await invoke("--root", str(tmp_path), "call", "mcp__basic__echo", "--args", '{"text": "here"}')
        assert (rooted.exit_code, rooted.stdout) == (0, "here\n")
        assert "so with --root this runs here" in rooted.stderr
        assert (await client.get("/api/servers/basic")).json()["status"]["calls"] == 0


def test_add_through_serve_tries_the_entry_with_the_global_options_and_saves_it_as_given(tmp_path: Path) -> None:
    from mcpdeck.cli._serve_backend import as_tried

    entry = {"command": "x"}
    tried = as_tried(entry, 2.5, ("notes", str(tmp_path)))
    own = as_tried({"command": "x", "roots": ["/own"]}, 2.5, ("notes", str(tmp_path)))
    roots = [str(Path("notes").resolve()), str(tmp_path.resolve())]
    assert tried == {"command": "x", "startupTimeout": 2.5, "roots": roots}
    assert own == {"command": "x", "roots": ["/own"], "startupTimeout": 2.5}
    assert entry == {"command": "x"}  # what is saved is not changed
