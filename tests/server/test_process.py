"""``mcpdeck serve`` as a user runs it: a real process with a real stdio server child, stopped by a signal."""

from __future__ import annotations

import json
import signal
import socket
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream

from tests.helpers import ROOT, WAIT, descendants, stdio_server, wait_gone
from tests.support.serve_process import environment, rest_of_output, serving, wait_connected

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_it_cleanly_with_no_child_left(tmp_path: Path, signum: signal.Signals) -> None:
    # Started directly: the server must be a child of serve's, and gone with it.
    async with serving(tmp_path, {"basic": stdio_server("basic", direct=True)}) as run:
        printed = "".join(run.output)
        assert f"console: {run.state['url']}/#code=" in printed  # a one-time login code, not the token
        assert run.state["token"] not in printed
        assert run.state["url"].startswith("http://127.0.0.1:")
        async with run.client() as client:
            status = await wait_connected(client, "basic")  # it listens before servers are up
            result = await client.post("/api/tools/mcp__basic__add/call", json={"arguments": {"a": 1, "b": 2}})
            assert result.json()["content"][0]["text"] == "3"
        children = descendants(run.process.pid)
        assert status["pid"] in children
        run.process.send_signal(signum)
        with anyio.fail_after(WAIT):
            rest = await rest_of_output(run.process)
            code = await run.process.wait()
        assert code == 0
        assert "Stopped." in rest
        assert await wait_gone(children) == set()
        assert list((tmp_path / "state").glob("*.json")) == []


async def test_a_signal_sent_as_soon_as_it_says_ready_stops_it_cleanly(tmp_path: Path) -> None:
    # A script that starts serve, waits for its URL and stops it at once: the signal must not find the
    # process without its handler (the default action would leave the state file and the servers behind).
    async with serving(tmp_path, {"basic": stdio_server("basic", direct=True)}) as run:
        run.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            rest = await rest_of_output(run.process)
            code = await run.process.wait()
        assert code == 0, (tmp_path / "stderr.txt").read_text()
        assert "Stopped." in rest
        assert list((tmp_path / "state").glob("*.json")) == []


async def test_edits_to_the_config_file_reach_the_running_process(tmp_path: Path) -> None:
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as run, run.client() as client:
        first = await wait_connected(client, "basic")
        run.config.write_text(
            json.dumps({"mcpServers": {"basic": stdio_server("basic"), "more": stdio_server("basic")}})
        )
        more = await wait_connected(client, "more")
        assert more["toolCount"] == 13
        assert (await client.get("/api/servers/basic")).json()["status"]["pid"] == first["pid"]
        with anyio.fail_after(WAIT):
            async with client.stream("GET", "/api/events") as events:
                lines = events.aiter_lines()
                assert await anext(lines) == ": connected"
                run.config.write_text("{ not json")
                while await anext(lines) != "event: ConfigReloadFailed":
                    pass
                failed = json.loads((await anext(lines))[6:])
        assert "not valid JSON" in failed["error"]
        problems = (await client.get("/api/host")).json()["problems"]
        assert "not valid JSON" in problems[""]
        assert (await client.get("/api/servers/more")).json()["status"]["state"] == "connected"
        run.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            assert await run.process.wait() == 0


def _run_cli(folder: Path, *args: str) -> tuple[int, str, str]:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(folder / "mcp.json"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(folder),
        cwd=ROOT,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


async def test_a_second_serve_for_the_same_config_is_refused(tmp_path: Path) -> None:
    async with serving(tmp_path, {}) as run:
        code, _, err = await anyio.to_thread.run_sync(_run_cli, tmp_path, "serve", "--port", "0")
        assert code == 2
        said = " ".join(err.split())
        assert f"mcpdeck serve already runs for {run.config.resolve()} as replica {run.state['replica']!r}" in said
        assert f"at {run.state['url']} (pid {run.process.pid})" in said
        run.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            assert await run.process.wait() == 0


async def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text("{}")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, _, err = await anyio.to_thread.run_sync(_run_cli, tmp_path, "serve", "--port", str(port))
    assert code == 2
    assert f"port {port} on 127.0.0.1 is in use; pick another with --port (or --port 0 for any)" in err
    assert list((tmp_path / "state").glob("*.json")) == []


async def test_listening_beyond_loopback_needs_host_and_warns(tmp_path: Path) -> None:
    async with serving(tmp_path, {}, "--host", "127.0.0.2") as run:
        assert run.state["url"].startswith("http://127.0.0.2:")
        assert run.state["host"] == "127.0.0.2"
        warning = (tmp_path / "stderr.txt").read_text()
        assert "warning: listening on 127.0.0.2, beyond this machine" in warning
        async with run.client() as client:
            assert (await client.get("/api/host")).status_code == 200
        run.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            assert await run.process.wait() == 0


def test_the_cli_does_not_import_fastapi_unless_it_serves() -> None:
    import subprocess

    code = "import sys, mcpdeck.cli; print('fastapi' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


async def test_ui_without_a_browser_prints_the_url_and_serves(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{}")
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "ui", "--no-browser", "--port", "0"]
    async with await anyio.open_process(command, env=environment(tmp_path), cwd=ROOT) as process:
        assert process.stdout is not None
        printed = ""
        with anyio.fail_after(WAIT):
            async for chunk in TextReceiveStream(process.stdout):
                printed += chunk
                if "Press Ctrl-C" in printed:
                    break
        link = printed.split("console: ")[1].split()[0]
        base, _, code = link.partition("/#code=")
        async with httpx2.AsyncClient(timeout=WAIT) as client:
            page = await client.get(link)  # the page; the code is in the fragment, which is never sent
            assert page.status_code == 200
            assert "mcpdeck" in page.text
            signed_in = await client.post(f"{base}/api/session", json={"code": code}, headers={"origin": base})
            assert signed_in.status_code == 200
            session = signed_in.json()["token"]
            servers = await client.get(f"{base}/api/servers", headers={"authorization": f"Bearer {session}"})
            assert servers.status_code == 200
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(WAIT):
            assert await process.wait() == 0


async def test_the_gateway_answers_at_mcp_on_the_serve_port_behind_the_same_token(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with serving(tmp_path, {"basic": stdio_server("basic")}) as served, served.client() as http:
        await wait_connected(http, "basic")
        async with httpx2.AsyncClient(base_url=served.state["url"], timeout=WAIT) as anonymous:
            refused = await anonymous.post("/mcp", json={})
        assert refused.status_code == 401
        token = {"Authorization": f"Bearer {served.state['token']}"}
        async with httpx2.AsyncClient(headers=token, timeout=WAIT) as authorized:
            transport = streamable_http_client(f"{served.state['url']}/mcp", http_client=authorized)
            with anyio.fail_after(WAIT):
                async with Client(transport) as mcp:
                    names = {tool.name for tool in (await mcp.list_tools()).tools}
                    result = await mcp.call_tool("mcp__basic__add", {"a": 19, "b": 23})
    assert "mcp__basic__echo" in names
    # No rule covers it: the calling client, which asks its own user, approves it (the gate's default there).
    assert not result.is_error and result.structured_content == {"result": 42}
