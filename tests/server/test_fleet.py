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

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from tests.helpers import stdio_server
from tests.support.fleet_load import CLIENTS, LONG_CALLS, Load, killed_mid_load
from tests.support.replicas import TOKEN, Replica

LIMIT = 150.0
"""Seconds the whole test may take (three serve processes start slowly on a busy 2-core machine)."""


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
            killed = await killed_mid_load(tmp_path, config, store_url, looking)
        _judge(killed.load, killed.listed, killed.metrics)

    anyio.run(bounded)


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
    # handshake-era session of that replica gets after; neither ran anywhere else. A kill -9 takes a moment
    # (`dead_at`: the process had ended): a request that reached the replica meanwhile was in flight there.
    dead_at = load.dead_at
    assert dead_at is not None
    failed = [call for call in load.calls if call.error is not None]
    for call in failed:
        assert call.error is not None
        ran = [(row["replica"], row["status"]) for row in by_text.get(call.text, [])]
        if "Session not found" in call.error:
            assert call.session.startswith(f"{load.doomed}."), call
            # Either it was sent after the kill and ran nowhere, or it was in flight on the dead replica when it
            # died (it may have run and been committed there, its answer lost with the process), and the client
            # learnt of its session's end from its next request's 404.
            in_flight = call.started <= dead_at and killed_at <= call.ended
            assert ran == [] or (in_flight and all(replica == load.doomed for replica, _ in ran)), call
        else:
            assert call.started <= dead_at and killed_at <= call.ended, f"failed, not in flight at the kill: {call}"
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
