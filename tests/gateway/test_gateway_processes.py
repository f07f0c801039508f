"""The gateway commands as real processes: started as a client starts them, stopped as a client or a person
stops them (stdin closed, Ctrl-C, SIGTERM), with what they print.

Each test starts ``python -m mcpdeck.cli`` with pipes, with the history on (as a user has it), and
checks what a person or a client sees: the exit, the exit code, the processes left behind, the text.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcpdeck.history import History
from mcpdeck.server import read_state
from tests.gateway.support import Seen, client
from tests.helpers import (
    ROOT,
    WAIT,
    cli_environment,
    descendants,
    kill,
    late_server,
    release,
    stdio_server,
    wait_gone,
)

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "claude-ai", "version": "0.1.0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _config(folder: Path, **extra: Any) -> Path:
    """A config with the basic server (every call allowed), plus ``extra`` top-level keys."""
    path = folder / "mcp.json"
    # Started directly (not as a fork of the fork server): these tests look for the server below the process.
    basic = stdio_server("basic", direct=True)
    doc = {"mcpServers": {"basic": basic}, "permissions": {"allow": ["mcp__*"]}, **extra}
    path.write_text(json.dumps(doc))
    return path


def _lingering_config(folder: Path) -> Path:
    """A server whose process outlives its stdin: a shell that runs the basic server, then sleeps.

    A host that stops in order stops it (as ``mcpdeck serve`` does); one that merely dies leaves it behind.
    """
    script = f"{sys.executable} -m tests.servers.basic; exec sleep 60"
    path = folder / "mcp.json"
    doc = {
        "mcpServers": {"linger": {"command": "sh", "args": ["-c", script], "cwd": str(ROOT)}},
        "permissions": {"allow": ["mcp__*"]},
    }
    path.write_text(json.dumps(doc))
    return path


@asynccontextmanager
async def _started(folder: Path, *args: str, **env: str) -> AsyncGenerator[Process]:
    """``mcpdeck <args>`` with pipes, history on; whatever is left of it and below it is killed at the end."""
    command = [sys.executable, "-m", "mcpdeck.cli", *args]
    process = await anyio.open_process(command, cwd=folder, env=cli_environment(folder, **env))
    below: set[int] = set()
    try:
        yield process
    finally:
        below |= descendants(process.pid)
        kill({process.pid, *below})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


async def _initialize_over_stdio(process: Process) -> dict[str, Any]:
    """Send ``initialize`` (and ``initialized``) as Claude Desktop does; the answer."""
    assert process.stdin is not None and process.stdout is not None
    await process.stdin.send(json.dumps(INITIALIZE).encode() + b"\n")
    lines = BufferedByteReceiveStream(process.stdout)
    answer = json.loads(await lines.receive_until(b"\n", 1 << 20))
    await process.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    return answer


async def _answer(lines: BufferedByteReceiveStream, request_id: int) -> dict[str, Any]:
    """The answer to request ``request_id`` among what a stdio gateway writes (notifications may come first:
    ``list_changed`` as servers come up)."""
    while True:
        message = json.loads(await lines.receive_until(b"\n", 1 << 20))
        if message.get("id") == request_id:
            return message


def _lines(process: Process) -> BufferedByteReceiveStream:
    assert process.stderr is not None
    return BufferedByteReceiveStream(process.stderr)


async def _stderr_line(lines: BufferedByteReceiveStream, pattern: str, seen: list[str] | None = None) -> re.Match[str]:
    """The first line of ``lines`` (a process's stderr) that matches ``pattern`` (lines read go to ``seen``)."""
    while True:
        line = (await lines.receive_until(b"\n", 1 << 16)).decode()
        if seen is not None:
            seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found


async def _rest(stream: Any) -> str:
    """Everything left on a pipe of an exited process."""
    text = b""
    async for chunk in stream:
        text += chunk
    return text.decode()


@pytest.mark.parametrize("command", ["serve", "gateway"])
async def test_the_printed_client_entry_names_the_config_by_an_absolute_path(tmp_path: Path, command: str) -> None:
    """Claude Desktop starts the entry in its own folder: a relative ``--config`` there names no file."""
    _config(tmp_path)
    async with _started(tmp_path, "--config", "mcp.json", command, "--print-client-config", "claude-desktop") as p:
        with anyio.fail_after(WAIT):
            await p.wait()
        printed = await _rest(p.stdout)
    entry = json.loads(printed)["mcpServers"]["mcpdeck"]
    config = entry["args"][entry["args"].index("--config") + 1]
    assert Path(config).is_absolute(), f"`{command} --print-client-config` printed --config {config!r}"
    assert await anyio.Path(config).resolve() == await anyio.Path(tmp_path / "mcp.json").resolve()


async def test_serve_stdio_exits_by_itself_when_the_client_closes_stdin(tmp_path: Path) -> None:
    """The MCP stdio shutdown: the client closes the server's stdin and waits for it to exit."""
    config = _config(tmp_path)
    async with _started(tmp_path, "--config", str(config), "serve", "--stdio") as process:
        with anyio.fail_after(WAIT):
            answer = await _initialize_over_stdio(process)
        assert answer["result"]["serverInfo"]["name"] == "mcpdeck"
        servers = descendants(process.pid)
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.move_on_after(10):
            await process.wait()
        assert process.returncode == 0, "serve --stdio still ran 10 s after its client closed stdin"
        assert not await wait_gone(servers)


async def test_serve_stdio_stopped_with_sigterm_stops_its_servers_too(tmp_path: Path) -> None:
    """A client that gives up on a gateway sends SIGTERM: the servers it started must not outlive it."""
    config = _lingering_config(tmp_path)
    async with _started(tmp_path, "--config", str(config), "serve", "--stdio") as process:
        with anyio.fail_after(WAIT):
            await _initialize_over_stdio(process)
        servers = descendants(process.pid)
        assert servers, "the server was not started"
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(10):
            await process.wait()
        left = await wait_gone(servers)
        kill(left)
        assert not left, "processes of the gateway's server outlived it after SIGTERM"


async def test_gateway_port_stops_on_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C stops ``gateway --port`` with exit code 130, as every other command."""
    config = _config(tmp_path)
    async with _started(tmp_path, "--config", str(config), "gateway", "--port", "0") as process:
        with anyio.fail_after(WAIT):
            await _stderr_line(_lines(process), r"mcpdeck gateway at http://")
        process.send_signal(signal.SIGINT)
        with anyio.move_on_after(10):
            await process.wait()
        assert process.returncode == 130, "gateway --port still ran 10 s after Ctrl-C"


async def test_gateway_port_with_an_unset_token_variable_says_so_and_exits(tmp_path: Path) -> None:
    config = _config(tmp_path, gateway={"tokens": {"laptop": {"token": "${TRYOUT_NO_SUCH_VARIABLE}"}}})
    async with _started(tmp_path, "--config", str(config), "gateway", "--port", "0") as process:
        with anyio.move_on_after(20):
            await process.wait()
        assert process.returncode == 2, "gateway --port with an unset token variable neither said so nor exited"
        said = await _rest(process.stderr)
    assert "TRYOUT_NO_SUCH_VARIABLE is not set" in said


async def test_gateway_on_every_address_answers_and_warns(tmp_path: Path) -> None:
    """``--host 0.0.0.0`` is how one lets other machines in; a client on this one must still get through,
    and the person is warned, as ``serve --host`` warns."""
    config = _config(tmp_path)
    args = ("--config", str(config), "gateway", "--port", "0", "--host", "0.0.0.0")
    async with _started(tmp_path, *args, MCPDECK_GATEWAY_TOKEN="tryout-token") as process:
        seen: list[str] = []
        stderr = _lines(process)
        with anyio.fail_after(WAIT):
            port = int((await _stderr_line(stderr, r"mcpdeck gateway at http://[^:]+:(\d+)/mcp", seen)).group(1))
        async with httpx2.AsyncClient(headers={**HEADERS, "Authorization": "Bearer tryout-token"}) as http:
            with anyio.fail_after(WAIT):
                answer = await http.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE)
        assert answer.status_code == 200, f"{answer.status_code} {answer.text}"
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            await process.wait()
        seen.append(await _rest(stderr))
        assert "warning" in "".join(seen).lower(), f"nothing warned: {seen}"


async def test_a_client_of_a_profile_hears_that_its_tools_changed_when_the_profile_is_edited(tmp_path: Path) -> None:
    """Claude Desktop and Cursor list tools again only when told: an edited profile must send list_changed."""
    config = _config(tmp_path, profiles={"p": {"servers": ["basic"]}})
    args = ("--config", str(config), "gateway", "--port", "0")
    async with _started(tmp_path, *args, MCPDECK_GATEWAY_TOKEN="tryout-token", MCPDECK_HISTORY="off") as process:
        with anyio.fail_after(WAIT):
            port = int((await _stderr_line(_lines(process), r"mcpdeck gateway at http://[^:]+:(\d+)/mcp")).group(1))
        seen = Seen()
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer tryout-token"}) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp/p", http_client=http)
            with anyio.fail_after(WAIT):
                async with client(transport, seen) as c:
                    changed = "notifications/tools/list_changed"
                    before = {tool.name for tool in (await c.list_tools()).tools}
                    while "mcp__basic__echo" not in before:  # the server is still starting: its tools follow
                        await seen.arrival(changed).wait()
                        seen.arrived.pop(changed)
                        before = {tool.name for tool in (await c.list_tools()).tools}
                    seen.arrived.pop(changed, None)
                    told = len(seen.notifications)
                    doc = json.loads(config.read_text())
                    doc["profiles"]["p"]["tools"] = {"exclude": ["echo"]}
                    config.write_text(json.dumps(doc))
                    with anyio.move_on_after(8):
                        await seen.arrival(changed).wait()
                    after = {tool.name for tool in (await c.list_tools()).tools}
    assert "mcp__basic__echo" in before and "mcp__basic__echo" not in after  # the next list has it
    assert changed in seen.notifications[told:], "the client was not told"


def _serve_url(line: str) -> str | None:
    found = re.search(r"console: (http://[^/]+)/", line)
    return found.group(1) if found else None


@asynccontextmanager
async def _serving(
    folder: Path, config: Path, *args: str, history: bool = False, options: tuple[str, ...] = ()
) -> AsyncGenerator[tuple[Process, str, str]]:
    """``mcpdeck <options> serve --port 0 <args>`` (its history in ``folder`` if ``history``); the process, its base
    URL and its token."""
    env = {} if history else {"MCPDECK_HISTORY": "off"}
    async with _started(folder, "--config", str(config), *options, "serve", "--port", "0", *args, **env) as p:
        assert p.stdout is not None
        lines = BufferedByteReceiveStream(p.stdout)
        with anyio.fail_after(WAIT):
            while (found := _serve_url((await lines.receive_until(b"\n", 1 << 16)).decode())) is None:
                pass
        state = read_state(config)  # the token is in the state file (the console's link has a login code)
        assert state is not None
        yield p, found, state.token


async def test_serve_on_every_address_lets_in_a_client_that_names_the_machine_by_its_address(tmp_path: Path) -> None:
    """``serve --host 0.0.0.0`` warns that other machines get in; a client there names this machine by its IP
    address, and is then told to use 127.0.0.1, which it cannot. An IP address in ``Host`` cannot be a DNS
    rebinding (that needs a name the attacker controls)."""
    config = _config(tmp_path, mcpServers={})
    async with _serving(tmp_path, config, "--host", "0.0.0.0") as (_, url, token):
        port = url.rsplit(":", 1)[1]
        headers = {**HEADERS, "Authorization": f"Bearer {token}", "Host": f"192.0.2.2:{port}"}
        async with httpx2.AsyncClient(headers=headers) as http:
            with anyio.fail_after(WAIT):
                answer = await http.post(f"{url}/mcp", json=INITIALIZE)
    assert answer.status_code == 200, f"{answer.status_code} {answer.text}"


async def test_serve_keeps_an_idle_connection_longer_than_an_sdk_client_reuses_one(tmp_path: Path) -> None:
    """httpx (under the SDK's clients) reuses a connection idle for up to 5 s; a server that closes it at 5 s too
    can close it under a POST the client just sent. The second request, 6 s later, on the same connection,
    is answered: the server had not closed it."""
    config = _config(tmp_path, mcpServers={})
    async with _serving(tmp_path, config) as (_, url, _token):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        request = f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
        with anyio.fail_after(WAIT):
            async with await anyio.connect_tcp(host, int(port)) as connection:
                received = BufferedByteReceiveStream(connection)
                answers: list[bytes] = []
                for pause in (0, 6):
                    await anyio.sleep(pause)  # idle, as a pooled connection is between a client's requests
                    await connection.send(request)
                    head = await received.receive_until(b"\r\n\r\n", 1 << 16)  # EndOfStream: it was closed
                    length = re.search(rb"(?i)content-length: *(\d+)", head)
                    assert length is not None, head
                    await received.receive_exactly(int(length.group(1)))
                    answers.append(head)
    assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers), answers


async def test_the_api_lists_the_profiles(tmp_path: Path) -> None:
    """Issue #13: profiles are editable from the console and the API; the API has no profile endpoint at all."""
    config = _config(tmp_path, profiles={"coding": {"servers": ["basic"]}})
    async with _serving(tmp_path, config) as (_, url, token):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            with anyio.fail_after(WAIT):
                listed = await http.get(f"{url}/api/profiles")
    assert listed.status_code == 200, f"{listed.status_code} {listed.text}"
    assert "coding" in listed.text


async def test_serve_stdio_tells_its_log_which_server_failed_to_start(tmp_path: Path) -> None:
    """Claude Desktop keeps a gateway's stderr in its log; that is the only place a person can learn that a
    configured server is missing from the tools, and why."""
    config = _config(tmp_path, mcpServers={"basic": stdio_server("basic"), "broken": {"command": "tryout-no-such-cmd"}})
    async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as process:
        with anyio.fail_after(WAIT):
            await _initialize_over_stdio(process)
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(WAIT):
            await process.wait()
        said = await _rest(process.stderr)
    assert "broken" in said and "tryout-no-such-cmd" in said, f"stderr: {said!r}"


async def test_the_history_hides_the_gateways_own_bearer_tokens_as_it_hides_the_servers_secrets(
    tmp_path: Path,
) -> None:
    """A client that pastes its token into a call's arguments must not leave it readable in the history."""
    tokens = {"laptop": {"token": "${TRYOUT_GATEWAY_SECRET}"}}
    config = _config(tmp_path, gateway={"tokens": tokens})
    args = ("--config", str(config), "gateway", "--port", "0")
    async with _started(tmp_path, *args, TRYOUT_GATEWAY_SECRET="gw-secret-4711") as process:
        with anyio.fail_after(WAIT):
            port = int((await _stderr_line(_lines(process), r"mcpdeck gateway at http://[^:]+:(\d+)/mcp")).group(1))
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer gw-secret-4711"}) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            with anyio.fail_after(WAIT):
                async with client(transport, Seen()) as c:
                    await c.call_tool("mcp__basic__echo", {"text": "my token is gw-secret-4711"})
        process.terminate()  # as a person stops it: what it queued for the history is written on the way out
        with anyio.fail_after(WAIT):
            assert await process.wait() == 0
    with History(tmp_path / "history.sqlite3") as history:
        arguments = [call.arguments for call in history.tool_calls()]
    assert arguments and "gw-secret-4711" not in json.dumps(arguments), arguments


async def test_serve_stdio_uses_the_servers_of_a_running_serve_instead_of_starting_its_own(tmp_path: Path) -> None:
    """docs/gateway.md: the clients share one set of running servers. With ``serve`` running for the config (the
    other commands attach to it), a client that starts ``serve --stdio`` should not start a second copy of each
    server (whose state, a browser session or a memory graph, would then differ per client)."""
    config = _config(tmp_path)
    async with _serving(tmp_path, config):
        async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as stdio:
            with anyio.fail_after(WAIT):
                await _initialize_over_stdio(stdio)
            own = descendants(stdio.pid)
    assert not own, f"serve --stdio started its own servers beside the running serve: {sorted(own)}"


async def test_the_running_serve_records_a_call_through_serve_stdio_under_the_stdio_client(tmp_path: Path) -> None:
    """docs/gateway.md: every call is in the history with the client it came from. Through an attached
    ``serve --stdio``, the running ``serve`` records the call; it must name Claude Desktop (the stdio client),
    not the bridge that relayed it (the bridge connects to serve as its client: its name, its capabilities)."""
    config = _config(tmp_path)
    async with _serving(tmp_path, config, history=True) as (serve, _, _):
        async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as stdio:
            assert stdio.stdin is not None and stdio.stdout is not None
            with anyio.fail_after(WAIT):
                await _initialize_over_stdio(stdio)
                call = {"name": "mcp__basic__echo", "arguments": {"text": "who am I"}}
                request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
                await stdio.stdin.send(json.dumps(request).encode() + b"\n")
                called = await _answer(BufferedByteReceiveStream(stdio.stdout), 2)
        serve.terminate()  # what it queued for the history is written on the way out
        with anyio.fail_after(WAIT):
            assert await serve.wait() == 0
    assert called["result"]["content"][0]["text"] == "who am I"
    with History(tmp_path / "history.sqlite3") as history:
        callers = [record.caller for record in history.tool_calls()]
    assert callers == ["claude-ai 0.1.0"]  # the bridge presents its client to serve as itself


async def test_serve_stdio_answers_initialize_without_waiting_for_a_hanging_server(tmp_path: Path) -> None:
    """One server that hangs at start (default ``startupTimeout`` 30 s: measured 33 s to the answer) holds
    every client's ``initialize`` that long; clients give up on a silent server. The gateway can answer at
    once and announce the late server's tools with ``list_changed``, which it already sends."""
    # The gateway answers without waiting for its servers. The hanging server is given 30 s: an answer within
    # 15 s cannot have waited for it, and leaves the process time to start on a loaded machine.
    servers = {"basic": stdio_server("basic"), "hang": stdio_server("hang", startupTimeout=30)}
    config = _config(tmp_path, mcpServers=servers)
    async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as process:
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(15):
            answer = await _initialize_over_stdio(process)
    assert answer is not None, "no answer to initialize within 15 s while one server hung at start (for 30 s)"


async def test_serve_stdio_serves_at_once_and_a_call_to_a_server_still_starting_waits_for_it(tmp_path: Path) -> None:
    """Claude Desktop starts ``serve --stdio``, initializes, lists and calls a tool it knew from before, while one
    server is still starting and another never answers: the call waits for its server and runs (it was refused as
    ``Unknown tool``), the late tools are announced with ``list_changed``, and with no rule at all the client's
    own word approves the call (it asks its user; it offers no elicitation). The history says so."""
    fifo = tmp_path / "late.fifo"
    servers = {"basic": stdio_server("basic"), "late": late_server(fifo, "basic"), "hang": stdio_server("hang")}
    config = _config(tmp_path, mcpServers=servers, permissions={})
    args = ["-m", "mcpdeck.cli", "--config", str(config), "serve", "--stdio"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=cli_environment(tmp_path))
    seen, called = Seen(), list[Any]()
    with anyio.fail_after(WAIT):
        async with client(params, seen, elicitation=False, name="claude-ai") as desktop:  # "late" waits on its fifo
            before = {tool.name for tool in (await desktop.list_tools()).tools}

            async def call() -> None:
                called.append(await desktop.call_tool("mcp__late__echo", {"text": "worth the wait"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await release(fifo)
            await seen.arrival("notifications/tools/list_changed").wait()
            after = {tool.name for tool in (await desktop.list_tools()).tools}
    assert "mcp__late__echo" not in before and "mcp__late__echo" in after
    assert [result.content[0].text for result in called] == ["worth the wait"]
    with History(tmp_path / "history.sqlite3") as history:
        records = [(r.name, r.status, r.approved_by, r.caller) for r in history.tool_calls()]
    assert records == [("mcp__late__echo", "ok", "client", "claude-ai 1.0")]


async def test_serve_stdio_through_a_running_serve_lists_and_calls_its_tools_under_their_names(tmp_path: Path) -> None:
    """Attached to the running ``serve``, a stdio client sees the catalog names it would see directly, and
    its calls run on the serve's servers (the serve's gate applies: every call is allowed here)."""
    config = _config(tmp_path)
    async with _serving(tmp_path, config):
        async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as stdio:
            assert stdio.stdin is not None and stdio.stdout is not None
            with anyio.fail_after(WAIT):
                await _initialize_over_stdio(stdio)
                lines = BufferedByteReceiveStream(stdio.stdout)
                await stdio.stdin.send(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n')
                listed = await _answer(lines, 1)
                call = {"name": "mcp__basic__echo", "arguments": {"text": "through two gateways"}}
                request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
                await stdio.stdin.send(json.dumps(request).encode() + b"\n")
                called = await _answer(lines, 2)
            said = (await _lines(stdio).receive_until(b"\n", 1 << 16)).decode()
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert "mcp__basic__echo" in names and "mcp__serve__mcp__basic__echo" not in names
    assert called["result"]["content"][0]["text"] == "through two gateways"
    assert "serving the servers of the mcpdeck serve on port" in said


async def test_serve_stdio_through_a_running_serve_introduces_itself_as_that_serve_does(tmp_path: Path) -> None:
    """Attached, ``serve --stdio`` is a window on the running serve's gateway: it called itself
    ``mcpdeck/serve`` and its instructions named a profile 'serve' that the config does not have."""
    config = _config(tmp_path, profiles={"coding": {"servers": ["basic"]}})
    said: dict[str | None, tuple[Any, Any]] = {}
    async with _serving(tmp_path, config) as (_, url, token):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            for profile in (None, "coding"):
                transport = streamable_http_client(f"{url}/mcp" + (f"/{profile}" if profile else ""), http_client=http)
                with anyio.fail_after(WAIT):
                    async with client(transport, Seen()) as direct:
                        assert direct.server_info is not None
                        said[profile] = (direct.server_info.name, direct.instructions)
        for profile in (None, "coding"):
            chosen = ("--profile", profile) if profile else ()
            args = ("--config", str(config), "serve", "--stdio", *chosen)
            async with _started(tmp_path, *args, MCPDECK_HISTORY="off") as stdio:
                with anyio.fail_after(WAIT):
                    answer = (await _initialize_over_stdio(stdio))["result"]
            assert (answer["serverInfo"]["name"], answer["instructions"]) == said[profile]
    assert said[None][0] == "mcpdeck" and said["coding"][0] == "mcpdeck/coding"
    assert "profile 'coding'" in said["coding"][1] and "'serve'" not in said["coding"][1]


async def test_serve_stdio_through_a_running_serve_gives_its_clients_roots_to_a_server_asking_in_its_call(
    tmp_path: Path,
) -> None:
    """docs/gateway.md#roots: a serve started with --root offers its servers roots; a server that asks during a
    call through an attached ``serve --stdio`` gets the roots of that bridge's client (here a client with roots,
    as VS Code is), not serve's own."""
    config = _config(tmp_path, mcpServers={"features": stdio_server("features", "--legacy")})
    served_root, client_root = tmp_path / "served", tmp_path / "client"
    served_root.mkdir()
    params: dict[str, Any] = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": True}},  # as VS Code says it
        "clientInfo": {"name": "vscode", "version": "1.0"},
    }
    roots = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    async with _serving(tmp_path, config, options=("--root", str(served_root))):
        async with _started(tmp_path, "--config", str(config), "serve", "--stdio", MCPDECK_HISTORY="off") as stdio:
            assert stdio.stdin is not None and stdio.stdout is not None
            lines = BufferedByteReceiveStream(stdio.stdout)
            with anyio.fail_after(20):
                await stdio.stdin.send(json.dumps(roots).encode() + b"\n")
                await lines.receive_until(b"\n", 1 << 20)
                await stdio.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
                call: dict[str, Any] = {"name": "mcp__features__list_roots", "arguments": {}}
                request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
                await stdio.stdin.send(json.dumps(request).encode() + b"\n")
                while True:  # the client answers what it is asked (roots/list) until the call's answer comes
                    message = json.loads(await lines.receive_until(b"\n", 1 << 20))
                    if message.get("method") == "roots/list":
                        listed = {"roots": [{"uri": client_root.as_uri(), "name": "client"}]}
                        answer = {"jsonrpc": "2.0", "id": message["id"], "result": listed}
                        await stdio.stdin.send(json.dumps(answer).encode() + b"\n")
                    elif message.get("id") == 1:
                        break
    text = message["result"]["content"][0]["text"]
    assert json.loads(text)["roots"] == [{"uri": client_root.as_uri(), "name": "client"}], text


@pytest.mark.parametrize("command", ["gateway", "serve"])
async def test_approval_ask_on_the_command_line_has_the_gateway_ask_about_calls_no_rule_covers(
    tmp_path: Path, command: str
) -> None:
    """``--approval ask`` (over the config's ``gateway.approval``): a client that cannot be asked is refused a
    call no rule covers, saying why; ``--approval client`` (the default) lets its own word approve it."""
    config = _config(tmp_path, permissions={}, gateway={"approval": "client"})
    if command == "gateway":
        args = ("--config", str(config), "gateway", "--port", "0", "--approval", "ask")
        started = _started(tmp_path, *args, MCPDECK_GATEWAY_TOKEN="tryout-token", MCPDECK_HISTORY="off")
    else:
        started = _started(tmp_path, "--config", str(config), "serve", "--port", "0", "--approval", "ask")
    async with started as process:
        with anyio.fail_after(WAIT):
            if command == "gateway":
                found = await _stderr_line(_lines(process), r"mcpdeck gateway at (http://[^/]+)/mcp")
                url, token = found.group(1), "tryout-token"
            else:
                assert process.stdout is not None
                lines = BufferedByteReceiveStream(process.stdout)
                while (serving := _serve_url((await lines.receive_until(b"\n", 1 << 16)).decode())) is None:
                    pass
                state = read_state(config)  # the token is in the state file (the console's link has a login code)
                assert state is not None
                url, token = serving, state.token
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            transport = streamable_http_client(f"{url}/mcp", http_client=http)
            with anyio.fail_after(WAIT):
                async with client(transport, Seen(), elicitation=False, name="cursor") as c:
                    refused = await c.call_tool("mcp__basic__echo", {"text": "may I?"})
    text = refused.content[0]
    assert refused.is_error and isinstance(text, types.TextContent), refused
    assert 'gateway.approval is "ask"' in text.text and "cursor 1.0 cannot be asked" in text.text, text.text


async def test_serve_stdio_through_a_running_serve_passes_on_who_its_client_is_and_what_it_cannot_answer(
    tmp_path: Path,
) -> None:
    """Claude Desktop (no elicitation) starts ``serve --stdio`` while ``serve`` runs. A tool with an ``ask`` rule was
    refused as "refused by mcpdeck 0.1.0 (it answered decline)" and recorded as denied by the user: the bridge
    answered for a client that cannot be asked. A tool of a server that failed to start was ``Unknown tool``
    through the bridge while serve's own /mcp says why. Now serve sees the client itself (its name, no
    elicitation) and says what it says to that client directly; the bridge passes unknown names on."""
    servers = {"basic": stdio_server("basic"), "broken": {"command": str(tmp_path / "no-such-program")}}
    rules = {"allow": ["mcp__basic__echo"], "ask": ["mcp__basic__add"]}
    config = _config(tmp_path, mcpServers=servers, permissions=rules)
    args = ["-m", "mcpdeck.cli", "--config", str(config), "serve", "--stdio"]
    env = cli_environment(tmp_path, MCPDECK_HISTORY="off")
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
    async with _serving(tmp_path, config, history=True) as (serve, _, _):
        with anyio.fail_after(WAIT):
            async with client(params, Seen(), elicitation=False, name="claude-ai") as desktop:
                echoed = await desktop.call_tool("mcp__basic__echo", {"text": "hello"})
                asked = await desktop.call_tool("mcp__basic__add", {"a": 1, "b": 2})
                broken = await desktop.call_tool("mcp__broken__anything", {})
        serve.terminate()  # what it queued for the history is written on the way out
        with anyio.fail_after(WAIT):
            assert await serve.wait() == 0
    assert not echoed.is_error
    assert asked.is_error and "claude-ai 1.0 cannot be asked (it does not offer elicitation)" in str(asked.content)
    assert broken.is_error and "server 'broken' failed to start" in str(broken.content), broken.content
    with History(tmp_path / "history.sqlite3") as history:
        records = {r.name: (r.status, r.approved_by, r.caller) for r in history.tool_calls()}
    assert records["mcp__basic__echo"] == ("ok", "rule", "claude-ai 1.0")
    assert records["mcp__basic__add"][1] != "denied-by-user" and records["mcp__basic__add"][2] == "claude-ai 1.0"
