"""Three ``mcpdeck serve`` processes on one config and one store, called by SDK clients over their gateways,
one killed with -9 mid-load: every call a client got an answer for is in the history exactly once with its
replica, and the dead replica's calls in flight are marked ``interrupted`` by a survivor. On SQLite and on a
real PostgreSQL (``store_url``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcpdeck.store import History
from tests.helpers import ROOT, cli_environment, descendants, kill, stdio_server

REPLICAS = ("r1", "r2", "r3")
DOOMED = "r2"
WORKERS = 2
CALLS = 12
"""Calls each worker makes (fewer on the replica that is killed)."""
BEFORE_KILL = 4
"""Calls every worker has had answered before the kill."""
IN_FLIGHT = 2
"""Long calls running on the doomed replica when it is killed."""
LIMIT = 90.0
"""Seconds the whole test may take."""


@dataclass
class Replica:
    name: str
    process: Process
    url: str
    token: str


@dataclass
class Load:
    acknowledged: dict[str, str] = field(default_factory=dict[str, str])
    """Each answered call's text, and the replica that answered it."""
    answered: Counter[str] = field(default_factory=Counter[str])
    enough: anyio.Event = field(default_factory=anyio.Event)
    failures: list[str] = field(default_factory=list[str])


@asynccontextmanager
async def serving(folder: Path, config: Path, store: str, name: str) -> AsyncGenerator[Replica]:
    """``mcpdeck serve --port 0 --store STORE --replica-id NAME``, the replicas' state folder shared."""
    home = folder / name
    env = cli_environment(home, MCPDECK_STATE_DIR=str(folder / "state"))
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "serve", "--port", "0"]
    process = await anyio.open_process([*command, "--store", store, "--replica-id", name], cwd=ROOT, env=env)
    try:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        while not (await lines.receive_until(b"\n", 1 << 16)).startswith(b"mcpdeck serves"):
            pass
        (state,) = (folder / "state").glob(f"*.{name}.json")
        found = json.loads(state.read_text())
        yield Replica(name, process, found["url"], found["token"])
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


@asynccontextmanager
async def connected(replica: Replica) -> AsyncGenerator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {replica.token}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{replica.url}/mcp", http_client=http)) as client:
            # its server may still be starting (serve answers before they settle): list again until it is there
            while "mcp__basic__echo" not in {tool.name for tool in (await client.list_tools()).tools}:  # noqa: ASYNC110
                await anyio.sleep(0.05)
            yield client


async def work(replica: Replica, worker: int, load: Load) -> None:
    """Call ``echo`` with a text of its own, again and again; note each answer. The doomed replica's
    workers stop at the first failure: their replica was killed."""
    try:
        async with connected(replica) as client:
            for n in range(CALLS):
                text = f"{replica.name}-{worker}-{n}"
                result = await client.call_tool("mcp__basic__echo", {"text": text})
                assert not result.is_error, result
                load.acknowledged[text] = replica.name
                load.answered[replica.name] += 1
                if all(load.answered[name] >= BEFORE_KILL * WORKERS for name in REPLICAS):
                    load.enough.set()
    except Exception as error:
        if replica.name != DOOMED:
            load.failures.append(f"{replica.name}-{worker}: {error!r}")


async def long_calls(replica: Replica) -> None:
    """Calls that are still running when their replica is killed (and so fail)."""

    async def one(client: Client) -> None:
        with contextlib.suppress(Exception):
            await client.call_tool("mcp__basic__sleep", {"seconds": 60})

    with contextlib.suppress(Exception):
        async with connected(replica) as client, anyio.create_task_group() as tg:
            for _ in range(IN_FLIGHT):
                tg.start_soon(one, client)


async def until(check: Any, what: str) -> None:
    """Wait for ``check()`` (run in a thread: it reads the store) to be true, at most 15 s."""
    with anyio.fail_after(15):  # looking again at the store, for what the other processes write into it
        while not await anyio.to_thread.run_sync(check):  # noqa: ASYNC110
            await anyio.sleep(0.05)


def test_three_replicas_one_killed_lose_no_answered_call_and_its_running_calls_are_interrupted(
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


async def _killed_mid_load(tmp_path: Path, config: Path, store_url: str) -> None:
    load = Load()
    with History(store_url) as reader:
        async with (
            serving(tmp_path, config, store_url, "r1") as r1,
            serving(tmp_path, config, store_url, "r2") as r2,
            serving(tmp_path, config, store_url, "r3") as r3,
        ):
            replicas = {"r1": r1, "r2": r2, "r3": r3}
            async with anyio.create_task_group() as tg:
                for replica in replicas.values():
                    for worker in range(WORKERS):
                        tg.start_soon(work, replica, worker, load)
                tg.start_soon(long_calls, r2)
                with anyio.fail_after(20):
                    await load.enough.wait()
                await until(lambda: reader.count_tool_calls(status="running", replica=DOOMED) >= IN_FLIGHT, "running")
                os.kill(r2.process.pid, signal.SIGKILL)  # mid-load: its workers' calls are in flight
            assert load.failures == []
            await until(lambda: reader.count_tool_calls(status="running", replica=DOOMED) == 0, "reaped")
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {r3.token}"}) as http:
                listed = await http.get(f"{r3.url}/api/history/calls", params={"server": "basic", "limit": 10_000})
    assert listed.status_code == 200, listed.text
    calls: list[dict[str, Any]] = listed.json()["toolCalls"]
    echoed = Counter((call["arguments"].get("text"), call["replica"]) for call in calls if call["tool"] == "echo")
    missing = {text: name for text, name in load.acknowledged.items() if echoed[(text, name)] != 1}
    assert missing == {}, f"answered but not in the history exactly once: {missing}"
    assert {call["replica"] for call in calls} == set(REPLICAS)
    interrupted = [call for call in calls if call["status"] == "interrupted"]  # its long calls, and any echo in flight
    assert {call["replica"] for call in interrupted} == {DOOMED}
    assert [call["tool"] for call in interrupted].count("sleep") == IN_FLIGHT
    assert all(call["status"] == "ok" for call in calls if call["arguments"].get("text") in load.acknowledged)
    assert load.answered[DOOMED] >= BEFORE_KILL * WORKERS and len(load.acknowledged) > len(REPLICAS) * BEFORE_KILL
