"""Cancellation and roots through the gateway, with the features test server (handshake era) behind it."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client._transport import TransportStreams
from mcp.client.session import ClientRequestContext
from mcp.shared.message import SessionMessage

from mcpdeck import Host
from mcpdeck.gateway import Gateway
from mcpdeck.status import ServerState
from mcpdeck.traffic import Traffic
from tests.gateway.support import Seen, client, handshake_era, served_gateway
from tests.helpers import NODE_BIN, WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio

FEATURES = {"features": stdio_server("features", "--legacy")}


async def test_a_call_the_client_cancels_is_cancelled_on_the_server(log_dir: Path) -> None:
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with served_gateway(log_dir, FEATURES) as served, client(served.url(), Seen()) as via:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    await via.call_tool("mcp__features__wait_forever", {"key": "k1"}, progress_callback=on_progress)

                tg.start_soon(wait)
                await started.wait()  # the server is inside the call
                tg.cancel_scope.cancel()
            answer = await via.call_tool("mcp__features__was_cancelled", {"key": "k1", "within": 5})
    assert answer.structured_content == {"result": True}


async def test_a_server_asking_for_roots_mid_call_gets_the_callers_roots(log_dir: Path) -> None:
    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///client/root", "name": "root"})])

    # Servers are offered roots only where the host was asked to offer some (here: the working
    # folder); a server asking mid-call then gets the calling client's roots, else the host's.
    async with served_gateway(log_dir, FEATURES, roots=[Path.cwd()]) as served:
        async with client(served.url(), Seen(), list_roots_callback=roots) as with_roots:
            with anyio.fail_after(WAIT):
                theirs = await with_roots.call_tool("mcp__features__list_roots", {})
        async with client(served.url(), Seen()) as without:
            with anyio.fail_after(WAIT):
                hosts = await without.call_tool("mcp__features__list_roots", {})
    assert isinstance(theirs.content[0], types.TextContent) and isinstance(hosts.content[0], types.TextContent)
    assert json.loads(theirs.content[0].text)["roots"] == [{"uri": "file:///client/root", "name": "root"}]
    host_roots = json.loads(hosts.content[0].text)["roots"]
    assert host_roots and host_roots[0]["uri"] == Path.cwd().as_uri()  # the host's own roots


async def test_a_clients_roots_change_reaches_the_servers_running_its_calls(log_dir: Path) -> None:
    """Over HTTP a server sees the roots of the client whose call it runs: when that client's roots
    change (``notifications/roots/list_changed``), the servers running its calls are told."""

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[])

    started = anyio.Event()
    told: list[object] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with served_gateway(log_dir, FEATURES, roots=[Path.cwd()]) as served:
        async with client(served.url(), Seen(), list_roots_callback=roots) as via:
            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as tg:

                    async def wait() -> None:
                        await via.call_tool("mcp__features__wait_forever", {"key": "r"}, progress_callback=on_progress)

                    tg.start_soon(wait)
                    await started.wait()  # the server runs a call of this client
                    with handshake_era():
                        await via.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
                    counted = await via.call_tool("mcp__features__roots_changed_count", {"at_least": 1})
                    told.append(counted.structured_content)
                    tg.cancel_scope.cancel()
    assert told == [{"result": 1}]


async def test_a_url_elicitation_reaches_the_client_as_a_url(log_dir: Path) -> None:
    seen = Seen()
    async with served_gateway(log_dir, FEATURES) as served, client(served.url(), seen) as via:
        with anyio.fail_after(WAIT):
            answer = await via.call_tool("mcp__features__ask_url", {})
    [asked] = seen.elicitations
    assert isinstance(asked, types.ElicitRequestURLParams)
    assert (asked.url, asked.elicitation_id, asked.message) == (
        "https://example.com/connect",
        "connect-1",
        "Connect your account",
    )
    assert isinstance(answer.content[0], types.TextContent) and answer.content[0].text == "accept"


async def test_a_server_added_to_the_host_shows_up_for_connected_clients(log_dir: Path) -> None:
    seen = Seen()
    async with served_gateway(log_dir, FEATURES) as served, client(served.url(), seen) as via:
        with anyio.fail_after(WAIT):
            before = {tool.name for tool in (await via.list_tools()).tools}
            await served.host.add_server("basic", stdio_server("basic"), save=False)
            await seen.arrival("notifications/tools/list_changed").wait()
            after = {tool.name for tool in (await via.list_tools()).tools}
    assert not any(name.startswith("mcp__basic__") for name in before)
    assert "mcp__basic__echo" in after


async def test_servers_behind_a_gateway_are_offered_roots_only_where_there_are_some(log_dir: Path) -> None:
    """As ``mcpdeck serve`` runs it: the gateway is open before the servers connect, the host has no roots.
    server-everything lists ``get-roots-list`` only to a client that offers roots: it must not, here (nor
    when a client with roots comes over HTTP: a face with several clients does not lend one client's roots
    to the servers they share)."""

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///client/root", "name": "root"})])

    servers = {"everything": {"command": str(NODE_BIN / "mcp-server-everything")}}
    async with Host(servers, log_dir=log_dir, wait=False) as host, Gateway(host) as gateway:
        async with serve_asgi(gateway.asgi()) as base:
            with anyio.fail_after(WAIT):
                status = await host.wait_settled("everything")
                async with client(f"{base}/mcp", Seen(), list_roots_callback=roots) as with_roots:
                    listed = {tool.name for tool in (await with_roots.list_tools()).tools}
    assert status.state is ServerState.CONNECTED, status.error
    assert "mcp__everything__echo" in listed
    assert "mcp__everything__get-roots-list" not in listed


@asynccontextmanager
async def _sole_face(gateway: Gateway) -> AsyncGenerator[TransportStreams]:
    """A client's end of the gateway's one-client face (``run_streams``, what ``run_stdio`` serves), in memory.

    Plain memory streams, as a pipe is: the SDK's own in-memory pair would run the gateway's handlers in the
    client's context."""
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    async with to_server, server_reads, to_client, client_reads, anyio.create_task_group() as tg:
        tg.start_soon(gateway.run_streams, server_reads, to_client)
        try:
            yield client_reads, to_server
        finally:
            tg.cancel_scope.cancel()


async def test_a_server_denied_as_a_whole_learns_nothing_of_the_stdio_clients_roots(log_dir: Path) -> None:
    """The one client's roots (and its ``roots/list_changed``) went to every server of its profile, a server a
    ``deny`` covers as a whole too. Two server-everything behind a one-client face: the allowed one is offered
    the client's roots, asks for them and is told of their change; the denied one is never offered them,
    never asks, and is told nothing."""
    folders = [log_dir / "first"]
    asks: list[int] = []
    asked = anyio.Event()

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        asks.append(len(folders))
        asked.set()
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name) for f in folders])  # pyright: ignore[reportArgumentType]

    everything = {"command": str(NODE_BIN / "mcp-server-everything")}
    rules = {"allow": ["mcp__*"], "deny": ["mcp__closed"]}
    traffic = Traffic()
    servers = {"open": everything, "closed": everything}
    async with Host(servers, log_dir=log_dir, permissions=rules, traffic=traffic) as host, Gateway(host) as gateway:
        seen = Seen()
        with anyio.fail_after(WAIT):
            async with client(_sole_face(gateway), seen, list_roots_callback=roots) as via:
                while "mcp__open__get-roots-list" not in {t.name for t in (await via.list_tools()).tools}:
                    await seen.arrival("notifications/tools/list_changed").wait()  # reconnected, offered roots
                    seen.arrived.clear()
                await host.wait_settled("closed")
                while 1 not in asks:
                    asked = anyio.Event()
                    await asked.wait()
                folders[:] = [log_dir / "second", log_dir / "third"]
                asked = anyio.Event()
                with handshake_era():
                    await via.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
                while 2 not in asks:
                    await asked.wait()
                    asked = anyio.Event()
    to_closed = [m for m in traffic.recent() if m.server == "closed"]
    opened = [m.body for m in to_closed if m.direction == "out" and m.method == "initialize" and m.kind == "request"]
    assert opened and all('"roots"' not in body for body in opened)
    assert not [m for m in to_closed if m.method in ("roots/list", "notifications/roots/list_changed")]
    told = [m for m in traffic.recent() if m.server == "open" and m.method == "notifications/roots/list_changed"]
    assert told  # the allowed server was
