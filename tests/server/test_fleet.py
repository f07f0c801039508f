"""The fleet as issue 29 judges it: three ``mcpdeck serve`` replicas on one config and one store behind a real
HAProxy, twelve SDK clients calling through it at once (half asking for protocol 2026-07-28, half on the
handshake), and one replica killed with -9 mid-load. On a real PostgreSQL and on SQLite (``store_url``).

What must hold: every call a client got an answer for is in the history exactly once, with the replica that
answered it; the only errors are those of calls in flight on the dead replica (and, for a handshake-era
session of that replica, the 404 that tells its client to start again); every client makes progress again
at its next try; a call answered through one replica is at once in another's ``/api/history/calls``;
each surviving replica's ``/metrics`` counts exactly the calls it answered (a killed process's counters die
with it: docs/fleet.md says why that is the honest reading).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncGenerator
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
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcpdeck.store import History
from tests.helpers import stdio_server
from tests.support.balancer import REPLICA_HEADER, haproxy, until_states
from tests.support.prometheus_text import scraped
from tests.support.replicas import BALANCER, TOKEN, Replica, fleet

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
LIMIT = 150.0
"""Seconds the whole test may take (three serve processes start slowly on a busy 2-core machine)."""


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
    doomed: str = ""
    stop: anyio.Event = field(default_factory=anyio.Event)
    eras: dict[int, set[str]] = field(default_factory=dict[int, set[str]])
    sessions: dict[int, list[str]] = field(default_factory=dict[int, list[str]])
    looked: int = 0
    unseen: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
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
    while not load.stop.is_set():
        with contextlib.suppress(Exception):  # leaving a session its replica took with it may fail too
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


async def looking(replicas: dict[str, Replica], load: Load) -> None:
    """Now and then, look for the newest answered call on a replica that did not answer it."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        while not load.stop.is_set():
            await anyio.sleep(0.3)
            answered = [call for call in load.answered() if call.replica in replicas]
            if not answered:
                continue
            call = answered[-1]
            other = next(name for name in replicas if name not in (call.replica, load.doomed))
            listed = await http.get(
                f"{replicas[other].url}/api/history/calls", params={"replica": call.replica, "limit": 200}
            )
            load.looked += 1
            if not any(c["arguments"].get("text") == call.text for c in listed.json()["toolCalls"]):
                load.unseen.append((call.text, other))


def test_twelve_clients_through_haproxy_lose_nothing_answered_when_one_of_three_replicas_is_killed(
    tmp_path: Path, store_url: str
) -> None:
    """Three processes starting and a load on each take longer than ``TEST_LIMIT`` on a busy machine: the test
    bounds itself (``LIMIT``)."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"allow": ["mcp__basic"]}})
    )

    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await _killed_mid_load(tmp_path, config, store_url)

    anyio.run(bounded)


async def _killed_mid_load(tmp_path: Path, config: Path, store: str) -> None:
    load = Load()
    flags = ("--store", store, "--allowed-host", BALANCER)
    with History(store) as reader:
        async with fleet(tmp_path, config, REPLICAS, *flags) as replicas:
            async with haproxy(tmp_path, {name: one.state["port"] for name, one in replicas.items()}) as (port, stats):
                await until_states(stats, dict.fromkeys(REPLICAS, "UP"))
                async with anyio.create_task_group() as outer:
                    long_running = anyio.Event()
                    outer.start_soon(long_calls, port, load, long_running)
                    await long_running.wait()
                    async with anyio.create_task_group() as tg:  # ends when the clients have stopped
                        for index in range(CLIENTS):
                            tg.start_soon(calling, port, index, load)
                        tg.start_soon(looking, replicas, load)
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
    _judge(load, listed, metrics)


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

    def recovered() -> bool:
        assert load.killed_at is not None
        after = Counter(call.client for call in load.answered() if call.started > load.killed_at)
        return all(after[index] >= AFTER_KILL for index in range(CLIENTS))

    with anyio.fail_after(RECOVERY):
        while not recovered():  # noqa: ASYNC110
            await anyio.sleep(0.05)
    load.stop.set()


def _judge(load: Load, listed: httpx2.Response, metrics: dict[str, Any]) -> None:
    assert listed.status_code == 200, listed.text
    rows: list[dict[str, Any]] = listed.json()["toolCalls"]
    by_text: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_text.setdefault(str(row["arguments"].get("text", "")), []).append(row)
    killed_at = load.killed_at
    assert killed_at is not None

    # Every answered call is in the history exactly once, with the replica that answered it.
    answered = load.answered()
    wrong = {
        call.text: [(row["replica"], row["status"]) for row in by_text.get(call.text, [])]
        for call in answered
        if [(row["replica"], row["status"]) for row in by_text.get(call.text, [])] != [(call.replica, "ok")]
    }
    assert wrong == {}, f"answered, but not in the history once with its replica: {wrong}"

    # The only errors: calls in flight on the dead replica when it died, and the 404 ("Session not found") a
    # handshake-era session of that replica gets after; neither ran anywhere else.
    failed = [call for call in load.calls if call.error is not None]
    for call in failed:
        assert call.error is not None
        ran = [(row["replica"], row["status"]) for row in by_text.get(call.text, [])]
        if "Session not found" in call.error:
            assert call.session.startswith(f"{load.doomed}."), call
            # Either it was sent after the kill and ran nowhere, or it was in flight on the dead replica when it
            # died (it may have run and been committed there, its answer lost with the process), and the client
            # learnt of its session's end from its next request's 404.
            in_flight = call.started <= killed_at <= call.ended
            assert ran == [] or (in_flight and all(replica == load.doomed for replica, _ in ran)), call
        else:
            assert call.started <= killed_at <= call.ended, f"failed, not in flight at the kill: {call}"
            assert all(replica == load.doomed for replica, _ in ran), call
    longs = [call for call in load.calls if call.client == -1]
    assert len(longs) == LONG_CALLS and all(call.error for call in longs), longs
    interrupted = [row for row in rows if row["status"] == "interrupted"]
    assert {row["replica"] for row in interrupted} == {load.doomed}
    assert [row["tool"] for row in interrupted].count("sleep") == LONG_CALLS

    # Every client makes progress again at its next try: of the calls it began after the kill, only the first
    # may fail (the 404 of a handshake-era session of the dead replica) and the rest are answered; it never
    # waits for a timeout. How soon is measured by bench/fleet.py against the 5 s (on 2 busy cores a
    # call alone can take seconds, so a bound here would test the machine); `recovered` bounds it at RECOVERY.
    for index in range(CLIENTS):
        after = [call for call in load.calls if call.client == index and call.started >= killed_at]
        failures = [n for n, call in enumerate(after) if call.error is not None]
        assert failures in ([], [0]) and len(after) > len(failures), [(c.text, c.error) for c in after]
    # The eras: a handshake client is on the handshake. A client that asks for 2026-07-28 gets it once serve's
    # gateway offers that era (not yet in every build: it falls back to the handshake then); when it has it,
    # it has no session, so the kill never costs it a 404.
    for index, eras in load.eras.items():
        if index % 2:
            assert eras <= set(HANDSHAKE_PROTOCOL_VERSIONS), (index, eras)
        else:
            assert eras <= {*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS}, (index, eras)
            if eras <= set(MODERN_PROTOCOL_VERSIONS):
                assert load.sessions[index] == [""] * len(load.sessions[index]), (index, load.sessions[index])
                assert not [c for c in failed if c.client == index and "Session not found" in (c.error or "")]

    # Each survivor's /metrics counts exactly the calls it answered (the dead one's counters died with it).
    for name, families in metrics.items():
        counted = sum(
            sample.value
            for sample in families["mcpdeck_tool_calls"]
            if sample.name == "mcpdeck_tool_calls_total" and sample.labels["tool"] == "echo"
        )
        by_them = sum(call.replica == name for call in answered)
        assert counted == by_them, (name, counted, by_them)
    # Each call looked for on another replica right after its answer was listed there at once (the issue asks
    # for within 2 s: the call is committed to the store before its answer is sent).
    assert load.looked > 0 and load.unseen == [], load.unseen
