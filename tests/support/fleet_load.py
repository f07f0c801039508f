"""The load of issue 29's fleet check, for its test (``tests/server/test_fleet.py``) and its bench
(``bench/fleet.py``): SDK clients calling ``echo`` through a balancer again and again, each call with a text of its
own and what the client saw of it (``Call``: when, which replica answered, the error), half asking for 2026-07-28,
half on the handshake; and a session whose long calls run on one replica, the one to kill.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcpdeck.store import History
from tests.support.balancer import REPLICA_HEADER, haproxy, until_states
from tests.support.prometheus_text import scraped
from tests.support.replicas import BALANCER, TOKEN, Replica, fleet

__all__ = [
    "AFTER_KILL",
    "BEFORE_KILL",
    "CLIENTS",
    "LONG_CALLS",
    "RECOVERY",
    "REPLICAS",
    "Call",
    "Killed",
    "Load",
    "Seen",
    "calling",
    "client",
    "killed_mid_load",
    "long_calls",
]

REPLICAS = ("r1", "r2", "r3")
CLIENTS = 12
"""Clients calling at once: the even ones ask for 2026-07-28, the odd ones use the handshake."""
LONG_CALLS = 2
"""Long calls running on the doomed replica when it is killed (they are in flight, and must fail)."""
BEFORE_KILL = 3
"""Calls every replica has answered before the kill."""
AFTER_KILL = 3
"""Calls every client has had answered after the kill before the load stops."""
RECOVERY = 30.0
"""Seconds after the kill within which every client must have had ``AFTER_KILL`` calls answered: a bound on a
hang (HAProxy's and the SDK's timeouts are 60 s), not the issue's 5 s, which bench/fleet.py measures."""


@dataclass
class Call:
    """One call a client made, as the client saw it."""

    client: int
    text: str
    started: float
    ended: float = 0.0
    replica: str | None = None
    """The replica that answered (HAProxy's header), when an answer came."""
    session: str = ""
    """The handshake-era session it was sent on ("" for 2026-07-28)."""
    error: str | None = None


@dataclass
class Load:
    calls: list[Call] = field(default_factory=list[Call])
    killed_at: float | None = None
    dead_at: float | None = None
    """When the killed replica's process had ended (``kill -9`` takes a moment: until then it takes requests)."""
    doomed: str = ""
    stop: anyio.Event = field(default_factory=anyio.Event)
    eras: dict[int, set[str]] = field(default_factory=dict[int, set[str]])
    sessions: dict[int, list[str]] = field(default_factory=dict[int, list[str]])
    looked: int = 0
    unseen: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    stats: int = 0
    """HAProxy's stats port (``tests.support.balancer.server_states``), once it runs."""
    """(call, replica) for each answered call another replica did not list when asked right after."""

    def answered(self) -> list[Call]:
        return [call for call in self.calls if call.error is None and call.ended]


@dataclass
class Seen:
    """What one client's HTTP answers said: the replica that answered each call, and the session id."""

    replicas: dict[str, str] = field(default_factory=dict[str, str])
    session: str = ""


@asynccontextmanager
async def client(port: int, mode: str) -> AsyncGenerator[tuple[Client, Seen]]:
    """An SDK client through HAProxy (by the balancer's name); ``mode``: ``"auto"`` asks for 2026-07-28
    (``server/discover``) and falls back to the handshake, ``"legacy"`` is the handshake."""
    seen = Seen()

    async def note(response: httpx2.Response) -> None:
        seen.session = response.headers.get("mcp-session-id", seen.session)
        if response.request.method != "POST":
            return
        with contextlib.suppress(ValueError):
            message = json.loads(response.request.content)
            if isinstance(message, dict) and message.get("method") == "tools/call":  # pyright: ignore[reportUnknownMemberType]
                text = str(message["params"]["arguments"].get("text"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
                seen.replicas[text] = response.headers.get(REPLICA_HEADER, "?")

    headers = {"Authorization": f"Bearer {TOKEN}", "Host": BALANCER}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [note]}) as http,
        Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=mode) as mcp,
    ):
        yield mcp, seen


async def calling(port: int, index: int, load: Load) -> None:
    """Call ``echo`` with a text of its own again and again until the load stops. A handshake-era client whose
    session fails starts a new one; a 2026-07-28 client goes on as it is (it has no session)."""
    mode = "auto" if index % 2 == 0 else "legacy"
    number = 0
    call: Call | None = None
    while not load.stop.is_set():
        try:
            async with client(port, mode) as (mcp, seen):
                load.eras.setdefault(index, set()).add(mcp.protocol_version)
                load.sessions.setdefault(index, []).append(seen.session)
                while not load.stop.is_set():
                    call = Call(index, f"c{index}-{number}", time.monotonic(), session=seen.session)
                    number += 1
                    load.calls.append(call)
                    try:
                        result = await mcp.call_tool("mcp__basic__echo", {"text": call.text})
                    except Exception as error:
                        call.ended, call.error = time.monotonic(), repr(error)
                        if mcp.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
                            break  # its session is gone with its replica: a new one
                        continue
                    call.ended, call.replica = time.monotonic(), seen.replicas.get(call.text)
                    if result.is_error:
                        call.error = f"tool error: {result.content}"
                    await anyio.lowlevel.checkpoint()
        except Exception as error:  # leaving a session its replica took with it may fail too
            if call is not None and not call.ended:  # a call the client never heard the end of failed with it
                call.ended, call.error = time.monotonic(), f"client closed: {error!r}"


async def long_calls(port: int, load: Load, running: anyio.Event) -> None:
    """A handshake-era session whose ``LONG_CALLS`` calls of ``sleep`` run until their replica is killed; its
    replica is the doomed one."""
    async with client(port, "legacy") as (mcp, seen):
        load.doomed = seen.session.split(".")[0]
        running.set()

        async def one(n: int) -> None:
            call = Call(-1, f"long-{n}", time.monotonic(), session=seen.session)
            load.calls.append(call)
            try:
                await mcp.call_tool("mcp__basic__sleep", {"seconds": 120})
                call.ended = time.monotonic()
            except Exception as error:
                call.ended, call.error = time.monotonic(), repr(error)

        async with anyio.create_task_group() as tg:
            for n in range(LONG_CALLS):
                tg.start_soon(one, n)


@dataclass
class Killed:
    """What ``killed_mid_load`` saw: the load, a survivor's ``/api/history/calls`` answer (every call of the
    ``basic`` server), each survivor's ``/metrics`` parsed, and the replicas (their processes are gone)."""

    load: Load
    listed: httpx2.Response
    metrics: dict[str, Any]
    replicas: dict[str, Replica]


async def killed_mid_load(
    folder: Path, config: Path, store: str, watch: Callable[[dict[str, Replica], Load], Coroutine[Any, Any, None]]
) -> Killed:
    """Three replicas of ``config`` on ``store`` behind HAProxy, ``CLIENTS`` clients calling through it, the long
    calls' replica killed once every replica has answered calls; ``watch(replicas, load)`` runs beside the clients
    until the load stops. Ends once the long calls have failed, HAProxy sees the dead replica down and a survivor
    has marked its calls interrupted: what the clients saw, the history as a survivor lists it, and each survivor's
    ``/metrics``."""
    load = Load()
    flags = ("--store", store, "--allowed-host", BALANCER)
    with History(store) as reader:
        async with fleet(folder, config, REPLICAS, *flags) as replicas:
            async with haproxy(folder, {name: one.state["port"] for name, one in replicas.items()}) as (port, stats):
                await until_states(stats, dict.fromkeys(REPLICAS, "UP"))
                load.stats = stats
                async with anyio.create_task_group() as outer:
                    long_running = anyio.Event()
                    outer.start_soon(long_calls, port, load, long_running)
                    await long_running.wait()
                    async with anyio.create_task_group() as tg:  # ends when the clients have stopped
                        for index in range(CLIENTS):
                            tg.start_soon(calling, port, index, load)
                        tg.start_soon(watch, replicas, load)
                        await _kill_mid_load(reader, replicas, load)
                    # The long calls' client learns that their replica died (its SSE streams broke, a resumption
                    # gets 404): an error, never a hang; it may come after the other clients' recovery.
                    with anyio.fail_after(RECOVERY):
                        while not all(call.ended for call in load.calls if call.client == -1):  # noqa: ASYNC110
                            await anyio.sleep(0.05)
                    outer.cancel_scope.cancel()  # the long calls' session: its replica is dead
                await until_states(stats, {name: "DOWN" if name == load.doomed else "UP" for name in REPLICAS})
            survivors = {name: one for name, one in replicas.items() if name != load.doomed}
            with anyio.fail_after(30):  # a survivor's reaper marks the dead replica's running calls
                while await anyio.to_thread.run_sync(  # noqa: ASYNC110
                    lambda: reader.count_tool_calls(status="running", replica=load.doomed) > 0
                ):
                    await anyio.sleep(0.05)
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
                first = next(iter(survivors.values()))
                listed = await http.get(f"{first.url}/api/history/calls", params={"server": "basic", "limit": 10_000})
                metrics = {
                    name: scraped((await http.get(f"{one.url}/metrics")).text) for name, one in survivors.items()
                }
    return Killed(load, listed, metrics, replicas)


async def _kill_mid_load(reader: History, replicas: dict[str, Replica], load: Load) -> None:
    """Once every replica has answered calls and the long calls run: kill the doomed replica, wait until every
    client has had calls answered again, and stop the load (each client ends after the call it is making)."""

    def loaded() -> bool:
        counts = Counter(call.replica for call in load.answered())
        return all(counts[name] >= BEFORE_KILL for name in REPLICAS)

    with anyio.fail_after(30):  # the load reaches every replica
        while not loaded():  # noqa: ASYNC110
            await anyio.sleep(0.05)
    with anyio.fail_after(30):  # the long calls run on their replica: recorded as running
        while await anyio.to_thread.run_sync(  # noqa: ASYNC110
            lambda: reader.count_tool_calls(status="running", replica=load.doomed) < LONG_CALLS
        ):
            await anyio.sleep(0.05)
    load.killed_at = time.monotonic()
    os.kill(replicas[load.doomed].process.pid, signal.SIGKILL)
    with anyio.fail_after(10):
        await replicas[load.doomed].process.wait()
    load.dead_at = time.monotonic()

    def recovered() -> bool:
        assert load.killed_at is not None
        after = Counter(call.client for call in load.answered() if call.started > load.killed_at)
        return all(after[index] >= AFTER_KILL for index in range(CLIENTS))

    with anyio.fail_after(RECOVERY):
        while not recovered():  # noqa: ASYNC110
            await anyio.sleep(0.05)
    load.stop.set()
