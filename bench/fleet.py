"""The fleet's throughput: calls through HAProxy to 1, 2 and 3 ``serve`` replicas on PostgreSQL, against one
``serve`` on SQLite, in one run; then the durable commit's cost per call on each store (``bench.store``).

    python -m bench.fleet                       # 16 clients, 2 rounds of 480 calls per case, then bench.store
    python -m bench.fleet --clients 16 --calls 480 --rounds 2 --store-calls 400

Every ``serve`` runs ``bench/servers/line.py`` (near-free) for one config, started at once before the first
round (``tests/support/replicas.py``); PostgreSQL 15 is started for the run, durable as in production
(``tests/postgres.py``: ``fsync`` on). Cases:

- ``sqlite``: one ``serve`` on its default store (SQLite), the clients connected to it directly;
- ``pg-1``, ``pg-2``, ``pg-3``: replicas r1..rN on PostgreSQL behind a HAProxy of their own (the
  configuration docs/fleet.md shows), the clients connected to HAProxy.

Each case: ``--clients`` handshake-era SDK sessions (HAProxy spreads them round-robin; each stays on its
replica) call ``mcp__line__echo`` one call after the other, ``--calls`` in all per round, each call timed.
Rounds take the cases in turn, so drift hits all alike. The clients run in this process, as in the judged
check: on 2 cores they share the CPU with the replicas, so more replicas than cores cannot add calls/s; the
figures say what one machine carries, not how far the fleet scales.

Then ``bench.store`` runs as it does alone (``--clients`` tasks on one ``Host``, history off, SQLite,
PostgreSQL): the p50 each store adds to a call (goal, issue #29: at most 1 ms at 16 clients).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.postgres import running_postgres
from tests.support.balancer import haproxy, until_states
from tests.support.replicas import BALANCER, TOKEN, fleet, ready, replica

from bench import store
from bench.stats import median, percentile

ROOT = Path(__file__).resolve().parent.parent
START = 300.0
"""Seconds each ``serve`` gets to start: three at once on PostgreSQL took 39 s at load 18 on 2 cores."""
CASES = ("sqlite", "pg-1", "pg-2", "pg-3")
REPLICAS = ("r1", "r2", "r3")


@asynccontextmanager
async def sessions(url: str, clients: int) -> AsyncGenerator[list[Client]]:
    """``clients`` handshake-era SDK sessions at ``url`` (by the balancer's name), opened one after the other so
    HAProxy's round-robin spreads them."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Host": BALANCER}
    async with AsyncExitStack() as stack:
        opened: list[Client] = []
        for _ in range(clients):
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=120))
            transport = streamable_http_client(f"{url}/mcp", http_client=http)
            opened.append(await stack.enter_async_context(Client(transport, mode="legacy")))
        yield opened


async def one_round(clients: list[Client], calls: int) -> tuple[list[float], float]:
    """``calls`` calls shared by the sessions, each one call after the other: the latencies and the wall time."""
    latencies: list[float] = []
    each = calls // len(clients)

    async def calling(mcp: Client) -> None:
        for _ in range(each):
            began = time.perf_counter()
            result = await mcp.call_tool("mcp__line__echo", {"text": "hi"})
            latencies.append(time.perf_counter() - began)
            assert not result.is_error, result

    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for mcp in clients:
            tg.start_soon(calling, mcp)
    return latencies, time.perf_counter() - began


async def measure(folder: Path, clients: int, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    config = folder / "mcp.json"
    line = {"command": sys.executable, "args": ["-S", str(ROOT / "bench" / "servers" / "line.py")]}
    config.write_text(json.dumps({"mcpServers": {"line": line}, "permissions": {"allow": ["mcp__line"]}}))
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    walls = dict.fromkeys(CASES, 0.0)
    (folder / "alone").mkdir()
    (folder / "fleet").mkdir()
    with running_postgres(durable=True) as postgres, postgres.database() as url:
        flags = ("--allowed-host", BALANCER)
        async with replica(folder / "alone", config, "alone", *flags, "--replica-id", "alone", start=START) as alone:
            await ready(alone)  # then the three: four processes starting at once on 2 busy cores take too long
            async with fleet(folder / "fleet", config, REPLICAS, "--store", url, *flags, start=START) as replicas:
                async with AsyncExitStack() as stack:
                    urls = {"sqlite": alone.url}
                    for n in (1, 2, 3):
                        ports = {name: replicas[name].state["port"] for name in REPLICAS[:n]}
                        (folder / f"haproxy-{n}").mkdir()
                        port, stats = await stack.enter_async_context(haproxy(folder / f"haproxy-{n}", ports))
                        await until_states(stats, dict.fromkeys(ports, "UP"))
                        urls[f"pg-{n}"] = f"http://127.0.0.1:{port}"
                    opened = {case: await stack.enter_async_context(sessions(urls[case], clients)) for case in CASES}
                    for case in CASES:  # warm up
                        await one_round(opened[case], clients * 4)
                    for _ in range(rounds):
                        for case in CASES:
                            latencies, wall = await one_round(opened[case], calls)
                            samples[case] += latencies
                            walls[case] += wall
    return {
        case: {
            "p50": median(samples[case]) or 0.0,
            "p99": percentile(samples[case], 99) or 0.0,
            "calls_per_s": len(samples[case]) / walls[case],
        }
        for case in CASES
    }


def render(figures: dict[str, dict[str, float]], clients: int, calls: int, rounds: int) -> str:
    base = figures["sqlite"]["calls_per_s"]
    lines = [
        f"{clients} handshake-era sessions calling at once, {rounds} rounds of {calls} calls per case "
        f"(`mcp__line__echo`); load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| Case | p50 per call | p99 per call | calls/s | calls/s against `sqlite` |",
        "|---|---|---|---|---|",
    ]
    for case, got in figures.items():
        lines.append(
            f"| `{case}` | {got['p50'] * 1000:.1f} ms | {got['p99'] * 1000:.1f} ms | {got['calls_per_s']:.0f} | "
            f"{got['calls_per_s'] / base:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=480, help="calls per case per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--store-calls", type=int, default=400, help="bench.store's calls per case per round")
    parser.add_argument("--store-rounds", type=int, default=3)
    options = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-fleet-") as folder:
        figures = anyio.run(measure, Path(folder), options.clients, options.calls, options.rounds)
    print(render(figures, options.clients, options.calls, options.rounds), flush=True)
    with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-store-") as folder:
        stored = anyio.run(store.measure, Path(folder), options.clients, options.store_calls, options.store_rounds)
    print()
    print(store.render(stored, options.clients, options.store_calls, options.store_rounds))
    with contextlib.suppress(OSError):
        (ROOT / "bench" / ".results").mkdir(exist_ok=True)
        (ROOT / "bench" / ".results" / "fleet.json").write_text(json.dumps({"fleet": figures, "store": stored}))


if __name__ == "__main__":
    main()
