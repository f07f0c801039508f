"""Keeping servers alive: startup timeouts, lost processes, retries, health pings, expired HTTP sessions."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpdeck import Host, RetryPolicy, ServerError, ServerState
from mcpdeck.errors import ServerCrashedError, ServerUnavailableError
from mcpdeck.events import Event, ResourceUpdated, ServerStatusChanged
from tests.helpers import ROOT, WAIT, HandshakeOnly, next_event, serve_asgi, stdio_server
from tests.servers.features import RESOURCES, build_server

pytestmark = pytest.mark.anyio

QUICK = RetryPolicy(attempts=3, initial=0.05, jitter=0)
"""Reconnect at once (tests must not wait for a real backoff)."""

ONCE = """\
import os, runpy, sys
marker = sys.argv.pop(1)
if os.path.exists(marker):
    sys.exit(f"refusing to start again: {marker} exists")
open(marker, "w").close()
runpy.run_module("tests.servers.features", run_name="__main__")
"""
"""A features server that starts once: while ``marker`` exists it exits at once, with a reason."""


def changed_to(server: str, state: str) -> Callable[[ServerStatusChanged], bool]:
    return lambda event: event.server == server and event.state == state


def current_pid(host: Host, server: str) -> int:
    pid = host.servers[server].pid
    assert pid is not None, f"{server} has no pid"
    return pid


async def pid_from_server(host: Host, server: str) -> int:
    return int((await host.call_tool(f"mcp__{server}__pid")).text())


# ----- starting ---------------------------------------------------------------------------------


async def test_a_server_that_never_answers_fails_at_its_startup_timeout_and_the_others_connect(
    tmp_path: Path,
) -> None:
    servers = {"hung": stdio_server("hang", startupTimeout=1), "features": build_server()}
    async with Host(servers, log_dir=tmp_path / "logs") as host:
        hung, features = host.servers["hung"], host.servers["features"]
        assert hung.state is ServerState.FAILED  # the host opened once every server had settled
        assert (await host.call_tool("mcp__features__echo", {"text": "fine"})).text() == "fine"
        with pytest.raises(ServerUnavailableError, match="within 1 s"):
            await host.call_tool("mcp__hung__anything")
    assert features.state is ServerState.CONNECTED
    assert hung.state is ServerState.FAILED
    assert hung.error is not None
    assert "did not finish initializing within 1 s" in hung.error
    assert "hang: listening, but I will never answer" in hung.error


# ----- losing the process ---------------------------------------------------------------------------


async def test_a_killed_server_is_reconnected_and_a_call_made_meanwhile_waits_for_it(tmp_path: Path) -> None:
    patient = RetryPolicy(attempts=3, initial=0.3, jitter=0)
    # Started directly: the host's pid for it must be the server's own.
    server = stdio_server("features", direct=True)
    async with Host({"f": server}, log_dir=tmp_path / "logs", retry=patient) as host:
        tools = [t.name for t in host.catalog.for_server("f")]
        first = current_pid(host, "f")
        assert await pid_from_server(host, "f") == first
        seen: list[Event] = []
        host.events.on(seen.append)
        async with host.events.subscribe() as events:
            os.kill(first, signal.SIGKILL)
            await next_event(events, ServerStatusChanged, changed_to("f", "reconnecting"))
        assert host.servers["f"].state is ServerState.RECONNECTING  # backing off for 0.3 s
        with anyio.fail_after(WAIT):
            result = await host.call_tool("mcp__f__echo", {"text": "patient"}, timeout=10)
        assert result.text() == "patient"
        changes = [(e.previous, e.state) for e in seen if isinstance(e, ServerStatusChanged) and e.server == "f"]
        assert changes == [("connected", "reconnecting"), ("reconnecting", "connected")]  # answered when back

        status = host.servers["f"]
        assert (status.state, status.error) == (ServerState.CONNECTED, None)
        second = current_pid(host, "f")
        assert second != first
        assert await pid_from_server(host, "f") == second
        assert [t.name for t in host.catalog.for_server("f")] == tools
        assert [r.uri for r in host.resources] == RESOURCES
        assert status.log_path is not None and status.log_path.read_text().count("mcpdeck starting f") == 2


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "handshake-era"])
async def test_resource_subscriptions_survive_a_reconnect(tmp_path: Path, legacy: bool) -> None:
    spec = stdio_server("features", "--legacy") if legacy else stdio_server("features")
    async with Host({"f": spec}, log_dir=tmp_path / "logs", retry=QUICK) as host:
        with anyio.fail_after(WAIT):
            await host.subscribe_resource("note://first", server="f")
        async with host.events.subscribe() as events:
            os.kill(current_pid(host, "f"), signal.SIGKILL)
            await next_event(events, ServerStatusChanged, changed_to("f", "connected"))
            with anyio.fail_after(WAIT):
                await host.call_tool("mcp__f__touch", {"uri": "note://first"})
            updated = await next_event(events, ResourceUpdated)
        assert (updated.server, updated.uri) == ("f", "note://first")


async def test_a_failed_health_check_is_the_reason_given_while_reconnecting(tmp_path: Path) -> None:
    pinged = RetryPolicy(attempts=3, initial=0.5, jitter=0, health_interval=0.2)
    async with Host({"old": stdio_server("features", "--legacy")}, log_dir=tmp_path / "logs", retry=pinged) as host:
        reconnecting: ServerStatusChanged | None = None
        reason: str | None = None
        async with host.events.subscribe() as events, anyio.create_task_group() as tg:

            async def freeze() -> None:
                with contextlib.suppress(ServerCrashedError):
                    await host.call_tool("mcp__old__freeze", {"seconds": 1.0}, timeout=10)

            tg.start_soon(freeze)
            reconnecting = await next_event(events, ServerStatusChanged, changed_to("old", "reconnecting"))
            reason = host.servers["old"].error
            await next_event(events, ServerStatusChanged, changed_to("old", "connected"))
        assert reconnecting is not None and reconnecting.previous == "connected"
        assert reason == "health check failed: did not answer a ping in time"


async def test_a_server_that_keeps_failing_to_restart_is_failed_after_its_retries(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    server = {"command": sys.executable, "args": ["-c", ONCE, str(marker)], "cwd": str(ROOT)}
    twice = RetryPolicy(attempts=2, initial=0.05, jitter=0)
    async with Host({"once": server}, log_dir=tmp_path / "logs", retry=twice) as host:
        assert host.servers["once"].state is ServerState.CONNECTED
        async with host.events.subscribe() as events:
            os.kill(current_pid(host, "once"), signal.SIGKILL)
            failed = await next_event(events, ServerStatusChanged, changed_to("once", "failed"))
        assert failed.previous == "reconnecting"
        assert failed.error is not None and "refusing to start again" in failed.error
        status = host.servers["once"]
        assert status.state is ServerState.FAILED and status.error == failed.error
        assert status.log_path is not None
        assert status.log_path.read_text().count("mcpdeck starting once") == 3  # the first start and 2 retries
        assert host.catalog.for_server("once") == []
        with pytest.raises(ServerUnavailableError, match="refusing to start again"):
            await host.call_tool("mcp__once__echo", {"text": "x"})

        marker.unlink()  # the cause is gone: a manual reconnect brings it back
        with anyio.fail_after(WAIT):
            status = await host.reconnect("once")
        assert (status.state, status.error) == (ServerState.CONNECTED, None)
        assert (await host.call_tool("mcp__once__echo", {"text": "again"})).text() == "again"


# ----- health pings ---------------------------------------------------------------------------------


async def test_a_legacy_server_that_stops_answering_pings_is_reconnected(tmp_path: Path) -> None:
    pinged = RetryPolicy(attempts=3, initial=0.05, jitter=0, health_interval=0.3)
    async with Host({"old": stdio_server("features", "--legacy")}, log_dir=tmp_path / "logs", retry=pinged) as host:
        status = host.servers["old"]
        assert status.protocol_version is not None and status.protocol_version < "2026"
        first = current_pid(host, "old")
        async with host.events.subscribe() as events, anyio.create_task_group() as tg:

            async def freeze() -> None:
                # The server blocks for 1.5 s and answers nothing; the call is lost with its session.
                # (Its process then exits by itself: its stdin is closed, and the host ends its group.)
                with contextlib.suppress(ServerCrashedError):
                    await host.call_tool("mcp__old__freeze", {"seconds": 1.5}, timeout=10)

            tg.start_soon(freeze)
            await next_event(events, ServerStatusChanged, changed_to("old", "reconnecting"))
            await next_event(events, ServerStatusChanged, changed_to("old", "connected"))
        assert current_pid(host, "old") != first
        assert (await host.call_tool("mcp__old__echo", {"text": "alive"})).text() == "alive"
        assert status.log_path is not None
        assert "health check failed: did not answer a ping in time" in status.log_path.read_text()


async def test_a_server_busy_answering_calls_is_not_pinged_nor_lost_while_its_answers_come(tmp_path: Path) -> None:
    """A server that answers the host's calls is alive: it is not pinged, so a ping it would be slow to answer
    (here: one it never answers) does not end a session that is working."""
    pinged = RetryPolicy(attempts=3, initial=0.05, jitter=0, health_interval=0.2)
    server = {"command": sys.executable, "args": ["-m", "tests.servers.handshake_era", "--no-ping"], "cwd": str(ROOT)}
    async with Host({"old": server}, log_dir=tmp_path / "logs", retry=pinged) as host:
        first = current_pid(host, "old")
        changes: list[Event] = []
        off = host.events.on(changes.append, ServerStatusChanged)
        with anyio.fail_after(WAIT):
            # Calls one after the other for ten health intervals: each check finds answers since the last.
            until = anyio.current_time() + 10 * pinged.health_interval
            while anyio.current_time() < until:
                assert (await host.call_tool("mcp__old__echo", {"text": "busy"})).text() == "busy"
        off()
        assert changes == [] and current_pid(host, "old") == first
        log = host.servers["old"].log_path
        assert log is not None and "health check failed" not in log.read_text()

        # Quiet now: the next check pings, the ping is never answered, and the session is lost as before.
        async with host.events.subscribe() as events:
            await next_event(events, ServerStatusChanged, changed_to("old", "reconnecting"))
        assert "health check failed: did not answer a ping in time" in log.read_text()


# ----- expired HTTP sessions --------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["deleted", "bare-404"])
async def test_an_expired_http_session_is_replaced_and_the_call_goes_through(tmp_path: Path, how: str) -> None:
    app = HandshakeOnly(build_server().streamable_http_app())
    async with serve_asgi(app) as base:
        url = f"{base}/mcp"
        async with Host({"web": {"type": "http", "url": url}}, log_dir=tmp_path / "logs", retry=QUICK) as host:
            status = host.servers["web"]
            assert status.state is ServerState.CONNECTED and status.protocol_version == "2025-11-25"
            [session] = app.sessions
            if how == "deleted":  # the SDK's server forgets it, and answers 404 with a JSON-RPC error
                async with httpx2.AsyncClient() as client:
                    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                    assert (await client.delete(url, headers=headers)).status_code == 200
            else:  # a server that answers a bare 404
                app.forgotten.add(session)
            outcome: str | ServerError
            try:
                with anyio.fail_after(WAIT):
                    outcome = (await host.call_tool("mcp__web__echo", {"text": "still here"}, timeout=10)).text()
            except ServerError as error:
                outcome = error
            state = host.servers["web"].state
    assert outcome == "still here", f"the call failed instead of going to a new session: {outcome}"
    assert len(app.sessions) == 2 and app.sessions[0] == session  # a new session was opened
    assert state is ServerState.CONNECTED


# ----- reconnecting by hand ------------------------------------------------------------------------------


async def test_reconnect_brings_back_a_stopped_server_and_cuts_a_backoff_short(tmp_path: Path) -> None:
    slow = RetryPolicy(attempts=3, initial=30, jitter=0)  # a backoff no test waits out
    async with Host({"f": stdio_server("features")}, log_dir=tmp_path / "logs", retry=slow) as host:
        pids = [current_pid(host, "f")]
        stopped = await host.disconnect("f")
        assert stopped.state is ServerState.STOPPED
        with pytest.raises(ServerUnavailableError, match="is disconnected"):
            await host.call_tool("mcp__f__echo", {"text": "x"})
        with anyio.fail_after(WAIT):
            status = await host.reconnect("f")
        assert status.state is ServerState.CONNECTED
        pids.append(current_pid(host, "f"))

        async with host.events.subscribe() as events:
            os.kill(pids[-1], signal.SIGKILL)
            await next_event(events, ServerStatusChanged, changed_to("f", "reconnecting"))
        with anyio.fail_after(WAIT):
            status = await host.reconnect("f")  # cuts the 30 s backoff short
        assert status.state is ServerState.CONNECTED
        pids.append(current_pid(host, "f"))
        assert len(set(pids)) == 3
        assert (await host.call_tool("mcp__f__echo", {"text": "done"})).text() == "done"
